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
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { withTempDir } from "./_job_kit.ts";
import {
  addRunningSums,
  byKey,
  expectedRunningSums,
  type Numbered,
  numbered,
  resumeHint,
} from "./_running_sum_kit.ts";

const KEYS = ["a", "b", "c", "d", "e"];
const COUNT = 300;

/** `[key, n]` for n = 1..COUNT, holding after record 100 until a checkpoint covers it. */
const items = () =>
  numbered(KEYS, COUNT, (n) => n === 100 ? TestSource.awaitCheckpoint() : undefined);

function build(options: {
  directory: string;
  sink: CollectingSink<Numbered>;
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
  addRunningSums(env, { ...options, items: items(), batchSize: 50 });
  return env;
}

/** The failure-free running sums, per key, in order. */
const expectedByKey = () => expectedRunningSums(KEYS, COUNT);

const cases = [
  { name: "the default threshold (all state inline)", memoryThresholdBytes: undefined },
  { name: "threshold 0 (all state in storage)", memoryThresholdBytes: 0 },
];

for (const c of cases) {
  for (const parallelism of [2, 3]) {
    Deno.test(`a job resumed at parallelism ${parallelism} with ${c.name} commits the failure-free output`, async () => {
      await withTempDir(async (directory) => {
        const sink = new CollectingSink<Numbered>();
        const first = build({ directory, sink, failAt: 200, parallelism: 2, ...c });
        const error = await first.execute("inline").then(
          () => assert.fail("the first run should fail"),
          (e: unknown) => e,
        );
        const { jobId, checkpointId } = resumeHint(error);

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
