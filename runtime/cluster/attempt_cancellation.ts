/**
 * Cancelling a failed execution attempt and waiting for its subtasks to end
 * (Flink's scheduler cancelling an `ExecutionGraph` before a restart,
 * bounded by `task.cancellation.timeout`): every live worker is told
 * `cancel-attempt` (of every subtask, or, for a region failover, of the
 * region's subtasks only); the wait ends once each worker that ran subtasks of the
 * attempt answered `attempt-cancelled` or is gone, or after
 * `cancellationTimeoutMs` (then it logs which workers still run which
 * subtasks), or when the job left the `restarting` phase. The decision at
 * each step is the pure `decideCancellationWait` (`cancellation_wait.ts`);
 * this class sends the messages and owns the timer.
 *
 * ## Invariants
 *
 * - The pending set is taken when the cancel is sent: workers that ran
 *   subtasks of the attempt and are live then.
 * - The wait re-checks at least every 250 ms (a worker may be lost
 *   meanwhile) and at once when an answer arrives.
 *
 * @module
 */

import type { MessageBody, WorkerMessage } from "../task/messages.ts";
import { logger } from "../log.ts";
import { decideCancellationWait } from "./cancellation_wait.ts";
import type { ExecutionAttempt } from "./execution_attempt.ts";
import type { JobPhase } from "./job_phase.ts";

const log = logger("coordinator");

/** Options of {@linkcode AttemptCancellation}. */
export interface AttemptCancellationOptions {
  /** The job's id, for log lines. */
  readonly jobId: string;
  /** Ids of the live workers now. */
  readonly workers: () => string[];
  /** How long `awaitEnded` waits at most, in ms (finite, >= 0). */
  readonly timeoutMs: number;
  /** The job's phase now (the wait ends when it is no longer `restarting`). */
  readonly phase: () => JobPhase;
  /** The current execution attempt (the one being cancelled). */
  readonly attempt: () => ExecutionAttempt;
  /** The workers the attempt was deployed to. */
  readonly deployedOn: () => ReadonlySet<string>;
  /** The subtasks (`vertex#subtask`) the attempt deployed, by worker, for the timeout log. */
  readonly deployment: () => ReadonlyMap<string, readonly string[]>;
  /** Sends `body` to worker `worker`, stamped with the job and current attempt. */
  readonly toWorker: (worker: string, body: MessageBody<WorkerMessage>) => void;
}

/** Cancels attempts of one job and waits for them to end. */
export class AttemptCancellation {
  readonly #o: AttemptCancellationOptions;
  /** Workers that ran subtasks of the cancelled attempt and did not answer `attempt-cancelled` yet. */
  #pending = new Set<string>();
  #wake: (() => void) | undefined;

  /** Keeps the options; no I/O until `cancel`. */
  constructor(options: AttemptCancellationOptions) {
    this.#o = options;
  }

  /** Tells every live worker to cancel the current attempt's subtasks. */
  cancel(): void {
    const workers = this.#o.workers();
    const deployedOn = this.#o.deployedOn();
    this.#pending = new Set(workers.filter((w) => deployedOn.has(w)));
    for (const w of workers) this.#o.toWorker(w, { t: "cancel-attempt" });
  }

  /**
   * A region failover: tells every live worker to cancel the current
   * attempt's subtasks among `subtasks` (`vertexId#subtask` keys) only; the
   * wait is then for the workers that ran one of them.
   */
  cancelSubtasks(subtasks: ReadonlySet<string>): void {
    const workers = this.#o.workers();
    const deployment = this.#o.deployment();
    this.#pending = new Set(
      workers.filter((w) => (deployment.get(w) ?? []).some((key) => subtasks.has(key))),
    );
    const list = [...subtasks];
    for (const w of workers) this.#o.toWorker(w, { t: "cancel-attempt", subtasks: list });
  }

  /** Worker `worker` answered `attempt-cancelled` for the current attempt. */
  cancelled(worker: string): void {
    this.#pending.delete(worker);
    this.#wake?.();
  }

  /**
   * Resolves once every live worker that ran subtasks of the current
   * (failed) attempt answered `attempt-cancelled`, or after the timeout
   * (then it logs who still runs what), or when the job left the
   * `restarting` phase meanwhile. Never rejects.
   */
  async awaitEnded(): Promise<void> {
    const o = this.#o;
    const attempt = o.attempt().number;
    const startedAtMs = Date.now();
    const timeoutMs = o.timeoutMs;
    for (;;) {
      if (o.phase() !== "restarting" || o.attempt().number !== attempt) return;
      const decision = decideCancellationWait({
        pending: this.#pending,
        live: new Set(o.workers()),
        startedAtMs,
        nowMs: Date.now(),
        timeoutMs,
      });
      if (decision.kind === "ended") {
        log.debug(
          `job ${o.jobId}: every subtask of attempt ${attempt} ended after ${
            Date.now() - startedAtMs
          } ms`,
        );
        return;
      }
      if (decision.kind === "timed-out") {
        const deployment = o.deployment();
        const running = decision.workers.map((w) =>
          `${w} (ran ${(deployment.get(w) ?? []).join(", ")})`
        );
        log.warn(
          `job ${o.jobId}: subtasks of attempt ${attempt} have not all ended within ` +
            `cancellationTimeoutMs ${timeoutMs} ms on workers ${running.join("; ")}; ` +
            `deploying attempt ${attempt + 1} anyway (nothing can kill a stuck subtask: ` +
            `sinks must fence the old attempt's writes)`,
          {
            name: "cancellation-timeout",
            jobId: o.jobId,
            attempt,
            workers: decision.workers.join(","),
          },
        );
        return;
      }
      // Re-check at least every 250 ms: a worker may be lost meanwhile.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(250, decision.deadlineMs - Date.now()));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }
}
