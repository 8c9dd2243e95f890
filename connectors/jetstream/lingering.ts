/**
 * Aborting lingering transactions: open transactions of older epochs of a
 * transactionalId, left by a crash or pre-committed for a checkpoint that
 * never completed (Kafka aborts them when a new producer epoch starts).
 * The decision is `decideLingering` of `protocol.ts`; this module runs it
 * over the transaction log.
 *
 * Two moments (see `protocol.ts`, "Writers", step 6):
 *
 * - the writer's start (`restoredCommitsDone` false): transactions never
 *   pre-committed are in no checkpoint, so they are aborted at once;
 * - the first commit of a checkpoint completed after the restore
 *   (`restoredCommitsDone` true, run by the committer): every subtask has
 *   committed what it restored, so the pre-committed ones left are in no
 *   restored checkpoint and are aborted too. Then `settledEpoch` moves up
 *   to the current epoch, and later starts scan only newer epochs.
 *
 * @module
 */

import { logger } from "../../runtime/log.ts";
import { decideLingering } from "./protocol.ts";
import type { TransactionLog } from "./transactions.ts";

const log = logger("jetstream-sink");

/** A transactionalId with the epoch its current owner holds. */
export interface OwnedId {
  /** `<prefix>.<subtask>`. */
  readonly transactionalId: string;
  /** The owner's epoch. */
  readonly epoch: number;
  /** Every transaction of an epoch below this one is decided. */
  readonly settledEpoch: number;
}

/**
 * Aborts the open transactions of `owned`'s epochs from `settledEpoch` up
 * to (not including) `epoch` that `decideLingering` lets go; when none is
 * left open, records `settledEpoch = epoch` (if `epoch` is still current).
 * @returns `"settled"`, or `"left-open"` when pre-committed ones wait for the restored commits.
 * @throws {Error} naming the bucket and key when the log cannot be read or written.
 */
export async function abortLingering(
  txnLog: TransactionLog,
  owned: OwnedId,
  restoredCommitsDone: boolean,
): Promise<"settled" | "left-open"> {
  let leftOpen = 0;
  for (let epoch = owned.settledEpoch; epoch < owned.epoch; epoch++) {
    for (const txnId of await txnLog.openTxns(owned.transactionalId, epoch)) {
      const result = await txnLog.transition(
        txnId,
        (current) => decideLingering(current, restoredCommitsDone),
      );
      if (result.kind === "written") {
        log.info(
          `aborted lingering transaction ${txnId} (${result.record.records} records) in bucket ${txnLog.bucket}`,
        );
      } else if (result.kind === "done" && result.outcome === "left-open") {
        leftOpen++;
      }
    }
  }
  if (leftOpen > 0) return "left-open";
  // False when a newer epoch started: its owner settles, and this one is fenced.
  await txnLog.settle(owned.transactionalId, owned.epoch);
  return "settled";
}
