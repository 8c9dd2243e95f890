/**
 * Deploying one execution attempt (Flink's `DefaultScheduler` deploying an
 * `ExecutionGraph`'s executions to slots): every subtask of the job goes to
 * a worker (a slot, in cluster mode), round-robin over the workers known
 * at deployment; the attempt fails when not all subtasks became ready
 * within `deployTimeoutMs`. With no worker at all, it polls for one every
 * 250 ms (as Flink waits for slots) and fails the attempt once
 * `deployTimeoutMs` passed without one; meanwhile `waitingForSlots` says
 * what it waits for.
 *
 * ## Invariants
 *
 * - At most one deploy timer (readiness deadline or worker poll) at a time;
 *   it acts only while the job is `deploying` the attempt that set it.
 * - `deployedOn` and `deployment` describe the latest deployed attempt
 *   (the failed one, during a failover), for cancelling it.
 *
 * @module
 */

import type { MessageBody, RestorePoint, WorkerMessage } from "../task/messages.ts";
import type { SubtaskRef } from "../checkpoint/types.ts";
import { logger } from "../log.ts";
import type { ExecutionAttempt } from "./execution_attempt.ts";
import type { JobPhase } from "./job_phase.ts";
import { describeRestorePoint as describePoint } from "./restore_decision.ts";

const log = logger("coordinator");

/** What an `AttemptDeployment` needs from the job coordinator that owns it. */
export interface AttemptDeploymentHost {
  /** The job's phase now. */
  phase(): JobPhase;
  /** The current execution attempt (the one to deploy). */
  attempt(): ExecutionAttempt;
  /** Sends `body` to worker `worker`, stamped with the job and current attempt. */
  toWorker(worker: string, body: MessageBody<WorkerMessage>): void;
  /** Fails the current attempt (a failover, through the restart strategy); never throws. */
  failover(error: Error): void;
}

/** Options of {@linkcode AttemptDeployment}. */
export interface AttemptDeploymentOptions {
  /** The coordinator's side of the job. */
  readonly host: AttemptDeploymentHost;
  /** The job's id, for log lines and errors. */
  readonly jobId: string;
  /** The job's name, for log lines. */
  readonly jobName: string;
  /** Every subtask of the job, in deployment order. */
  readonly tasks: readonly SubtaskRef[];
  /** Ids of the workers to deploy on, round-robin, read at each deployment. */
  readonly workers: () => string[];
  /** How long subtasks may take to become ready (or a worker to appear), in ms. */
  readonly deployTimeoutMs: number;
  /** True in local mode (no hint to start a worker). */
  readonly local?: boolean | undefined;
}

/** Deploys attempts of one job and watches their readiness deadline. */
export class AttemptDeployment {
  readonly #o: AttemptDeploymentOptions;
  readonly #host: AttemptDeploymentHost;
  #deployTimer: ReturnType<typeof setTimeout> | undefined;
  #deployedOn = new Set<string>();
  /** The subtasks (`vertex#subtask`) the latest attempt deployed, by worker. */
  #deployment = new Map<string, string[]>();
  #waitingForSlots: string | undefined;

  /** Keeps the options; no I/O until `deploy`. */
  constructor(options: AttemptDeploymentOptions) {
    this.#o = options;
    this.#host = options.host;
  }

  /** The workers the latest attempt deployed subtasks to. */
  get deployedOn(): ReadonlySet<string> {
    return this.#deployedOn;
  }

  /** The subtasks (`vertex#subtask`) the latest attempt deployed, by worker. */
  get deployment(): ReadonlyMap<string, readonly string[]> {
    return this.#deployment;
  }

  /** What the deployment waits for while there is no worker; undefined otherwise. */
  get waitingForSlots(): string | undefined {
    return this.#waitingForSlots;
  }

  /**
   * Sends `deploy` for every subtask of the current attempt, restoring
   * `restore` (`null`: from scratch), and starts the readiness deadline;
   * without workers, waits for one. The caller has set the phase to
   * `deploying`.
   */
  deploy(restore: RestorePoint | null): void {
    const o = this.#o;
    const workers = o.workers();
    if (workers.length === 0) {
      this.#awaitWorkers(restore);
      return;
    }
    const attempt = this.#host.attempt();
    log.info(
      `job ${o.jobId} '${o.jobName}': deploying attempt ${attempt.number} (${o.tasks.length} subtasks)` +
        (restore === null ? "" : ` from ${describePoint(restore, o.jobId)}`),
      {
        name: "attempt-deploying",
        jobId: o.jobId,
        attempt: attempt.number,
        subtasks: o.tasks.length,
        checkpointId: restore?.checkpointId ?? null,
      },
    );
    this.#deployedOn = new Set();
    this.#deployment = new Map();
    this.#send(o.tasks, workers, restore);
    this.#startDeadline();
  }

