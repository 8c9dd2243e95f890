/**
 * Helpers for the PostgreSQL sink tests: init contexts, commit requests
 * that record what the committer signalled, and unique table names.
 *
 * @module
 */

import type { CommitRequest, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import type { CommitterInitContext } from "../../runtime/api/sink_v2.ts";

/** A unique, lower-case SQL name with `prefix`, e.g. `weir_t_1a2b3c4d`. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** Where a test's writer or committer runs. */
export interface TestSubtask {
  readonly subtaskIndex?: number;
  readonly parallelism?: number;
  readonly attempt?: number;
  readonly restoredCheckpointId?: number;
  readonly checkpointingMode?: "exactly-once" | "at-least-once" | "none";
}

/** A writer init context for `subtask` (defaults: subtask 0 of 1, attempt 0, fresh start, exactly-once). */
export function writerContext(subtask: TestSubtask = {}): WriterInitContext<never> {
  return {
    ...committerContext(subtask),
    restoredState: [],
    checkpointingMode: subtask.checkpointingMode ?? "exactly-once",
  };
}

/** A committer init context for `subtask`. */
export function committerContext(subtask: TestSubtask = {}): CommitterInitContext {
  return {
    subtaskIndex: subtask.subtaskIndex ?? 0,
    parallelism: subtask.parallelism ?? 1,
    attempt: subtask.attempt ?? 0,
    uid: "pg-sink",
    jobId: "test-job",
    restoredCheckpointId: subtask.restoredCheckpointId,
  };
}

/** What a committer signalled for one request; `committed` when it signalled nothing. */
export type Signal =
  | { readonly kind: "committed" }
  | { readonly kind: "already-committed" }
  | { readonly kind: "known-failure"; readonly error: Error }
  | { readonly kind: "unknown-failure"; readonly error: Error }
  | { readonly kind: "retry-later" };

/** A commit request that records its signal. */
export interface RecordingRequest<CommT> extends CommitRequest<CommT> {
  /** What the committer signalled so far. */
  readonly signal: Signal;
}

/** Commit requests for `committables` of `checkpointId`, recording their signals. */
export function commitRequests<CommT>(
  checkpointId: number,
  committables: readonly CommT[],
  numberOfRetries = 0,
): RecordingRequest<CommT>[] {
  return committables.map((committable) => {
    let signal: Signal = { kind: "committed" };
    return {
      committable,
      checkpointId,
      numberOfRetries,
      get signal() {
        return signal;
      },
      signalFailedWithKnownReason: (error: Error) => signal = { kind: "known-failure", error },
      signalFailedWithUnknownReason: (error: Error) => signal = { kind: "unknown-failure", error },
      retryLater: () => signal = { kind: "retry-later" },
      updateAndRetryLater: () => signal = { kind: "retry-later" },
      signalAlreadyCommitted: () => signal = { kind: "already-committed" },
    };
  });
}
