/**
 * The coordinator's failover restores exactly the latest checkpoint whose
 * metadata it wrote, never an older one.
 *
 * Once a checkpoint's `_metadata` is written, two-phase-commit sinks may
 * commit its transactions; restoring an older checkpoint would replay and
 * commit those records a second time. So when the `_metadata` of the newest
 * checkpoint is damaged (or gone) between its completion and a failure, the
 * job must fail for good, naming the checkpoint, the job and the storage
 * error, instead of silently falling back to an older retained checkpoint
 * (the breaker's `repro_fallback_dupes.ts`).
 *
 * The damage is done by the task fault injector itself, at the first
 * snapshot after enough checkpoints completed; the coordinator fault hook
 * tells the test which checkpoints completed.
 *
 * The coordinator remembers the checkpoint as soon as its metadata write
 * resolves, even when a failover started while it was being written: the
 * last test holds a write back until the coordinator has cancelled the
 * failed attempt.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointedFunction,
  type FunctionInitializationContext,
  type JobExecutionResult,
  JobFailedError,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  SuppressRestartsError,
  WatermarkStrategy,
} from "../mod.ts";
import {
  CheckpointStorageError,
  LocalDirectoryCheckpointStorage,
} from "../runtime/checkpoint/storage.ts";
import type { CheckpointMetadata } from "../runtime/checkpoint/types.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { decode, encode } from "../runtime/actor/codec.ts";
import { JobCoordinator } from "../runtime/cluster/coordinator.ts";
import { Worker } from "../runtime/cluster/worker.ts";
import {
  type CoordinatorMessage,
  coordinatorSubject,
  type WorkerMessage,
  workerSubject,
} from "../runtime/task/messages.ts";
import { systemClock } from "../runtime/time/clock.ts";
import { CollectingSink, type FaultPoint, type FaultSite, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
  groupByKey,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 4,
  recordsPerKey: 200,
  awaitCheckpointEvery: 40,
};
/** Checkpoints that complete before the damage (more than `retainedCheckpoints`, so an older one is kept). */
const COMPLETED_BEFORE_DAMAGE = 3;
/** How long a run may take before the test calls it hung, in ms. */
const DEADLINE_MS = 20_000;

/** What a restored (or fresh) subtask of the probe saw: its attempt and the checkpoint it restored. */
interface Restore {
  readonly attempt: number;
  readonly checkpointId: number | undefined;
}

/** An identity map, chained to the source, that records which checkpoint each subtask restored. */
class RestoreProbe implements CheckpointedFunction {
  readonly restores: Restore[];
  // Functions are copied per subtask (own fields, shallowly): no #private fields.
  private restoredFrom: number | undefined;
  constructor(restores: Restore[]) {
    this.restores = restores;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.restoredFrom = context.restoredCheckpointId;
  }
  snapshotState(): void {}
  open(context: RuntimeContext): void {
    this.restores.push({ attempt: context.attempt, checkpointId: this.restoredFrom });
  }
  map(record: KeyedRecord): KeyedRecord {
    return record;
  }
}

/** How the test tampers with the job. */
interface Tampering {
  /** Called at each task fault point with the checkpoints completed so far; throwing fails the subtask. */
  readonly task?: (point: FaultPoint, site: FaultSite, completed: readonly number[]) => void;
  /** Called before the tasks are told checkpoint `id` completed; throwing fails the attempt. */
  readonly coordinator?: (id: number, completed: readonly number[]) => void;
}

/**
 * Runs the keyed job (source -> probe -> keyBy -> SequenceCheck -> sink) at
 * parallelism 2, retaining 2 checkpoints and allowed 3 restarts.
 * @returns the result or the error, what the sink committed, the restores
 *   and the completed checkpoints.
 */
/** The job under test: the keyed sequence check, probing restores, into `sink`. */
function addKeyedJob(
  env: StreamExecutionEnvironment,
  restores: Restore[],
  sink: CollectingSink<SumRecord>,
): void {
  env.fromSource(
    TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .map(new RestoreProbe(restores)).uid("probe")
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums")
    .sinkTo(sink).uid("committed");
}

async function runJob(dir: string, tampering: Tampering) {
  const completed: number[] = [];
  const restores: Restore[] = [];
  const sink = new CollectingSink<SumRecord>();
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(5, { directory: dir, retainedCheckpoints: 2 })
    .setRestartStrategy(RestartStrategies.fixedDelay(3, 0))
    .setFaultInjector({
      task: (point, site) => tampering.task?.(point, site, completed),
      coordinator: (point, id) => {
        if (point !== "before-notify-complete") return;
        completed.push(id);
        tampering.coordinator?.(id, completed);
      },
    });
  addKeyedJob(env, restores, sink);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the job hung for ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  let outcome: JobExecutionResult | Error;
  try {
    outcome = await Promise.race([env.execute("coordinator-failures"), deadline]);
  } catch (error) {
    if (error instanceof Error && /the job hung/.test(error.message)) throw error;
    outcome = error instanceof Error ? error : new Error(String(error));
  } finally {
    clearTimeout(timer);
  }
  return { outcome, committed: sink.committed(), restores, completed };
}

/** The only job directory under `dir`: its name is the job id. */
function onlyJobId(dir: string): string {
  const jobs = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).map((e) => e.name);
  assert.equal(jobs.length, 1, `job directories in ${dir}: ${jobs.join(", ")}`);
  return jobs[0]!;
}