  /**
   * A region failover's deployment: sends `deploy` for `region`'s subtasks
   * only, as the current attempt, restoring `restore` (`null`: from
   * scratch), and starts the readiness deadline. Each subtask goes to the
   * worker a full deployment would give it now (the same one as before when
   * the workers did not change); the other subtasks' placement stays. With
   * no worker at all, the attempt fails (a full failover follows). The
   * caller's host reports the phase `deploying` meanwhile.
   *
   * @param region the subtasks to deploy, each one of the job's.
   * @param describe the region, for the log line (`region 0 (a#0, b#0)`).
   */
  deployRegion(
    region: readonly SubtaskRef[],
    restore: RestorePoint | null,
    describe: string,
  ): void {
    const o = this.#o;
    const workers = o.workers();
    const attempt = this.#host.attempt();
    if (workers.length === 0) {
      this.#host.failover(
        new Error(
          `Job ${o.jobId} found no worker to redeploy ${describe} on as attempt ${attempt.number}`,
        ),
      );
      return;
    }
    log.info(
      `job ${o.jobId} '${o.jobName}': deploying ${describe} as attempt ${attempt.number}` +
        (restore === null ? "" : ` from ${describePoint(restore, o.jobId)}`),
      {
        name: "region-deploying",
        jobId: o.jobId,
        attempt: attempt.number,
        subtasks: region.length,
        region: describe,
        checkpointId: restore?.checkpointId ?? null,
      },
    );
    const keys = new Set(region.map((t) => `${t.vertexId}#${t.subtask}`));
    for (const [worker, names] of this.#deployment) {
      const left = names.filter((n) => !keys.has(n));
      if (left.length > 0) this.#deployment.set(worker, left);
      else {
        this.#deployment.delete(worker);
        this.#deployedOn.delete(worker);
      }
    }
    this.#send(region, workers, restore);
    this.#startDeadline();
  }

  /** Sends `deploy` for `tasks`, each to the worker its position among all the job's tasks picks. */
  #send(tasks: readonly SubtaskRef[], workers: readonly string[], restore: RestorePoint | null) {
    const index = new Map(this.#o.tasks.map((t, i) => [`${t.vertexId}#${t.subtask}`, i]));
    for (const t of tasks) {
      const key = `${t.vertexId}#${t.subtask}`;
      const worker = workers[(index.get(key) ?? 0) % workers.length]!;
      this.#deployedOn.add(worker);
      const names = this.#deployment.get(worker) ?? this.#deployment.set(worker, []).get(worker)!;
      names.push(key);
      this.#host.toWorker(worker, {
        t: "deploy",
        vertex: t.vertexId,
        subtask: t.subtask,
        restore,
      });
    }
  }

  /** Starts the readiness deadline of the current attempt. */
  #startDeadline(): void {
    const o = this.#o;
    const attempt = this.#host.attempt();
    clearTimeout(this.#deployTimer);
    this.#deployTimer = setTimeout(() => {
      if (this.#host.phase() === "deploying" && this.#host.attempt().number === attempt.number) {
        this.#host.failover(
          new Error(
            `Only ${attempt.readyCount} of ${o.tasks.length} subtasks of attempt ${attempt.number} became ready within ${o.deployTimeoutMs} ms`,
          ),
        );
      }
    }, o.deployTimeoutMs);
  }

  /** Stops the deploy timer (the attempt started, or the job ended). */
  stopTimer(): void {
    clearTimeout(this.#deployTimer);
  }

  /** The attempt fails: stops the deploy timer and no longer waits for slots. */
  failingOver(): void {
    this.#waitingForSlots = undefined;
    clearTimeout(this.#deployTimer);
  }

  /** No worker yet: polls for one until the deploy timeout, then fails the attempt. */
  #awaitWorkers(restore: RestorePoint | null): void {
    const o = this.#o;
    const attempt = this.#host.attempt().number;
    const since = Date.now();
    this.#waitingForSlots = `waiting for slots to deploy attempt ${attempt} ` +
      `(${o.tasks.length} subtasks) on: 0 registered, at least 1 needed; ` +
      `the attempt fails after ${o.deployTimeoutMs} ms without one` +
      (o.local ? "" : " (start a worker: `deno run -A cli.ts worker --nats <url>`)");
    log.warn(`job ${o.jobId}: no worker to deploy attempt ${attempt} on, ${this.#waitingForSlots}`);
    const poll = () => {
      if (this.#host.phase() !== "deploying" || this.#host.attempt().number !== attempt) {
        this.#waitingForSlots = undefined;
        return;
      }
      if (o.workers().length > 0) {
        this.#waitingForSlots = undefined;
        return this.deploy(restore);
      }
      if (Date.now() - since >= o.deployTimeoutMs) {
        this.#waitingForSlots = undefined;
        return this.#host.failover(
          new Error(`Job ${o.jobId} found no worker to run on within ${o.deployTimeoutMs} ms`),
        );
      }
      this.#deployTimer = setTimeout(poll, 250);
    };
    clearTimeout(this.#deployTimer);
    this.#deployTimer = setTimeout(poll, 250);
  }
}
