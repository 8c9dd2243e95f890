/**
 * The split of a `JetStreamSource` and the check of split state read back
 * from a checkpoint ({@linkcode decodeJetStreamSplit}): every value either
 * is a well-formed {@linkcode JetStreamSplit} or is rejected with a
 * {@linkcode JetStreamSplitStateError} that names the split, the field and
 * its value. Splits are checkpointed as MessagePack by the source operator
 * (`_splits` state, see `runtime/task/operators/source_operator.ts`).
 *
 * ## Format
 *
 * | field     | type                 | rule                                                     |
 * | --------- | -------------------- | -------------------------------------------------------- |
 * | `splitId` | string               | `<stream>` when `subject` is null, else `<stream>:<subject>` |
 * | `stream`  | string               | not empty                                                |
 * | `subject` | string or null       | not empty; null reads the whole stream                   |
 * | `offset`  | integer ≥ 0          | sequence of the last record emitted or skipped (0: none) |
 * | `stopAt`  | integer ≥ 0 or null  | bounded: last sequence to read; null: unbounded          |
 *
 * No other field is allowed: an unknown field means the state was written
 * by another format, and guessing at it could lose or repeat records.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeJetStreamSplit } from "./split_state.ts";
 *
 * const split = decodeJetStreamSplit(
 *   { splitId: "orders:orders.eu", stream: "orders", subject: "orders.eu", offset: 7, stopAt: null },
 *   "source 'orders'",
 * );
 * assert.equal(split.offset, 7);
 * assert.throws(
 *   () => decodeJetStreamSplit({ splitId: "orders", stream: "orders", subject: null, offset: -1, stopAt: null }, "source 'orders'"),
 *   /'offset' must be an integer >= 0: current value is -1/,
 * );
 * ```
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";
import type { SourceSplit } from "../../runtime/api/source.ts";

/** A split of a `JetStreamSource`. Plain data, MessagePack-encodable; see the module docs. */
export interface JetStreamSplit extends SourceSplit {
  /** `<stream>` or `<stream>:<subject>`. */
  readonly splitId: string;
  /** The stream. */
  readonly stream: string;
  /** The split's subject filter, or null for the whole stream. */
  readonly subject: string | null;
  /** The sequence of the last record emitted or skipped (0: none yet). */
  readonly offset: number;
  /** Bounded: the last sequence to read (inclusive); null when unbounded. */
  readonly stopAt: number | null;
}

/**
 * Split state that is not a {@linkcode JetStreamSplit}: the checkpoint is
 * damaged or of another format. A restart would restore it again, so it
 * fails the job without restarts.
 */
export class JetStreamSplitStateError extends SuppressRestartsError {
  /**
   * Creates the error.
   * @param message what was wrong, and where.
   */
  constructor(message: string) {
    super(message);
    this.name = "JetStreamSplitStateError";
  }
}

const FIELDS = new Set(["splitId", "stream", "subject", "offset", "stopAt"]);
const MAX_QUOTED = 200;

/** A value for an error message: JSON, shortened; `undefined` and the unquotable said plainly. */
function show(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "bigint") return `${value}n`;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) text = Object.prototype.toString.call(value);
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
}

/**
 * The split `raw` holds, checked field by field (see the module docs).
 * @param raw a split as decoded from a checkpoint (or given to `addSplits`).
 * @param where who reads it, for the error (e.g. `JetStreamSource 'orders'`).
 * @returns a fresh split with exactly the five fields.
 * @throws {JetStreamSplitStateError} naming `where`, the split id when it has
 *   one, the field and its current value.
 */
export function decodeJetStreamSplit(raw: unknown, where: string): JetStreamSplit {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new JetStreamSplitStateError(
      `Cannot restore a split of ${where}: a split must be an object: current value is ${
        show(raw)
      }`,
    );
  }
  const r = raw as Record<string, unknown>;
  const split = typeof r.splitId === "string" ? `split ${show(r.splitId)}` : "a split";
  const fail = (rule: string, value: unknown): never => {
    throw new JetStreamSplitStateError(
      `Cannot restore ${split} of ${where}: ${rule}: current value is ${show(value)}`,
    );
  };
  for (const key of Object.keys(r)) {
    if (!FIELDS.has(key)) fail(`field ${show(key)} is not a field of a JetStream split`, r[key]);
  }
  const { splitId, stream, subject, offset, stopAt } = r;
  if (typeof stream !== "string" || stream === "") {
    fail("'stream' must be a non-empty string", stream);
  }
  if (subject !== null && (typeof subject !== "string" || subject === "")) {
    fail("'subject' must be a non-empty string or null", subject);
  }
  const expectedId = subject === null ? stream as string : `${stream}:${subject}`;
  if (splitId !== expectedId) {
    fail(`'splitId' must be ${show(expectedId)} (from 'stream' and 'subject')`, splitId);
  }
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
    fail("'offset' must be an integer >= 0", offset);
  }
  if (
    stopAt !== null && (typeof stopAt !== "number" || !Number.isSafeInteger(stopAt) || stopAt < 0)
  ) {
    fail("'stopAt' must be an integer >= 0 or null", stopAt);
  }
  return {
    splitId: expectedId,
    stream: stream as string,
    subject: subject as string | null,
    offset: offset as number,
    stopAt: stopAt as number | null,
  };
}
