/**
 * Before a commit, are the transaction's messages still in the stream? A
 * pure decision over facts read from the stream (this module performs no
 * I/O; `retention_check.ts` reads the facts and runs it). DESIGN §12: a
 * commit never hides loss. Retention by age, count or bytes, a purge or a
 * deleted message may remove pre-committed records before the commit makes
 * them visible; committing then would report success for records nobody
 * can read. Kafka has the same hazard (a log start offset past a
 * transaction's first offset) and leaves it to the reader; Weir fails the
 * job without restarts instead, naming the stream, the sequences and the
 * transaction.
 *
 * ## The check, cheapest first
 *
 * 1. Stream state: the transaction's `firstSeq..lastSeq` must lie inside
 *    the stream's `first_seq..last_seq` (retention by age, count or bytes,
 *    and a full purge, move `first_seq` past removed messages).
 * 2. The boundary messages `firstSeq` and `lastSeq` must exist and carry
 *    `Weir-Txn: <txnId>` (a deleted boundary, a stream deleted and created
 *    again with reused sequences).
 * 3. Interior holes: with 1 or 2 messages the boundaries are everything.
 *    Otherwise, a stream whose `num_deleted` is 0 has no hole at all.
 *    Else the deleted sequences inside the range are read
 *    (`deleted_details`): none, and every message is there. When the
 *    transaction's messages are contiguous (`lastSeq - firstSeq + 1 ==
 *    messages`), a deleted sequence in the range is one of its own: lost.
 *    When other writers' messages are interleaved, the transaction's
 *    messages in the range are counted (a headers-only scan) and must
 *    number `messages`.
 *
 * ## What it cannot detect
 *
 * - Removal after the check: retention that removes messages between the
 *   check and the commit's compare-and-set (milliseconds), or at any time
 *   after the commit (that is ordinary retention of committed data).
 * - A transaction pre-committed by an older writer without a `messages`
 *   count: it is taken as one message per record, which only holds for
 *   such writers (they published one record per message).
 * - A message replaced by a same-sequence message of the same transaction
 *   id, which no NATS operation produces.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideRetention } from "./retention.ts";
 *
 * const extent = { txnId: "p.0.1.4", messages: 3, firstSeq: 10, lastSeq: 12 };
 * const ok = { firstSeq: 1, lastSeq: 20, numDeleted: 0 };
 * const boundaries = { first: "p.0.1.4", last: "p.0.1.4" };
 * assert.deepEqual(decideRetention({ extent, stream: ok, boundaries }), { kind: "retained" });
 * const expired = decideRetention({ extent, stream: { ...ok, firstSeq: 12 }, boundaries });
 * assert.equal(expired.kind, "lost");
 * ```
 *
 * @module
 */

/** Where a pre-committed transaction's messages are. */
export interface TxnExtent {
  /** The transaction. */
  readonly txnId: string;
  /** Its messages in the stream. */
  readonly messages: number;
  /** The sequence of its first message (0 when it has none). */
  readonly firstSeq: number;
  /** The sequence of its last message (0 when it has none). */
  readonly lastSeq: number;
}

/** The stream's state (JetStream's `StreamState`). */
export interface StreamFacts {
  /** `first_seq`: the oldest sequence still stored. */
  readonly firstSeq: number;
  /** `last_seq`: the newest sequence ever stored. */
  readonly lastSeq: number;
  /** `num_deleted`: sequences between the two that were removed. */
  readonly numDeleted: number;
}

/**
 * The `Weir-Txn` header of the boundary messages: a string (`""` when the
 * message has no such header), `null` when the message is gone, or
 * `undefined` when not read yet.
 */
export interface BoundaryFacts {
  /** The message at `firstSeq`. */
  readonly first: string | null | undefined;
  /** The message at `lastSeq`. */
  readonly last: string | null | undefined;
}

/** The facts known so far; each later step adds one. */
export interface RetentionFacts {
  /** The transaction. */
  readonly extent: TxnExtent;
  /** The stream's state. */
  readonly stream: StreamFacts;
  /** The boundary messages, once read. */
  readonly boundaries?: BoundaryFacts;
  /** The deleted sequences in `firstSeq..lastSeq`, once read. */
  readonly deletedInRange?: readonly number[];
  /** The transaction's messages counted in `firstSeq..lastSeq`, once scanned. */
  readonly counted?: number;
}

/** What to do next, or the verdict. */
export type RetentionStep =
  | { readonly kind: "retained" }
  | { readonly kind: "lost"; readonly missing: string }
  | { readonly kind: "read-boundaries" }
  | { readonly kind: "read-deleted" }
  | { readonly kind: "scan" };

/**
 * Decides, from the facts read so far, whether every message of the
 * transaction is still stored, or which fact to read next (see the module
 * docs for the steps). Performs no I/O.
 * @returns `retained`, `lost` with a description of the missing sequences, or the next read.
 */
export function decideRetention(facts: RetentionFacts): RetentionStep {
  const { extent, stream } = facts;
  if (extent.messages === 0) return { kind: "retained" };
  const range = `${extent.firstSeq}..${extent.lastSeq}`;
  if (extent.firstSeq < stream.firstSeq) {
    const upTo = Math.min(extent.lastSeq, stream.firstSeq - 1);
    return {
      kind: "lost",
      missing: `sequences ${extent.firstSeq}..${upTo} of its ${range} are gone: the stream's ` +
        `first sequence is ${stream.firstSeq} (retention by age, count or bytes, or a purge)`,
    };
  }
  if (extent.lastSeq > stream.lastSeq) {
    return {
      kind: "lost",
      missing: `its sequences ${range} pass the stream's last sequence ${stream.lastSeq} ` +
        `(was the stream deleted and created again?)`,
    };
  }
  const b = facts.boundaries;
  if (b === undefined || b.first === undefined || b.last === undefined) {
    return { kind: "read-boundaries" };
  }
  for (const [seq, txn] of [[extent.firstSeq, b.first], [extent.lastSeq, b.last]] as const) {
    if (txn === null) {
      return { kind: "lost", missing: `its message at sequence ${seq} (of ${range}) is gone` };
    }
    if (txn !== extent.txnId) {
      return {
        kind: "lost",
        missing: `sequence ${seq} (of ${range}) holds a message of ${
          txn === "" ? "no transaction" : `transaction ${txn}`
        }, not of this one`,
      };
    }
  }
  if (extent.messages <= 2 || stream.numDeleted === 0) return { kind: "retained" };
  const deleted = facts.deletedInRange;
  if (deleted === undefined) return { kind: "read-deleted" };
  if (deleted.length === 0) return { kind: "retained" };
  if (extent.lastSeq - extent.firstSeq + 1 === extent.messages) {
    return {
      kind: "lost",
      missing: `sequences ${describe(deleted)} of its ${range} were deleted`,
    };
  }
  if (facts.counted === undefined) return { kind: "scan" };
  if (facts.counted === extent.messages) return { kind: "retained" };
  return {
    kind: "lost",
    missing: `${extent.messages - facts.counted} of its ${extent.messages} messages in ${range} ` +
      `are gone (deleted sequences in the range: ${describe(deleted)})`,
  };
}

/** Up to 10 sequences, then how many more. */
function describe(seqs: readonly number[]): string {
  const shown = seqs.slice(0, 10).join(", ");
  return seqs.length > 10 ? `${shown} and ${seqs.length - 10} more` : shown;
}
