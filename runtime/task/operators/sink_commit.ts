/**
 * One commit round of a sink subtask: the committables pending up to a
 * completed checkpoint go to the `Committer` as `CommitRequest`s, and what
 * each request signalled decides what happens next (after Flink's
 * `CommitterOperator`, `CommitRequestImpl` and `CheckpointCommittableManager`).
 *
 * {@linkcode decideCommitRound} is pure; {@linkcode commitPending} runs the
 * rounds (the committer call and the backoff sleep are its only I/O).
 *
 * ## Outcomes of a round, in order of precedence
 *
 * 1. A request signalled `signalFailedWithKnownReason`: the job fails
 *    without restarts (a `SuppressRestartsError` naming the sink uid,
 *    subtask, checkpoint, with the sink's error as `cause`).
 * 2. A request signalled `signalFailedWithUnknownReason`, or the committer's
 *    `commit` threw: the attempt fails (a plain `Error` with the cause); the
 *    restore commits the checkpoint's committables again.
 * 3. Requests signalled `retryLater` / `updateAndRetryLater`: those (only
 *    those) are committed again after a backoff, with `numberOfRetries` one
 *    higher; after {@linkcode CommitRetryOptions.maxRetries} retries the
 *    attempt fails as in 2.
 * 4. Otherwise every request counts as committed (unsignalled,
 *    `signalAlreadyCommitted`) and leaves the pending list.
 *
 * A request signalled more than once keeps its last signal. Signals given
 * after `commit` returned are ignored: the round is decided when it returns.
 *
 * ## Retry numbers (defaults, {@linkcode DEFAULT_COMMIT_RETRY})
 *
 * Up to 10 retries per round, after 100, 200, 400, 800, then 1000 ms each
 * (doubling, capped): about 7.5 s in all, during which the subtask's mailbox
 * waits (the commit runs in the completion notification, as Flink's
 * does). Retry counts start at 0 again in each attempt: they are not
 * checkpointed.
 *
 * @module
 */

import type { CommitRequest, Committer } from "../../api/sink_v2.ts";
import { SuppressRestartsError } from "../../failure.ts";

/** A committable waiting for its checkpoint (or a later one) to complete; checkpointed as it is. */
export interface PendingCommittable {
  /** The checkpoint whose barrier produced it. */
  readonly checkpointId: number;
  /** The committable, as `prepareCommit` returned it (plain data). */
  readonly committable: unknown;
}

/** What one request signalled (unsignalled counts as `"committed"`). */
export type CommitOutcome =
  | { readonly kind: "committed" }
  | { readonly kind: "already-committed" }
  | { readonly kind: "retry"; readonly committable: unknown }
  | { readonly kind: "failed-known"; readonly error: Error }
  | { readonly kind: "failed-unknown"; readonly error: Error };

/** How often and how patiently a round retries (see the module docs). */
export interface CommitRetryOptions {
  /** Retries per round before the attempt fails, an integer >= 0. */
  readonly maxRetries: number;
  /** Delay before the first retry, ms >= 0; doubles per retry. */
  readonly initialBackoffMs: number;
  /** Largest delay between retries, ms >= `initialBackoffMs`. */
  readonly maxBackoffMs: number;
}

/** The defaults: 10 retries, 100 ms doubling to at most 1000 ms (about 7.5 s in all). */
export const DEFAULT_COMMIT_RETRY: CommitRetryOptions = {
  maxRetries: 10,
  initialBackoffMs: 100,
  maxBackoffMs: 1000,
};

/**
 * Checks retry options.
 * @returns `options`.
 * @throws {RangeError} naming the field and its current value.
 */
export function checkCommitRetryOptions(options: CommitRetryOptions): CommitRetryOptions {
  const { maxRetries, initialBackoffMs, maxBackoffMs } = options;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new RangeError(
      `Commit retry 'maxRetries' must be an integer >= 0: current value is ${maxRetries}`,
    );
  }
  if (!Number.isFinite(initialBackoffMs) || initialBackoffMs < 0) {
    throw new RangeError(
      `Commit retry 'initialBackoffMs' must be a finite number >= 0: current value is ${initialBackoffMs}`,
    );
  }
  if (!Number.isFinite(maxBackoffMs) || maxBackoffMs < initialBackoffMs) {
    throw new RangeError(
      `Commit retry 'maxBackoffMs' must be a finite number >= initialBackoffMs (${initialBackoffMs}): current value is ${maxBackoffMs}`,
    );
  }
  return options;
}

