/**
 * Resuming a job that failed for good from its retained checkpoint
 * (`env.resumeFrom`): at the same and at another parallelism the committed
 * output equals a failure-free run, key by key; a checkpoint holding state of
 * a uid the new job lacks is refused unless `allowNonRestoredState` is set.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  ResumeError,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
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

/** Throws at record `failAt` on the first attempt of the first run only. */
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
  sumsUid: string;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(20, { directory: options.directory })
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
    .reduce((acc, r) => [r[0], acc[1] + r[1]]).uid(options.sumsUid)
    .sinkTo(options.sink).uid("committed");
  return env;
}

/** The failure-free running sums, per key, in order. */
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

/** Runs until record 200 fails the job for good; returns its job id. */
async function failForGood(directory: string, sink: CollectingSink<[string, number]>) {
  const env = build({ directory, sink, failAt: 200, parallelism: 2, sumsUid: "sums" });
  const error = await env.execute("resumable").then(
    () => assert.fail("the first run should fail"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof JobFailedError, String(error));
  const match = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(error.message);
  assert.ok(match, `the error says how to resume: ${error.message}`);
  assert.ok(sink.committed().length >= 100, "the checkpoint after record 100 was committed");
  return { jobId: match[1]!, checkpointId: Number(match[2]) };
}

for (const parallelism of [2, 3, 1]) {
  Deno.test(`a job resumed at parallelism ${parallelism} commits the failure-free output, key by key`, async () => {
    await withTempDir(async (directory) => {
      const sink = new CollectingSink<[string, number]>();
      const { jobId, checkpointId } = await failForGood(directory, sink);
      const env = build({ directory, sink, failAt: 0, parallelism, sumsUid: "sums" });
      env.resumeFrom({ jobId, checkpointId });
      const result = await env.execute("resumable");
      assert.notEqual(result.jobId, jobId, "a resumed run gets a new job id");
      assert.deepEqual(byKey(sink.committed()), expectedByKey());
      const ids = sink.committedTransactions();
      assert.equal(new Set(ids).size, ids.length, "no transaction committed twice");
      const kept = await Deno.readDir(`${directory}/${jobId}`)[Symbol.asyncIterator]().next();
      assert.ok(!kept.done, "the checkpoint resumed from is kept");
    });
  });
}

Deno.test("resuming with a renamed stateful operator fails unless allowNonRestoredState is set", async () => {
  await withTempDir(async (directory) => {
    const sink = new CollectingSink<[string, number]>();
    const { jobId } = await failForGood(directory, sink);
    const before = sink.committed().length;
    const renamed = build({ directory, sink, failAt: 0, parallelism: 2, sumsUid: "sums-v2" });
    renamed.resumeFrom({ jobId });
    await assert.rejects(
      () => renamed.execute("resumable"),
      (e: unknown) =>
        e instanceof ResumeError && /operator uids \[sums\]/.test(e.message) &&
        /allowNonRestoredState/.test(e.message),
    );
    assert.equal(sink.committed().length, before, "nothing ran");
    const allowed = build({ directory, sink, failAt: 0, parallelism: 2, sumsUid: "sums-v2" });
    allowed.resumeFrom({ jobId, allowNonRestoredState: true });
    await allowed.execute("resumable");
    const after = byKey(sink.committed().slice(before));
    // The sums started again from zero after the checkpoint: the dropped state is gone.
    const firstA = after.get("a")![0]!;
    assert.ok(firstA < expectedByKey().get("a")![20]!, `sums restarted from zero (${firstA})`);
  });
});
