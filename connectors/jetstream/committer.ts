/**
 * The JetStream sink's committer (Flink's `KafkaCommitter`): it makes
 * pre-committed transactions visible, open → committed in the transaction
 * log (`protocol.ts`), after checking that their messages are still in the
 * stream (`retention_check.ts`). One per sink subtask, on its own
 * connection.
 *
 * ## Outcomes, per request
 *
 * | transaction | signal |
 * |---|---|
 * | open, messages all present | committed (no signal) |
 * | already committed | `signalAlreadyCommitted` |
 * | aborted or without a record | `signalFailedWithKnownReason` (`TransactionStateError`): its records can never become visible |
 * | messages gone | `signalFailedWithKnownReason` (`TransactionLostError`) |
 * | the log or stream cannot be reached (after the log's own retries) | `signalFailedWithUnknownReason`: the attempt fails, the restore commits again |
 *
 * The first failure stops the round: the later requests get the same
 * signal, so visibility follows checkpoint order.
 *
 * ## Fencing
 *
 * A commit checks no epoch: the sink operator commits only transactions of
 * completed checkpoints (or restored from one), which every newer owner of
 * the transactionalId commits too, so a late commit by a zombie changes
 * nothing a newer attempt would not.
 *
 * ## Lingering pre-committed transactions
 *
 * After this subtask commits the first committable of a checkpoint later
 * than the restored one (or any, on a fresh start), every subtask has
 * committed what it restored (they do so before their first checkpoint).
 * The committer then aborts the still-open transactions of older epochs of
 * the transactionalIds its subtask owns (`lingering.ts`), provided the
 * current epoch belongs to its own job and attempt (a zombie committer
 * leaves them to the newer attempt).
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import type { CommitRequest, Committer, CommitterInitContext } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { abortLingering } from "./lingering.ts";
import type { JetStreamTxn } from "./producer.ts";
import {
  decideCommit,
  ownedSubtasks,
  transactionalIdOf,
  TransactionStateError,
} from "./protocol.ts";
import { verifyRetained } from "./retention_check.ts";
import type { TransactionLog } from "./transactions.ts";

/** What a commit of one transaction found. */
export type CommitOutcome = "committed" | "already-committed";

/** Options of {@linkcode JetStreamCommitter}. */
export interface JetStreamCommitterOptions {
  /** An open connection, closed by the committer's `close`. */
  readonly nc: NatsConnection;
  /** The transaction log on that connection. */
  readonly log: TransactionLog;
  /** The target stream. */
  readonly stream: string;
  /** The transactionalId prefix. */
  readonly prefix: string;
  /** The committer's subtask, attempt and job, and the checkpoint restored. */
  readonly context: CommitterInitContext;
}

/**
 * Commits one pre-committed transaction: checks its messages are in the
 * stream, then open → committed. Idempotent.
 * @returns whether it committed it now or found it committed.
 * @throws {TransactionStateError} when it is aborted or has no record.
 * @throws {TransactionLostError} when some of its messages are gone.
 */
export async function commitTransaction(
  options: {
    readonly log: TransactionLog;
    readonly jsm: jetstreamApi.JetStreamManager;
    readonly js: jetstreamApi.JetStreamClient;
    readonly stream: string;
  },
  txn: JetStreamTxn,
): Promise<CommitOutcome> {
  const { log, stream } = options;
  const record = (await log.getTxn(txn.id))?.value;
  if (record?.state === "open" && record.preCommitted && record.records > 0) {
    await verifyRetained({
      jsm: options.jsm,
      js: options.js,
      stream,
      extent: {
        txnId: txn.id,
        messages: record.messages ?? record.records,
        firstSeq: record.firstSeq ?? 0,
        lastSeq: record.lastSeq ?? 0,
      },
      records: record.records,
    });
  }
  const result = await log.transition(txn.id, decideCommit);
  if (result.kind === "written") return "committed";
  if (result.kind === "done") return "already-committed";
  throw new TransactionStateError(
    `Cannot commit transaction ${txn.id} in bucket ${log.bucket}: it is ${result.reason}; ` +
      `its ${txn.records} pre-committed records (stream ${stream}, sequences ` +
      `${txn.firstSeq}..${txn.lastSeq}) can never become visible`,
    txn.id,
  );
}

function isKnownReason(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    if (e instanceof SuppressRestartsError || e instanceof TransactionStateError) return true;
  }
  return false;
}

/** A sink subtask's committer; see the module docs. */
export class JetStreamCommitter implements Committer<JetStreamTxn> {
  readonly #o: JetStreamCommitterOptions;
  readonly #jsm: Promise<jetstreamApi.JetStreamManager>;
  readonly #js: jetstreamApi.JetStreamClient;
  #settled = false;
  #closed = false;

  /** Creates the committer on an open connection (see the options). */
  constructor(options: JetStreamCommitterOptions) {
    this.#o = options;
    this.#jsm = jetstreamApi.jetstreamManager(options.nc);
    this.#jsm.catch(() => {}); // reported by the commit that needs it
    this.#js = jetstreamApi.jetstream(options.nc);
  }

  /** Commits `requests` in order; see the module docs for the signals. */
  async commit(requests: readonly CommitRequest<JetStreamTxn>[]): Promise<void> {
    const restored = this.#o.context.restoredCheckpointId;
    let failure: { known: boolean; error: Error } | undefined;
    let committedNewer = false;
    for (const request of requests) {
      if (failure === undefined) {
        try {
          const outcome = await commitTransaction(
            { log: this.#o.log, jsm: await this.#jsm, js: this.#js, stream: this.#o.stream },
            request.committable,
          );
          if (outcome === "already-committed") request.signalAlreadyCommitted();
          if (restored === undefined || request.checkpointId > restored) committedNewer = true;
          continue;
        } catch (error) {
          failure = {
            known: isKnownReason(error),
            error: error instanceof Error ? error : new Error(String(error)),
          };
        }
      }
      if (failure.known) request.signalFailedWithKnownReason(failure.error);
      else request.signalFailedWithUnknownReason(failure.error);
    }
    if (failure === undefined && committedNewer && !this.#settled) await this.#abortLingering();
  }

  /** Closes the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#o.nc.close();
  }

  /** Aborts the pre-committed lingering transactions of the owned ids; see the module docs. */
  async #abortLingering(): Promise<void> {
    const { log, prefix, context } = this.#o;
    const known = await log.listProducerSubtasks(prefix);
    let settled = true;
    for (const subtask of ownedSubtasks(context.subtaskIndex, context.parallelism, known)) {
      const transactionalId = transactionalIdOf(prefix, subtask);
      const producer = (await log.getProducer(transactionalId))?.value;
      const owner = producer?.owner;
      if (
        producer === undefined || owner === undefined || owner.jobId !== context.jobId ||
        owner.attempt !== context.attempt
      ) {
        continue; // not ours (yet, or any more): its owner settles it
      }
      if (producer.settledEpoch >= producer.epoch) continue;
      const outcome = await abortLingering(log, {
        transactionalId,
        epoch: producer.epoch,
        settledEpoch: producer.settledEpoch,
      }, true);
      if (outcome !== "settled") settled = false;
    }
    this.#settled = settled;
  }
}
