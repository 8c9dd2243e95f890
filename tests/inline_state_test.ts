/**
 * Small state inline in the checkpoint metadata (Flink's
 * `ByteStreamStateHandle` below `state.storage.fs.memory-threshold`):
 * a keyed running sum fails for good after a checkpoint and is resumed from
 * it, at the same and at another parallelism, with the default threshold
 * (every blob of this small job inline: the checkpoint directory holds only
 * `_metadata`) and with threshold 0 (every blob in storage, none inline).
 * The committed output equals a failure-free run, key by key, either way.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { withTempDir } from "./_job_kit.ts";

const KEYS = ["a", "b", "c", "d", "e"];
const COUNT = 300;

/** `[key, n]` for n = 1..COUNT, holding after record 100 until a checkpoint covers it. */
function items() {
  const list: ([string, number] | ReturnType<typeof TestSource.awaitCheckpoint>)[] = [];
  for (let n = 1; n <= COUNT; n++) {
    list.push([KEYS[n % KEYS.length]!, n]);
    if (n === 100) list.push(TestSource.awaitCheckpoint());
  }
  return list;
}

/** Throws at record `failAt` on the first attempt. */
class FailAt {
  readonly failAt: number;
  private attempt = 0;
  constructor(failAt: number) {
    this.failAt = failAt;
  }
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  map(r: [string, number]): [string, number] {
    if (r[1] === this.failAt && this.attempt === 0) throw new Error(`induced failure at ${r[1]}`);
    return r;
  }
}

function build(options: {
  directory: string;
  sink: CollectingSink<[string, number]>;
  failAt: number;
  parallelism: number;
  memoryThresholdBytes: number | undefined;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(20, {
    directory: options.directory,
    ...(options.memoryThresholdBytes === undefined
      ? {}
      : { memoryThresholdBytes: options.memoryThresholdBytes }),
  })
    .setRestartStrategy(RestartStrategies.noRestart())
    .setParallelism(options.parallelism);
  env.fromSource(
    TestSource.of<[string, number]>(items(), { batchSize: 50 }),
    WatermarkStrategy.noWatermarks(),
    "numbers",
  )
    .uid("numbers").setParallelism(1)
    .map(new FailAt(options.failAt)).setParallelism(1)
    .keyBy((r) => r[0])
    .reduce((acc, r) => [r[0], acc[1] + r[1]]).uid("sums")
    .sinkTo(options.sink).uid("committed");
  return env;
}

function expectedByKey(): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const sums = new Map<string, number>();
  for (let n = 1; n <= COUNT; n++) {
    const key = KEYS[n % KEYS.length]!;
    const sum = (sums.get(key) ?? 0) + n;
    sums.set(key, sum);
    (out.get(key) ?? out.set(key, []).get(key)!).push(sum);
  }
  return out;
}

function byKey(records: readonly [string, number][]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [key, sum] of records) (out.get(key) ?? out.set(key, []).get(key)!).push(sum);
  return out;
}

const cases = [
  { name: "the default threshold (all state inline)", memoryThresholdBytes: undefined },
  { name: "threshold 0 (all state in storage)", memoryThresholdBytes: 0 },
];

for (const c of cases) {
  for (const parallelism of [2, 3]) {
    Deno.test(`a job resumed at parallelism ${parallelism} with ${c.name} commits the failure-free output`, async () => {
      await withTempDir(async (directory) => {
        const sink = new CollectingSink<[string, number]>();
        const first = build({ directory, sink, failAt: 200, parallelism: 2, ...c });
        const error = await first.execute("inline").then(
          () => assert.fail("the first run should fail"),
          (e: unknown) => e,
        );
        assert.ok(error instanceof JobFailedError, String(error));
        const match = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(
          error.message,
        );
        assert.ok(match, `the error says how to resume: ${error.message}`);
        const [jobId, checkpointId] = [match[1]!, Number(match[2])];

        // What the retained checkpoint holds.
        const storage = new LocalDirectoryCheckpointStorage({ directory });
        const meta = await storage.readMetadata(jobId, checkpointId);
        const handles = meta.vertices.flatMap((v) => v.subtasks.flatMap((s) => s.handles));
        assert.ok(handles.some((h) => h.kind === "keyed" && h.uid === "sums"), "keyed state");
        assert.ok(handles.some((h) => h.kind === "source-splits"), "source splits");
        const files: string[] = [];
        for await (const e of Deno.readDir(storage.checkpointDirectory(jobId, checkpointId))) {
          files.push(e.name);
        }
        if (c.memoryThresholdBytes === 0) {
          assert.ok(handles.every((h) => h.inline === undefined), "nothing inline");
          assert.equal(files.length, handles.length + 1, `one file per handle: ${files}`);
        } else {
          assert.ok(handles.every((h) => h.inline?.length === h.bytes), "all inline");
          assert.deepEqual(files, ["_metadata"]);
        }

        const resumed = build({ directory, sink, failAt: 0, parallelism, ...c });
        resumed.resumeFrom({ jobId, checkpointId });
        await resumed.execute("inline");
        assert.deepEqual(byKey(sink.committed()), expectedByKey());
        const ids = sink.committedTransactions();
        assert.equal(new Set(ids).size, ids.length, "no transaction committed twice");
      });
    });
  }
}

Deno.test("enableCheckpointing refuses a memoryThresholdBytes that is not an integer in 0..524288, naming it", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  for (const bad of [-1, 1.5, 524_289, Infinity, NaN]) {
    assert.throws(() => env.enableCheckpointing(100, { memoryThresholdBytes: bad }), {
      name: "RangeError",
      message:
        `memoryThresholdBytes must be an integer in 0..524288 (bytes): current value is ${bad}`,
    });
  }
  assert.throws(
    // @ts-expect-error: a string is the wrong type
    () => env.enableCheckpointing(100, { memoryThresholdBytes: "20k" }),
    TypeError,
  );
  env.enableCheckpointing(100, { memoryThresholdBytes: 0 });
  env.enableCheckpointing(100, { memoryThresholdBytes: 524_288 });
});
