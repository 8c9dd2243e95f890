/**
 * The coordinator's failure detection (Flink's heartbeat monitor between
 * the JobManager and its TaskManagers): the live workers by their
 * heartbeats (`worker_pool.ts`), workers lost to the heartbeat timeout or
 * replaced by another process, and the coordinator's own NATS outages.
 *
 * Each worker publishes a heartbeat every `heartbeatIntervalMs`. A worker
 * not heard from for `heartbeatTimeoutMs` is dead: its slots leave the pool,
 * and every job whose current attempt had a subtask on one of them fails
 * that attempt with a {@linkcode WorkerLostError}. The job's restart
 * strategy then restarts it from its latest completed checkpoint on the
 * workers that are left (Flink's heartbeat timeout between JobManager and
 * TaskManagers; full failover). A worker that comes back (a new process)
 * joins the pool for later deployments.
 *
 * While the coordinator's NATS connection is lost no heartbeat can arrive,
 * so no worker is declared lost; when it is back, every running job fails
 * its attempt with a {@linkcode NatsConnectionLostError}.
 *
 * @module
 */

import type { Heartbeat } from "./cluster_protocol.ts";
import type { ClusterJobs } from "./cluster_jobs.ts";
import { WorkerPool } from "./worker_pool.ts";
import { NatsConnectionLostError, WorkerLostError } from "./cluster_errors.ts";
import { logger } from "../log.ts";

const log = logger("cluster");

/**
 * Watches the workers of a cluster and fails the attempts of jobs that lose
 * one (see the module docs).
 */
export class HeartbeatMonitor {
  /** The live workers and their slots. */
  readonly workers: WorkerPool = new WorkerPool();
  readonly #jobs: ClusterJobs;
  readonly #heartbeatTimeoutMs: number;
  /** When the NATS connection was lost, while it is (see `connectionLost`). */
  #disconnectedAt: number | undefined;

  /**
   * @param jobs the coordinator's job table, whose running jobs lose attempts.
   * @param heartbeatTimeoutMs a worker silent for this long is dead, in ms.
   */
  constructor(jobs: ClusterJobs, heartbeatTimeoutMs: number) {
    this.#jobs = jobs;
    this.#heartbeatTimeoutMs = heartbeatTimeoutMs;
  }

  /**
   * A worker's heartbeat: registers or refreshes it; one with a known id
   * from another process declares the one before it lost. A heartbeat with
   * an invalid worker id is logged and ignored.
   */
  heartbeat(hb: Heartbeat): void {
    const event = this.workers.heartbeat(hb, Date.now());
    if (event.kind === "invalid") {
      log.warn(`ignoring a heartbeat with an invalid worker id ${JSON.stringify(hb?.workerId)}`);
      return;
    }
    if (event.kind === "replaced") {
      // Another process took the id: the one before it is gone (restarted at
      // once, faster than the heartbeat timeout), or two workers share the id.
      const known = event.previous;
      this.#workerLost(
        known,
        `was replaced by another process with the same id (pid ${known.pid} -> ` +
          `${hb.pid}; two live workers must not share an id)`,
      );
    }
    if (event.kind !== "refreshed") {
      log.info(
        `worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) joined with ${hb.slots.length} slots`,
        { name: "worker-joined", workerId: hb.workerId, pid: hb.pid, slots: hb.slots.length },
      );
    }
  }

  /**
   * Declares the workers silent for the heartbeat timeout at `nowMs` dead and
   * fails the attempts that used them; nothing while the NATS connection is
   * lost (a NATS outage, not lost workers).
   */
  expire(nowMs: number): void {
    if (this.#disconnectedAt !== undefined) return;
    for (const { worker, silentMs } of this.workers.expire(nowMs, this.#heartbeatTimeoutMs)) {
      this.#workerLost(worker, `sent no heartbeat for ${silentMs} ms`);
    }
  }

  /** The coordinator's NATS connection was lost: no worker is declared lost until it is back. */
  connectionLost(): void {
    this.#disconnectedAt ??= Date.now();
    log.warn(
      `the coordinator lost its NATS connection; reconnecting (workers are not declared lost ` +
        `meanwhile)`,
    );
  }

  /**
   * The coordinator's NATS connection is back: every running job (deployed)
   * fails its attempt with a {@linkcode NatsConnectionLostError}, and the
   * workers are forgotten until their next heartbeat.
   */
  connectionRestored(): void {
    const lostForMs = this.#disconnectedAt === undefined
      ? undefined
      : Date.now() - this.#disconnectedAt;
    this.#disconnectedAt = undefined;
    // Workers count again once a heartbeat shows they reconnected too: a
    // deployment sent to a worker still disconnected would be lost.
    this.workers.clear();
    for (const job of this.#jobs.values()) {
      if (job.status.status !== "RUNNING" || job.awaitingWorkers) continue;
      job.coordinator.failAttempt(
        new NatsConnectionLostError(
          `NATS outage: the coordinator's NATS connection was lost` +
            (lostForMs === undefined ? "" : ` for ${lostForMs} ms`) +
            ` and is back; messages of job ${job.request.jobId} may have been lost, so it ` +
            `restarts from its latest checkpoint`,
        ),
      );
    }
  }

  /** Fails the current attempt of every running job with a subtask on `hb`'s slots. */
  #workerLost(hb: Heartbeat, why: string): void {
    log.warn(`worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) lost: it ${why}`, {
      name: "worker-lost",
      workerId: hb.workerId,
      pid: hb.pid,
      reason: why,
    });
    const lost = new Set(hb.slots);
    for (const job of this.#jobs.values()) {
      if (job.status.status !== "RUNNING") continue;
      if (![...job.coordinator.deployedWorkers].some((s) => lost.has(s))) continue;
      job.coordinator.failAttempt(
        new WorkerLostError(
          `Worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) running subtasks of job ` +
            `${job.request.jobId} ${why}`,
        ),
      );
    }
  }
}
