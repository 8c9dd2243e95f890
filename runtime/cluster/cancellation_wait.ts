/**
 * When a failover may deploy the next attempt: the pure decision behind the
 * coordinator's wait for the failed attempt's subtasks to end.
 *
 * Flink's `ExecutionGraph` stays in RESTARTING until every execution of the
 * failed attempt is CANCELED; a task that does not end within
 * `task.cancellation.timeout` gets its TaskManager killed. Here the
 * coordinator sends `cancel-attempt` to every worker, and each worker that
 * ran subtasks of the attempt answers `attempt-cancelled` once they all
 * ended. The coordinator waits for those answers, the restart delay running
 * at the same time, so a restart is not slower when subtasks end promptly.
 *
 * Simplification: nothing can kill a stuck subtask. After the timeout the
 * coordinator logs the workers still running subtasks and deploys anyway
 * (sinks keep their own fencing, e.g. the MariaDB XA sink's). In cluster
 * mode a slot thread is terminated only when its job ends (`release`, 5 s
 * grace); in local mode a subtask stuck in user code runs until it returns.
 *
 * @module
 */

/** Default of `JobCoordinatorOptions.cancellationTimeoutMs`, in ms (Flink's `task.cancellation.timeout` is 180 s; restarts here are expected to be quick). */
export const DEFAULT_CANCELLATION_TIMEOUT_MS = 10_000;

/** Facts of one cancellation wait, at time `nowMs`. */
export interface CancellationWaitFacts {
  /** Workers that ran subtasks of the failed attempt and have not answered `attempt-cancelled`. */
  readonly pending: ReadonlySet<string>;
  /** Workers registered now (a lost worker runs nothing we can wait for). */
  readonly live: ReadonlySet<string>;
  /** When the wait began (the `cancel-attempt` was sent), in ms since the epoch. */
  readonly startedAtMs: number;
  /** Now, in ms since the epoch. */
  readonly nowMs: number;
  /** How long to wait at most, in ms (>= 0). */
  readonly timeoutMs: number;
}

/**
 * What to do: the failed attempt has ended everywhere (`ended`), keep waiting
 * for `workers` until `deadlineMs` (`wait`), or give up on `workers`
 * (`timed-out`).
 */
export type CancellationWaitDecision =
  | { readonly kind: "ended" }
  | { readonly kind: "wait"; readonly workers: readonly string[]; readonly deadlineMs: number }
  | { readonly kind: "timed-out"; readonly workers: readonly string[] };

/**
 * Decides whether the cancellation wait is over. Only live workers can hold
 * it; lost ones (their registration or heartbeat gone) are not waited for.
 * @throws {RangeError} when `timeoutMs` is negative or not finite.
 */
export function decideCancellationWait(facts: CancellationWaitFacts): CancellationWaitDecision {
  if (!Number.isFinite(facts.timeoutMs) || facts.timeoutMs < 0) {
    throw new RangeError(
      `cancellationTimeoutMs must be a finite number >= 0: current value is ${facts.timeoutMs}`,
    );
  }
  const workers = [...facts.pending].filter((w) => facts.live.has(w)).sort();
  if (workers.length === 0) return { kind: "ended" };
  const deadlineMs = facts.startedAtMs + facts.timeoutMs;
  if (facts.nowMs >= deadlineMs) return { kind: "timed-out", workers };
  return { kind: "wait", workers, deadlineMs };
}
