/**
 * Resuming a job that failed for good from its retained checkpoint
 * (`env.resumeFrom`): at the same and at another parallelism the committed
 * output equals a failure-free run, key by key; a checkpoint holding state of
 * a uid the new job lacks is refused unless `allowNonRestoredState` is set.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, ResumeError, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
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
  sumsUid: string;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(20, { directory: options.directory })
    .setRestartStrategy(RestartStrategies.noRestart())
    .setParallelism(options.parallelism);
  addRunningSums(env, { ...options, items: items(), batchSize: 50 });
  return env;
}

/** The failure-free running sums, per key, in order. */
const expectedByKey = () => expectedRunningSums(KEYS, COUNT);

/** Runs until record 200 fails the job for good; returns its job id. */
async function failForGood(directory: string, sink: CollectingSink<Numbered>) {
  const env = build({ directory, sink, failAt: 200, parallelism: 2, sumsUid: "sums" });
  const error = await env.execute("resumable").then(
    () => assert.fail("the first run should fail"),
    (e: unknown) => e,
  );
  const hint = resumeHint(error);
  assert.ok(sink.committed().length >= 100, "the checkpoint after record 100 was committed");
  return hint;
}

for (const parallelism of [2, 3, 1]) {
  Deno.test(`a job resumed at parallelism ${parallelism} commits the failure-free output, key by key`, async () => {
    await withTempDir(async (directory) => {
      const sink = new CollectingSink<Numbered>();
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
    const sink = new CollectingSink<Numbered>();
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