/** The errors of `error`'s cause chain, outermost first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && !chain.includes(e); e = (e as Error).cause) {
    chain.push(e);
    if (!(e instanceof Error)) break;
  }
  return chain;
}

/**
 * Asserts that what was committed is, for every key, a prefix of the
 * failure-free output: nothing twice, nothing out of order.
 */
function assertCommittedPrefix(committed: readonly SumRecord[], context: string): void {
  const seen = new Set<string>();
  for (const r of committed) {
    const s = JSON.stringify(r);
    assert.ok(!seen.has(s), `${context}: ${s} committed twice`);
    seen.add(s);
  }
  const expected = expectedSums(SPLITS);
  for (const [key, records] of groupByKey(committed)) {
    assert.deepEqual(
      records,
      expected.get(key)?.slice(0, records.length),
      `${context}: key ${key}`,
    );
  }
}

Deno.test("a failover never restores a checkpoint older than the latest one whose metadata was written", async (t) => {
  const damages = [
    {
      name: "is corrupt",
      damage: (path: string) => Deno.writeTextFileSync(path, "{ damaged"),
      code: "CORRUPT",
    },
    { name: "is gone", damage: (path: string) => Deno.removeSync(path), code: "NOT_FOUND" },
  ];
  for (const { name, damage, code } of damages) {
    await t.step(`the job fails for good when that checkpoint's _metadata ${name}`, async () => {
      await withTempDir(async (dir) => {
        let damaged: { checkpointId: number; path: string; jobId: string } | undefined;
        const run = await runJob(dir, {
          task: (point, site, completed) => {
            if (damaged !== undefined || point !== "before-snapshot") return;
            const latest = completed.at(-1);
            if (completed.length < COMPLETED_BEFORE_DAMAGE || latest === undefined) return;
            const jobId = onlyJobId(dir);
            const path = `${dir}/${jobId}/chk-${latest}/_metadata`;
            damage(path);
            damaged = { checkpointId: latest, path, jobId };
            throw new Error(`induced failure at checkpoint ${site.checkpointId}`);
          },
        });
        assert.ok(damaged !== undefined, "the fault was never injected");
        const { checkpointId, path, jobId } = damaged;
        const context = `checkpoint ${checkpointId} of job ${jobId}`;
        const error = run.outcome;
        assert.ok(error instanceof JobFailedError, `${context}: not a JobFailedError: ${error}`);
        for (const part of [`Job ${jobId} `, `checkpoint ${checkpointId}`, code, path]) {
          assert.ok(error.message.includes(part), `${context}: no "${part}" in: ${error.message}`);
        }
        const chain = causes(error);
        assert.ok(chain.some((e) => e instanceof SuppressRestartsError), `${context}: restarts`);
        const storageError = chain.find((e) => e instanceof CheckpointStorageError);
        assert.ok(storageError instanceof CheckpointStorageError, `${context}: no storage error`);
        assert.equal(storageError.code, code);
        assert.equal(storageError.checkpointId, checkpointId);
        // No attempt restored anything: the first failover failed the job.
        assert.deepEqual(
          [...new Set(run.restores.map((r) => r.attempt))],
          [0],
          `${context}: attempts that ran`,
        );
        assert.ok(run.committed.length > 0, `${context}: nothing committed: the test is vacuous`);
        assertCommittedPrefix(run.committed, context);
      });
    });
  }

  await t.step(
    "a failure right after the metadata was written restores exactly that checkpoint",
    async () => {
      await withTempDir(async (dir) => {
        let failedAt: number | undefined;
        const run = await runJob(dir, {
          coordinator: (id, completed) => {
            if (failedAt !== undefined || completed.length < COMPLETED_BEFORE_DAMAGE) return;
            failedAt = id;
            throw new Error(`induced failure in the coordinator before notifying checkpoint ${id}`);
          },
        });
        assert.ok(failedAt !== undefined, "the fault was never injected");
        const result = run.outcome;
        if (result instanceof Error) throw result;
        const context = `failed at checkpoint ${failedAt}: ${result.summary}`;
        assert.equal(result.restarts, 1, context);
        const restoredBy1 = run.restores.filter((r) => r.attempt === 1).map((r) => r.checkpointId);
        assert.deepEqual(restoredBy1, [failedAt, failedAt], `${context}: restored checkpoints`);
        assertSameOutput(run.committed, [...expectedSums(SPLITS).values()].flat(), context);
      });
    },
  );
});