/** A request handed to the committer; records its last signal. */
export class CommitRequestImpl implements CommitRequest<unknown> {
  /** The committable. */
  readonly committable: unknown;
  /** Its checkpoint. */
  readonly checkpointId: number;
  /** Retries so far in this attempt. */
  readonly numberOfRetries: number;
  /** The last signal (initially committed). */
  outcome: CommitOutcome = { kind: "committed" };
  #open = true;

  /** Makes a request for `pending`, retried `numberOfRetries` times already. */
  constructor(pending: PendingCommittable, numberOfRetries: number) {
    this.committable = pending.committable;
    this.checkpointId = pending.checkpointId;
    this.numberOfRetries = numberOfRetries;
  }

  /** Ends the round: later signals are ignored. */
  seal(): CommitOutcome {
    this.#open = false;
    return this.outcome;
  }

  #set(outcome: CommitOutcome): void {
    if (this.#open) this.outcome = outcome;
  }

  /** See `CommitRequest.signalFailedWithKnownReason`. */
  signalFailedWithKnownReason(error: Error): void {
    this.#set({ kind: "failed-known", error });
  }
  /** See `CommitRequest.signalFailedWithUnknownReason`. */
  signalFailedWithUnknownReason(error: Error): void {
    this.#set({ kind: "failed-unknown", error });
  }
  /** See `CommitRequest.retryLater`. */
  retryLater(): void {
    this.#set({ kind: "retry", committable: this.committable });
  }
  /** See `CommitRequest.updateAndRetryLater`. */
  updateAndRetryLater(committable: unknown): void {
    this.#set({ kind: "retry", committable });
  }
  /** See `CommitRequest.signalAlreadyCommitted`. */
  signalAlreadyCommitted(): void {
    this.#set({ kind: "already-committed" });
  }
}

/** What a round's outcomes lead to (pure result of {@linkcode decideCommitRound}). */
export type CommitRoundDecision =
  /** Everything committed. */
  | { readonly kind: "done"; readonly committed: number; readonly alreadyCommitted: number }
  /** Commit `remaining` again after `delayMs`. */
  | {
    readonly kind: "retry";
    readonly remaining: readonly PendingCommittable[];
    readonly delayMs: number;
    readonly committed: number;
    readonly alreadyCommitted: number;
  }
  /** The job (`suppressRestarts`) or the attempt fails with `error`. */
  | { readonly kind: "fail"; readonly error: Error; readonly suppressRestarts: boolean };

/** The facts {@linkcode decideCommitRound} decides on. */
export interface CommitRoundFacts {
  /** The round's requests, in checkpoint order. */
  readonly requests: readonly { readonly checkpointId: number }[];
  /** Each request's outcome, same order. */
  readonly outcomes: readonly CommitOutcome[];
  /** Retries done before this round (0 for the first round). */
  readonly retriesSoFar: number;
  /** The retry policy. */
  readonly retry: CommitRetryOptions;
  /** Who commits, for messages, e.g. `"sink 'out' (uid out) subtask 0/2 attempt 1"`. */
  readonly where: string;
}

