/**
 * The JetStream sink's committable: a pre-committed transaction handle
 * ({@linkcode JetStreamTxn}), checkpointed as MessagePack and validated
 * when read back. Pure.
 *
 * A committable read back is accepted only when every field has its shape
 * and the fields agree with each other:
 *
 * | field | rule |
 * |---|---|
 * | `id` | a txnId (`protocol.ts`, "Names") |
 * | `transactionalId`, `epoch` | those of `id` |
 * | `records`, `messages`, `firstSeq`, `lastSeq` | non-negative safe integers |
 * | `messages` | at most `records`; 0 exactly when `records` is 0 |
 * | `firstSeq`, `lastSeq` | 0 without messages, else `1 <= firstSeq <= lastSeq` and `lastSeq - firstSeq + 1 >= messages` |
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkJetStreamCommittable } from "./committable.ts";
 *
 * const txn = { id: "out.0.2.5", transactionalId: "out.0", epoch: 2, records: 10, messages: 1, firstSeq: 7, lastSeq: 7 };
 * assert.deepEqual(checkJetStreamCommittable(txn), txn);
 * assert.throws(() => checkJetStreamCommittable({ ...txn, epoch: 3 }), /field 'epoch' must be 2, the epoch of id/);
 * ```
 *
 * @module
 */

import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import type { JetStreamTxn } from "./producer.ts";
import { parseTxnId } from "./protocol.ts";

const WHAT = "JetStream sink committable";

function show(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 120 ? `${text.slice(0, 120)}…` : text;
  } catch {
    return String(value);
  }
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Validates a committable read back from a checkpoint.
 * @returns a fresh {@linkcode JetStreamTxn} with the same fields.
 * @throws {SinkStateError} naming the field, the rule and the current value.
 */
export function checkJetStreamCommittable(raw: unknown): JetStreamTxn {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SinkStateError(WHAT, `it must be an object: current value is ${show(raw)}`);
  }
  const v = raw as Record<string, unknown>;
  if (typeof v.id !== "string") {
    throw new SinkStateError(WHAT, `field 'id' must be a string: current value is ${show(v.id)}`);
  }
  const parts = parseTxnId(v.id);
  if (parts === undefined) {
    throw new SinkStateError(
      WHAT,
      `field 'id' must be a txnId <prefix>.<subtask>.<epoch>.<counter>: current value is ${
        show(v.id)
      }`,
    );
  }
  if (v.transactionalId !== parts.transactionalId) {
    throw new SinkStateError(
      WHAT,
      `field 'transactionalId' must be ${
        show(parts.transactionalId)
      }, the transactionalId of id ${v.id}: current value is ${show(v.transactionalId)}`,
    );
  }
  if (v.epoch !== parts.epoch) {
    throw new SinkStateError(
      WHAT,
      `field 'epoch' must be ${parts.epoch}, the epoch of id ${v.id}: current value is ${
        show(v.epoch)
      }`,
    );
  }
  for (const field of ["records", "messages", "firstSeq", "lastSeq"] as const) {
    if (!isCount(v[field])) {
      throw new SinkStateError(
        WHAT,
        `field '${field}' of ${v.id} must be a non-negative integer: current value is ${
          show(v[field])
        }`,
      );
    }
  }
  const records = v.records as number;
  const messages = v.messages as number;
  const firstSeq = v.firstSeq as number;
  const lastSeq = v.lastSeq as number;
  if (messages > records || (messages === 0) !== (records === 0)) {
    throw new SinkStateError(
      WHAT,
      `${v.id} has ${messages} messages for ${records} records: each message holds at least one record`,
    );
  }
  const seqsOk = messages === 0
    ? firstSeq === 0 && lastSeq === 0
    : firstSeq >= 1 && firstSeq <= lastSeq && lastSeq - firstSeq + 1 >= messages;
  if (!seqsOk) {
    throw new SinkStateError(
      WHAT,
      `${v.id} cannot have ${messages} messages at sequences ${firstSeq}..${lastSeq}`,
    );
  }
  return {
    id: v.id,
    transactionalId: parts.transactionalId,
    epoch: parts.epoch,
    records,
    messages,
    firstSeq,
    lastSeq,
  };
}