/**
 * A local-directory storage that, at the first metadata write of a
 * checkpoint >= `holdFrom`, calls `hold` and writes only once it resolves.
 */
class HeldMetadataStorage extends LocalDirectoryCheckpointStorage {
  readonly holdFrom: number;
  readonly hold: (meta: CheckpointMetadata) => Promise<void>;
  held: number | undefined;
  constructor(
    directory: string,
    holdFrom: number,
    hold: (meta: CheckpointMetadata) => Promise<void>,
  ) {
    super({ directory });
    this.holdFrom = holdFrom;
    this.hold = hold;
  }
  override async writeMetadata(meta: CheckpointMetadata): Promise<string> {
    if (this.held === undefined && meta.checkpointId >= this.holdFrom) {
      this.held = meta.checkpointId;
      await this.hold(meta);
    }
    return await super.writeMetadata(meta);
  }
}

Deno.test("a failover that starts while the newest metadata is being written restores that checkpoint", async () => {
  await withTempDir(async (dir) => {
    const jobId = "held-write";
    const restores: Restore[] = [];
    const sink = new CollectingSink<SumRecord>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
    addKeyedJob(env, restores, sink);
    const graph = env.getJobGraph("held write");

    const bus = new InProcessBus();
    const coordinatorTransport = bus.connect();
    const workerTransport = bus.connect();
    const testTransport = bus.connect();
    // Resolves when the coordinator cancels attempt 0, i.e. once its failover started.
    let cancelled!: () => void;
    const attemptCancelled = new Promise<void>((resolve) => cancelled = resolve);
    testTransport.subscribe(workerSubject("local"), (m) => {
      const msg = decode(m.data) as WorkerMessage;
      if (msg.t === "cancel-attempt" && msg.att === 0) cancelled();
    });
    const storage = new HeldMetadataStorage(dir, COMPLETED_BEFORE_DAMAGE, async (meta) => {
      const failed: CoordinatorMessage = {
        t: "failed",
        job: jobId,
        att: meta.attempt,
        vertex: graph.vertices[0]!.id,
        subtask: 0,
        error: {
          name: "Error",
          message: `induced failure while checkpoint ${meta.checkpointId}'s metadata is written`,
        },
      };
      testTransport.publish(coordinatorSubject(jobId), encode(failed));
      await attemptCancelled;
    });
    const worker = new Worker({
      transport: workerTransport,
      workerId: "local",
      resolveJob: () => ({
        graph,
        storage,
        config: {
          bufferSize: 1024,
          bufferTimeoutMs: 10,
          initialCredits: 8,
          autoWatermarkIntervalMs: 200,
          checkpointingMode: "exactly-once",
        },
        clock: systemClock,
      }),
    });
    worker.start();
    const coordinator = new JobCoordinator({
      transport: coordinatorTransport,
      jobId,
      graph,
      storage,
      checkpointing: {
        intervalMs: 5,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 2,
        retainOnFinish: false,
      },
      restartStrategy: RestartStrategies.fixedDelay(1, 0),
      workers: () => ["local"],
      restoreFrom: null,
      deployTimeoutMs: 10_000,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const result = await Promise.race([
        coordinator.run(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the job hung for ${DEADLINE_MS} ms`)),
            DEADLINE_MS,
          );
        }),
      ]);
      const held = storage.held;
      assert.ok(held !== undefined, "no metadata write was held back");
      const context = `held checkpoint ${held}: ${result.summary}`;
      assert.equal(result.restarts, 1, context);
      const restoredBy1 = restores.filter((r) => r.attempt === 1).map((r) => r.checkpointId);
      assert.deepEqual(restoredBy1, [held, held], `${context}: restored checkpoints`);
      assertSameOutput(sink.committed(), [...expectedSums(SPLITS).values()].flat(), context);
    } finally {
      clearTimeout(timer);
      worker.close();
      await coordinatorTransport.close();
      await workerTransport.close();
      await testTransport.close();
    }
  });
});
