/**
 * What one `COMMIT PREPARED '<gid>'` came to, decided from what the server
 * answered and what the commit table holds. Pure: the committer of
 * `prepared_sink.ts` gathers the facts and carries out the outcome.
 *
 * | `COMMIT PREPARED` | commit-table row | outcome |
 * |---|---|---|
 * | succeeded | (not asked) | `committed` |
 * | 42704: no such prepared transaction | present | `already-committed` (a replayed commit) |
 * | 42704 | absent | `vanished`: the records are lost, the job must fail without restarts (DESIGN §12) |
 * | 42704 | lookup failed transiently | `retry` |
 * | lost connection, server restarting, … (`isTransientError`) | — | `retry` (committing again is safe: it either commits or finds the row) |
 * | any other error | — | `failed` (the attempt fails; the restore commits again) |
 *
 * @module
 */

import { errorCode, isTransientError, UNDEFINED_OBJECT } from "./errors.ts";

/** The facts about one commit. */
export interface CommitFacts {
  /** What `COMMIT PREPARED` threw; `undefined` when it succeeded. */
  readonly commitError: unknown;
  /**
   * For a gid that was not prepared: whether the commit table records it,
   * or the error the lookup threw; `undefined` when not looked up.
   */
  readonly recorded: boolean | Error | undefined;
}

/** What to signal for one commit request (see the module docs). */
export type CommitOutcome =
  | { readonly kind: "committed" }
  | { readonly kind: "already-committed" }
  | { readonly kind: "vanished" }
  | { readonly kind: "retry"; readonly cause: unknown }
  | { readonly kind: "failed"; readonly cause: unknown };

/**
 * Decides one commit's outcome (the table in the module docs). Performs no I/O.
 */
export function decideCommitOutcome(facts: CommitFacts): CommitOutcome {
  const { commitError, recorded } = facts;
  if (commitError === undefined) return { kind: "committed" };
  if (errorCode(commitError) === UNDEFINED_OBJECT) {
    if (recorded === true) return { kind: "already-committed" };
    if (recorded === false) return { kind: "vanished" };
    if (recorded instanceof Error) {
      return isTransientError(recorded)
        ? { kind: "retry", cause: recorded }
        : { kind: "failed", cause: recorded };
    }
    return {
      kind: "failed",
      cause: new Error("the commit table was not consulted", { cause: commitError }),
    };
  }
  return isTransientError(commitError)
    ? { kind: "retry", cause: commitError }
    : { kind: "failed", cause: commitError };
}
