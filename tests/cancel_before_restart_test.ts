/**
 * A failover deploys the next attempt only once the failed attempt's
 * subtasks ended (Flink's RESTARTING state waits for every execution to be
 * CANCELED): no zombie of attempt 0 may still be inside a sink's snapshot
 * when attempt 1's writers are created.
 *
 * The probe sink has two subtasks. In attempt 0, subtask 0's
 * `snapshotState` is slow: it returns once attempt 1 created a writer, or
 * after `SLOW_SNAPSHOT_MS`, whichever comes first; subtask 1's
 * `snapshotState` waits until subtask 0's started, then throws, which fails
 * the attempt. The restart strategy has no delay. With the wait
 * (`cancellationTimeoutMs` 10 000, the default) attempt 0's snapshot ends
 * before any writer of attempt 1 exists; with `cancellationTimeoutMs` 0
 * (deploy at once, as before the wait existed) attempt 1's writer is
 * created while attempt 0's snapshot still runs. The ordering is read from
 * the sequence of events the sink records, not from clocks.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import type { SinkV2 } from "../runtime/api/sink_v2.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { JobCoordinator } from "../runtime/cluster/coordinator.ts";
import { Worker } from "../runtime/cluster/worker.ts";
import { systemClock } from "../runtime/time/clock.ts";
import { withTempDir } from "./_job_kit.ts";

/** Longest a slow snapshot of attempt 0 waits for attempt 1's writer, in ms (below the 10 s cancellation timeout). */
const SLOW_SNAPSHOT_MS = 3_000;
/** How long a run may take before the test calls it hung, in ms. */
const DEADLINE_MS = 30_000;

type ProbeEvent =
  | { readonly t: "writer-created"; readonly attempt: number; readonly subtask: number }
  | { readonly t: "snapshot-start" | "snapshot-end"; readonly attempt: number };

/** Shared by every writer of one run (local mode: one process). */
class Probe {
  readonly events: ProbeEvent[] = [];
  #slowStarted!: () => void;
  readonly slowStarted = new Promise<void>((resolve) => this.#slowStarted = resolve);
  #nextAttempt!: () => void;
  readonly nextAttemptWriter = new Promise<void>((resolve) => this.#nextAttempt = resolve);

  sink(): SinkV2<number, never, number> {
    return {
      kind: "v2",
      deliveryGuarantee: "at-least-once",
      checkWriterState: (raw) => {
        if (typeof raw !== "number") {
          throw new TypeError(`probe writer state must be a number: current value is ${raw}`);
        }
        return raw;
      },
      createWriter: (ctx) => {
        const { attempt, subtaskIndex: subtask } = ctx;
        this.events.push({ t: "writer-created", attempt, subtask });
        if (attempt > 0) this.#nextAttempt();
        return {
          write: () => {},
          flush: () => {},
          snapshotState: async () => {
            if (attempt !== 0) return [];
            if (subtask === 0) {
              this.events.push({ t: "snapshot-start", attempt });
              this.#slowStarted();
              await raceTimer(this.nextAttemptWriter, SLOW_SNAPSHOT_MS);
              this.events.push({ t: "snapshot-end", attempt });
              return [];
            }
            await raceTimer(this.slowStarted, DEADLINE_MS);
            throw new Error("induced failure of sink subtask 1 in attempt 0's snapshot");
          },
          close: () => {},
        };
      },
    };
  }
}

/** Resolves when `p` does or after `ms`, whichever is first. */
async function raceTimer(p: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([p, new Promise<void>((r) => timer = setTimeout(r, ms))]);
  } finally {
    clearTimeout(timer);
  }
}

async function runProbeJob(jobId: string, cancellationTimeoutMs: number): Promise<ProbeEvent[]> {
  return await withTempDir(async (dir) => {
    const probe = new Probe();
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
    env.fromCollection(Array.from({ length: 200 }, (_, i) => i))
      .keyBy((n) => String(n % 4))
      .sinkTo(probe.sink());
    const graph = env.getJobGraph(jobId);
    const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
    const bus = new InProcessBus();
    const coordinatorTransport = bus.connect();
    const workerTransport = bus.connect();
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
        intervalMs: 50,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      restartStrategy: RestartStrategies.fixedDelay(1, 0),
      workers: () => ["local"],
      restoreFrom: null,
      deployTimeoutMs: 10_000,
      local: true,
      cancellationTimeoutMs,
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
      assert.equal(result.restarts, 1, `${result.summary}: ${JSON.stringify(probe.events)}`);
      return probe.events;
    } finally {
      clearTimeout(timer);
      worker.close();
      await coordinatorTransport.close();
      await workerTransport.close();
    }
  });
}

/** Index of attempt 0's snapshot end and of attempt 1's first writer, in event order. */
function ordering(events: readonly ProbeEvent[]): { snapshotEnd: number; nextWriter: number } {
  const snapshotEnd = events.findIndex((e) => e.t === "snapshot-end" && e.attempt === 0);
  const nextWriter = events.findIndex((e) => e.t === "writer-created" && e.attempt === 1);
  const context = JSON.stringify(events);
  assert.ok(snapshotEnd >= 0, `attempt 0's slow snapshot never ended: ${context}`);
  assert.ok(nextWriter >= 0, `attempt 1 created no writer: ${context}`);
  return { snapshotEnd, nextWriter };
}

Deno.test("a failover creates the next attempt's sink writers only after the failed attempt's slow snapshot ended", async () => {
  const events = await runProbeJob("cancel-wait", 10_000);
  const { snapshotEnd, nextWriter } = ordering(events);
  assert.ok(snapshotEnd < nextWriter, `zombie snapshot overlapped: ${JSON.stringify(events)}`);
});

Deno.test("without the cancellation wait the next attempt's writer is created while the failed attempt still snapshots", async () => {
  const events = await runProbeJob("cancel-nowait", 0);
  const { snapshotEnd, nextWriter } = ordering(events);
  assert.ok(nextWriter < snapshotEnd, `expected the zombie overlap: ${JSON.stringify(events)}`);
});
