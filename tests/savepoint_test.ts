/**
 * Savepoints in local mode, through the job client of `executeAsync()`:
 * `triggerSavepoint` stores a self-contained savepoint in its own directory,
 * `stopWithSavepoint` ends the job FINISHED, and runs restored with
 * `fromSavepoint` at parallelism 2 -> 4 -> 3 commit, key by key and record
 * by record, exactly what one run without stops commits; the savepoints
 * outlive every job (retention never deletes them). Also: a restore of a
 * savepoint path that is not one fails with a `ResumeError` naming it.
 *
 * (Cluster mode, the CLI and drain are tested in `savepoint_cluster_test.ts`.)
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ResumeError, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { SequenceSource } from "../connectors/datagen/sequence_source.ts";
import { withTempDir } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";

const COUNT = 6000;
/** Records per second of the stopped runs: slow enough that they are stopped before their end. */
const RATE = 1500;
const KEYS = 7;

type Sum = [number, number];

function build(options: {
  directory: string;
  parallelism: number;
  sink: CollectingSink<Sum>;
  rate?: number;
  savepoint?: string;
  maxParallelism?: number;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(options.parallelism)
    .setMaxParallelism(options.maxParallelism ?? 128)
    .enableCheckpointing(50, { directory: join(options.directory, "checkpoints") });
  if (options.savepoint !== undefined) env.fromSavepoint(options.savepoint);
  env.fromSource(
    new SequenceSource(
      1,
      COUNT,
      options.rate === undefined ? {} : { recordsPerSecond: options.rate },
    ),
    WatermarkStrategy.noWatermarks(),
    "numbers",
  ).uid("numbers").setParallelism(1) // one source subtask: each key's order is fixed
    .keyBy((n) => n % KEYS)
    .map((n): Sum => [n % KEYS, n])
    .keyBy((r) => r[0])
    .reduce((a, b): Sum => [a[0], a[1] + b[1]]).uid("sums")
    .sinkTo(options.sink).uid("out");
  return env;
}

function byKey(records: readonly Sum[]): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const [k, s] of records) (out.get(k) ?? out.set(k, []).get(k)!).push(s);
  return new Map([...out].sort((a, b) => a[0] - b[0]));
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("savepoints: trigger, stop with a savepoint, and resume 2 -> 4 -> 3 commit exactly what a run without stops commits", async () => {
  await withTempDir(async (dir) => {
    const spDir = join(dir, "savepoints");
    // The reference: one run without stops.
    const reference = new CollectingSink<Sum>();
    await build({ directory: join(dir, "ref"), parallelism: 2, sink: reference }).execute("ref");

    // One sink over the three runs, as one external system: a restore commits
    // the restored savepoint's pending transactions again, idempotently.
    const sink = new CollectingSink<Sum>();
    const sink1 = sink;
    // Run 1 at parallelism 2: a savepoint while running, then stop with a savepoint.
    const job1 = await build({ directory: dir, parallelism: 2, sink: sink1, rate: RATE })
      .executeAsync("savepointed");
    await waitUntil(() => sink1.committed().length > 200, {
      timeoutMs: 30_000,
      missing: () => `${sink1.committed().length} of 201 records committed`,
    });
    const sp1 = await job1.triggerSavepoint(spDir);
    assert.ok(sp1.startsWith(join(spDir, `savepoint-${job1.jobId}-`)), sp1);
    const cid = Number(sp1.slice(sp1.lastIndexOf("-") + 1));
    assert.ok(await exists(join(sp1, `chk-${cid}`, "_metadata")), `no _metadata under ${sp1}`);
    const meta = JSON.parse(await Deno.readTextFile(join(sp1, `chk-${cid}`, "_metadata")));
    assert.equal(meta.kind, "savepoint");
    assert.equal(meta.jobId, `savepoint-${job1.jobId}-${cid}`);
    await waitUntil(() => sink1.committed().length > 600, {
      timeoutMs: 30_000,
      missing: () => `${sink1.committed().length} of 601 records committed`,
    });
    const stop1 = await job1.stopWithSavepoint({ directory: spDir });
    const result1 = await job1.result();
    assert.equal(result1.jobId, job1.jobId);
    assert.ok(sink1.committed().length < COUNT, "run 1 stopped before the end of its input");

    const afterRun1 = sink.committed().length;
    // Run 2 at parallelism 4 from the stop's savepoint; stop again.
    const job2 = await build({
      directory: dir,
      parallelism: 4,
      sink,
      rate: RATE,
      savepoint: stop1,
    }).executeAsync("savepointed");
    await waitUntil(() => sink.committed().length > afterRun1 + 300, {
      timeoutMs: 30_000,
      missing: () => `${sink.committed().length} of ${afterRun1 + 301} records committed`,
    });
    const stop2 = await job2.stopWithSavepoint({ directory: spDir });
    await job2.result();

    // Run 3 at parallelism 3 to the end of the input.
    assert.ok(sink.committed().length < COUNT, "run 2 stopped before the end of its input");
    await build({ directory: dir, parallelism: 3, sink, savepoint: stop2 })
      .execute("savepointed");

    const all = sink.committed();
    assert.equal(all.length, COUNT);
    assert.deepEqual(byKey(all), byKey(reference.committed()));
    // Retention never deletes a savepoint: all three outlive their jobs.
    for (const path of [sp1, stop1, stop2]) {
      const id = Number(path.slice(path.lastIndexOf("-") + 1));
      assert.ok(await exists(join(path, `chk-${id}`, "_metadata")), `${path} was deleted`);
    }
  });
});

