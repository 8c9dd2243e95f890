/**
 * Runs the retention check of `retention.ts` against a stream: reads the
 * facts its decision asks for (stream info, the boundary messages, the
 * deleted sequences, a headers-only count) until it reaches a verdict. The
 * producer runs it before every commit of a transaction with messages,
 * including the commits at restore.
 *
 * Cost in the common case (no deleted message in the stream): one stream
 * info and two message gets per committed transaction, i.e. per sink
 * subtask per checkpoint.
 *
 * @module
 */

import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { TXN_HEADER } from "./protocol.ts";
import { decideRetention, type RetentionFacts, type TxnExtent } from "./retention.ts";
import { withRetries } from "./transactions.ts";

/**
 * A pre-committed transaction's messages are no longer all in the stream,
 * so committing it cannot make every record visible. It fails the job
 * without restarts (restarting cannot bring the records back). The message
 * names the stream, the transaction and the missing sequences.
 */
export class TransactionLostError extends SuppressRestartsError {
  /** The stream. */
  readonly stream: string;
  /** The transaction. */
  readonly txnId: string;
  /**
   * Creates the error.
   * @param options the stream, the transaction, its record count and what is missing.
   */
  constructor(options: { stream: string; txnId: string; records: number; missing: string }) {
    super(
      `Cannot commit transaction ${options.txnId} of stream ${options.stream}: ${options.missing}; ` +
        `its ${options.records} pre-committed records cannot all become visible`,
    );
    this.name = "TransactionLostError";
    this.stream = options.stream;
    this.txnId = options.txnId;
  }
}

/** What {@linkcode verifyRetained} needs. */
export interface RetentionCheckOptions {
  /** A JetStream manager on an open connection. */
  readonly jsm: jetstreamApi.JetStreamManager;
  /** A JetStream client on the same connection (for the headers-only count). */
  readonly js: jetstreamApi.JetStreamClient;
  /** The stream. */
  readonly stream: string;
  /** Where the transaction's messages are. */
  readonly extent: TxnExtent;
  /** The transaction's record count, for the error. */
  readonly records: number;
}

/**
 * Checks that every message of a transaction is still in its stream (see
 * `retention.ts` for the steps and what they cannot detect).
 * @throws {TransactionLostError} naming the stream, sequences and transaction when some are gone.
 * @throws {Error} naming the stream when it cannot be read (after retries).
 */
export async function verifyRetained(options: RetentionCheckOptions): Promise<void> {
  const { jsm, js, stream, extent, records } = options;
  if (extent.messages === 0) return;
  const state = await withRetries(
    `read the state of stream ${stream} before committing ${extent.txnId}`,
    () => jsm.streams.info(stream),
  ).then((info) => info.state);
  let facts: RetentionFacts = {
    extent,
    stream: { firstSeq: state.first_seq, lastSeq: state.last_seq, numDeleted: state.num_deleted },
  };
  for (;;) {
    const step = decideRetention(facts);
    switch (step.kind) {
      case "retained":
        return;
      case "lost":
        throw new TransactionLostError({
          stream,
          txnId: extent.txnId,
          records,
          missing: step.missing,
        });
      case "read-boundaries": {
        const [first, last] = await Promise.all(
          [extent.firstSeq, extent.lastSeq].map((seq) => txnAt(jsm, stream, seq)),
        );
        facts = { ...facts, boundaries: { first, last } };
        break;
      }
      case "read-deleted": {
        const info = await withRetries(
          `read the deleted sequences of stream ${stream}`,
          () => jsm.streams.info(stream, { deleted_details: true }),
        );
        const deleted = (info.state.deleted ?? []).filter((s) =>
          s >= extent.firstSeq && s <= extent.lastSeq
        );
        facts = { ...facts, deletedInRange: deleted };
        break;
      }
      case "scan":
        facts = { ...facts, counted: await countTxnMessages(js, stream, extent) };
        break;
    }
  }
}

/** The `Weir-Txn` header of message `seq` (`""` without one), or null when it is gone. */
async function txnAt(
  jsm: jetstreamApi.JetStreamManager,
  stream: string,
  seq: number,
): Promise<string | null> {
  const message = await withRetries(
    `read sequence ${seq} of stream ${stream}`,
    () => jsm.streams.getMessage(stream, { seq }),
  );
  if (message === null) return null;
  return message.header?.get(TXN_HEADER) ?? "";
}

/** Counts the messages of the transaction in its range with a headers-only ordered consumer. */
async function countTxnMessages(
  js: jetstreamApi.JetStreamClient,
  stream: string,
  extent: TxnExtent,
): Promise<number> {
  return await withRetries(
    `count the messages of transaction ${extent.txnId} in stream ${stream}`,
    async () => {
      const consumer = await js.consumers.get(stream, {
        opt_start_seq: extent.firstSeq,
        headers_only: true,
      });
      let count = 0;
      try {
        if ((await consumer.info(true)).num_pending === 0) return 0;
        for await (const m of await consumer.consume()) {
          if (m.seq > extent.lastSeq) break;
          if (m.headers?.get(TXN_HEADER) === extent.txnId) count++;
          if (m.seq >= extent.lastSeq || m.info.pending === 0) break;
        }
      } finally {
        await consumer.delete().catch(() => {});
      }
      return count;
    },
  );
}
