/**
 * Incremental checkpoints (the changelog backend, FLIP-158) against
 * retention, in local mode on a checkpoint directory, on the heap and the
 * SQLite backend:
 *
 * - a job cancelled while it checkpoints and materializes often keeps its
 *   retained checkpoint whole: every shared blob the retained metadata
 *   refers to is still in `<jobId>/shared/`, and the cancel's background
 *   sweep leaves no other there;
 * - resuming it (`resumeFrom({ jobId })`, NO_CLAIM) commits, with what the
 *   first run committed, exactly the failure-free running sums, also when
 *   the resumed run fails over once after its own checkpoints;
 * - the resumed run never deletes a blob the cancelled job's retained
 *   checkpoints refer to (NO_CLAIM), and leaves nothing of its own behind
 *   (`retainOnFinish` false).
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/local_directory_storage.ts";
import { withTempDir } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";
import {
  addRunningSums,
  byKey,
  expectedRunningSums,
  type Numbered,
  numbered,
} from "./_running_sum_kit.ts";

const KEYS = ["a", "b", "c", "d", "e", "f", "g"];
const COUNT = 600;

/** `[key, n]` for n = 1..COUNT, a pause of 10 ms every 5 records (~1.2 s in all). */
const items = () => numbered(KEYS, COUNT, (n) => n % 5 === 0 ? TestSource.pause(10) : undefined);

function build(options: {
  directory: string;
  sink: CollectingSink<Numbered>;
  backend: "heap" | "sqlite";
  failAt: number;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(30, {
    directory: options.directory,
    incrementalCheckpoints: true,
    materializationIntervalMs: 60,
    retainedCheckpoints: 2,
  })
    .setRestartStrategy(RestartStrategies.fixedDelay(3, 10))
    .setParallelism(2);
  if (options.backend === "sqlite") env.setStateBackend("sqlite");
  addRunningSums(env, { ...options, items: items(), batchSize: 5 });
  return env;
}

/** The failure-free running sums, per key, in order. */
const expectedByKey = () => expectedRunningSums(KEYS, COUNT);

/** Every string under a `path` key in `value`. */
function handlePaths(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) { for (const v of value) handlePaths(v, into); }
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      // An inline handle's bytes are in the metadata: no object of its own.
      if (k === "path" && typeof v === "string") {
        if (!("inline" in value) || (value as { inline?: unknown }).inline === undefined) {
          into.add(v);
        }
      } else handlePaths(v, into);
    }
  }
  return into;
}

/** The job's shared blobs, and those its completed checkpoints refer to. */
async function sharedOf(directory: string, jobId: string) {
  const storage = new LocalDirectoryCheckpointStorage({ directory });
  const completed = await storage.listCompleted(jobId);
  const referenced = new Set<string>();
  for (const id of completed) handlePaths(await storage.readMetadata(jobId, id), referenced);
  const shared = await storage.listShared(jobId);
  return {
    completed,
    shared: new Set(shared),
    referencedShared: [...referenced].filter((p) => p.startsWith("shared/")),
  };
}

async function entries(path: string): Promise<string[]> {
  try {
    return await Array.fromAsync(Deno.readDir(path), (e) => e.name);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

for (const backend of ["heap", "sqlite"] as const) {
  Deno.test(`${backend} + incremental: a cancelled job's retained checkpoint keeps its shared blobs and resumes exactly once, through a failover`, async () => {
    await withTempDir(async (directory) => {
      const sink = new CollectingSink<Numbered>();
      const client = await build({ directory, sink, backend, failAt: 0 }).executeAsync(
        "incremental-cancel",
      );
      const jobId = client.jobId;
      // Cancel once a third is committed (several materializations and changelog segments since).
      await waitUntil(() => sink.committed().length >= COUNT / 3, {
        timeoutMs: 60_000,
        pollMs: 5,
        missing: () => `${sink.committed().length} of ${COUNT / 3} records committed`,
      });
      await client.cancel();
      await client.result().then(() => assert.fail("a cancelled job's result rejects"), () => {});
      const committedFirst = sink.committed().length;
      assert.ok(committedFirst < COUNT, `the first run was cancelled before its end`);

      // The cancel ends retention in the background: discards retention queued before it (the
      // job keeps 2 checkpoints) and the sweep of what no retained checkpoint refers to.
      await waitUntil(async () => {
        const now = await sharedOf(directory, jobId);
        return now.completed.length <= 2 &&
          [...now.shared].every((p) => now.referencedShared.includes(p));
      }, {
        timeoutMs: 30_000,
        pollMs: 50,
        missing: () =>
          "more than 2 completed checkpoints, or shared blobs no retained checkpoint refers to, " +
          "are still there",
      });
      const kept = await sharedOf(directory, jobId);
      assert.ok(kept.completed.length >= 1, `a checkpoint is retained: ${kept.completed}`);
      assert.ok(
        kept.referencedShared.length >= 1,
        "the retained checkpoint refers to shared blobs",
      );
      for (const path of kept.referencedShared) {
        assert.ok(kept.shared.has(path), `${path}, referred to by a retained checkpoint, is kept`);
      }

      // Resume (NO_CLAIM) and fail over once after the resumed run's own checkpoints.
      const resumed = build({ directory, sink, backend, failAt: COUNT - 60 });
      resumed.resumeFrom({ jobId });
      const result = await resumed.execute("incremental-cancel");
      assert.ok(result.restarts >= 1, `the resumed run failed over: ${result.restarts}`);
      assert.deepEqual(byKey(sink.committed()), expectedByKey());
      const ids = sink.committedTransactions();
      assert.equal(new Set(ids).size, ids.length, "no transaction committed twice");

      // NO_CLAIM: the cancelled job's checkpoint is untouched; the resumed run left nothing.
      const after = await sharedOf(directory, jobId);
      assert.deepEqual(after.completed, kept.completed);
      // (Only the referenced blobs: the cancelled job's retention queue may still delete its
      // unreferenced ones after cancel() returned.)
      for (const path of kept.referencedShared) {
        assert.ok(after.shared.has(path), `${path} of the cancelled job survives the resumed run`);
      }
      assert.deepEqual(await entries(`${directory}/${result.jobId}`), []);
    });
  });
}