Deno.test("a savepoint restores with another max parallelism (keys re-hashed into the new key groups), a checkpoint does not", async () => {
  await withTempDir(async (dir) => {
    const spDir = join(dir, "savepoints");
    const reference = new CollectingSink<Sum>();
    await build({ directory: join(dir, "ref"), parallelism: 2, sink: reference }).execute("ref");
    const sink = new CollectingSink<Sum>();
    const job1 = await build({ directory: dir, parallelism: 2, sink, rate: RATE })
      .executeAsync("rehashed");
    await waitUntil(() => sink.committed().length > 600, {
      timeoutMs: 30_000,
      missing: () => `${sink.committed().length} of 601 records committed`,
    });
    const sp = await job1.stopWithSavepoint({ directory: spDir });
    await job1.result();
    assert.ok(sink.committed().length < COUNT, "run 1 stopped before the end of its input");
    // 128 key groups -> 50 (not a power of two), at parallelism 3.
    await build({ directory: dir, parallelism: 3, sink, savepoint: sp, maxParallelism: 50 })
      .execute("rehashed");
    assert.deepEqual(byKey(sink.committed()), byKey(reference.committed()));

    // A cancelled job keeps its checkpoints; resuming one with another max parallelism fails.
    const other = new CollectingSink<Sum>();
    const job2 = await build({ directory: dir, parallelism: 2, sink: other, rate: RATE })
      .executeAsync("checkpointed");
    await waitUntil(() => other.committed().length > 100, {
      timeoutMs: 30_000,
      missing: () => `${other.committed().length} of 101 records committed`,
    });
    await job2.cancel();
    await assert.rejects(job2.result());
    const env = build({ directory: dir, parallelism: 2, sink: other, maxParallelism: 50 })
      .resumeFrom({ jobId: job2.jobId });
    await assert.rejects(
      env.execute("checkpointed"),
      (e: unknown) =>
        e instanceof ResumeError &&
        e.message.includes("only a savepoint can be restored with another max parallelism"),
    );
  });
});

Deno.test("fromSavepoint() with a path that names no savepoint fails with a ResumeError naming it", async () => {
  await withTempDir(async (dir) => {
    const sink = new CollectingSink<Sum>();
    const missing = join(dir, "savepoints", "savepoint-nope-3");
    await assert.rejects(
      build({ directory: dir, parallelism: 1, sink, savepoint: missing }).execute("bad"),
      (e: unknown) =>
        e instanceof ResumeError && e.message.includes(missing) &&
        e.message.includes("no completed savepoint"),
    );
    await assert.rejects(
      build({ directory: dir, parallelism: 1, sink, savepoint: join(dir, "chk-3") }).execute(
        "bad",
      ),
      (e: unknown) => e instanceof ResumeError && e.message.includes("is not a savepoint id"),
    );
  });
});