/** Decides what a round's outcomes lead to (see the module docs). Performs no I/O. */
export function decideCommitRound(facts: CommitRoundFacts): CommitRoundDecision {
  const { requests, outcomes, where } = facts;
  let committed = 0;
  let alreadyCommitted = 0;
  let unknown: { error: Error; checkpointId: number } | undefined;
  const remaining: PendingCommittable[] = [];
  for (let i = 0; i < outcomes.length; i++) {
    const outcome = outcomes[i]!;
    const checkpointId = requests[i]!.checkpointId;
    switch (outcome.kind) {
      case "failed-known":
        return {
          kind: "fail",
          suppressRestarts: true,
          error: new SuppressRestartsError(
            `Cannot commit a committable of checkpoint ${checkpointId} in ${where}: ${outcome.error.message}. ` +
              `The committer signalled a known reason a retry cannot fix, so the job fails without restarts`,
            { cause: outcome.error },
          ),
        };
      case "failed-unknown":
        unknown ??= { error: outcome.error, checkpointId };
        break;
      case "retry":
        remaining.push({ checkpointId, committable: outcome.committable });
        break;
      case "already-committed":
        alreadyCommitted++;
        break;
      case "committed":
        committed++;
        break;
    }
  }
  if (unknown !== undefined) {
    return {
      kind: "fail",
      suppressRestarts: false,
      error: new Error(
        `Cannot commit a committable of checkpoint ${unknown.checkpointId} in ${where}: ${unknown.error.message}. ` +
          `The attempt fails; the restore commits the checkpoint's committables again`,
        { cause: unknown.error },
      ),
    };
  }
  if (remaining.length === 0) return { kind: "done", committed, alreadyCommitted };
  const { maxRetries, initialBackoffMs, maxBackoffMs } = facts.retry;
  if (facts.retriesSoFar >= maxRetries) {
    const ids = [...new Set(remaining.map((p) => p.checkpointId))].join(", ");
    return {
      kind: "fail",
      suppressRestarts: false,
      error: new Error(
        `Cannot commit ${remaining.length} committable(s) of checkpoint(s) ${ids} in ${where}: ` +
          `the committer still asked to retry after ${maxRetries} retries (maxRetries). ` +
          `The attempt fails; the restore commits them again`,
      ),
    };
  }
  const delayMs = Math.min(maxBackoffMs, initialBackoffMs * 2 ** facts.retriesSoFar);
  return { kind: "retry", remaining, delayMs, committed, alreadyCommitted };
}

/** Counters of committables (Flink's `SinkCommitterMetricGroup` names), summed over rounds. */
export interface CommitCounters {
  /** Committables handed to the committer, retries included. */
  totalCommittables: number;
  /** Committed (unsignalled). */
  successfulCommittables: number;
  /** Signalled already committed. */
  alreadyCommittedCommittables: number;
  /** Signalled to retry. */
  retriedCommittables: number;
  /** Signalled failed (known or unknown). */
  failedCommittables: number;
}

/** What {@linkcode commitPending} needs besides the committables. */
export interface CommitPendingOptions {
  /** The committer. */
  readonly committer: Committer<unknown>;
  /** The retry policy. */
  readonly retry: CommitRetryOptions;
  /** Who commits, for messages. */
  readonly where: string;
  /** Counters to add to. */
  readonly counters: CommitCounters;
  /** Waits `ms` between rounds. */
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Commits `pending` (in checkpoint order) in rounds until everything is
 * committed; see the module docs for the outcomes.
 * @throws {SuppressRestartsError} when a request failed with a known reason.
 * @throws {Error} naming the sink and checkpoint when a request failed with
 *   an unknown reason, the committer threw, or retries ran out.
 */
export async function commitPending(
  pending: readonly PendingCommittable[],
  options: CommitPendingOptions,
): Promise<void> {
  const { committer, retry, where, counters } = options;
  let round = pending;
  for (let retriesSoFar = 0;; retriesSoFar++) {
    const requests = round.map((p) => new CommitRequestImpl(p, retriesSoFar));
    counters.totalCommittables += requests.length;
    try {
      await committer.commit(requests);
    } catch (error) {
      for (const request of requests) request.seal();
      counters.failedCommittables += requests.length;
      const ids = [...new Set(round.map((p) => p.checkpointId))].join(", ");
      throw new Error(
        `Cannot commit the committables of checkpoint(s) ${ids} in ${where}: the committer threw ` +
          `(${error instanceof Error ? error.message : String(error)}). ` +
          `The attempt fails; the restore commits them again`,
        { cause: error },
      );
    }
    const outcomes = requests.map((r) => r.seal());
    for (const outcome of outcomes) {
      if (outcome.kind === "retry") counters.retriedCommittables++;
      else if (outcome.kind === "failed-known" || outcome.kind === "failed-unknown") {
        counters.failedCommittables++;
      }
    }
    const decision = decideCommitRound({ requests: round, outcomes, retriesSoFar, retry, where });
    if (decision.kind === "fail") throw decision.error;
    counters.successfulCommittables += decision.committed;
    counters.alreadyCommittedCommittables += decision.alreadyCommitted;
    if (decision.kind === "done") return;
    await options.sleep(decision.delayMs);
    round = decision.remaining;
  }
}
