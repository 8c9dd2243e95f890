/**
 * The XA transaction ids (xids) of the MariaDB XA sink, and the pure
 * decision of which lingering ones a restoring writer rolls back. Performs
 * no I/O.
 *
 * ## Xid format
 *
 * An XA xid is `(gtrid, bqual, formatID)`: two byte strings of at most 64
 * bytes each and a signed 32-bit integer (X/Open XA; MariaDB's `XA START
 * gtrid, bqual, formatID`). The sink's xids are ASCII:
 *
 * | part       | value                                   | example                  |
 * |------------|-----------------------------------------|--------------------------|
 * | `formatID` | {@linkcode WEIR_XID_FORMAT_ID}, "WEIR" in ASCII (`0x57454952`) | `1464158546` |
 * | `gtrid`    | `weir:<prefix>:<owner>:<base>`           | `weir:bills:2:41`        |
 * | `bqual`    | `<writerId>.<sequence>`                  | `k3j9x0q2ab.7`           |
 *
 * - `prefix`: the sink's xid prefix, 1–32 characters of `[A-Za-z0-9_.-]`;
 *   by default derived from the sink's uid ({@linkcode defaultXidPrefix}),
 *   so it is stable across jobs: a job resumed from a savepoint finds the
 *   xids its predecessor left prepared.
 * - `owner`: the writer's subtask index (decimal, no leading zeros).
 * - `base`: the last checkpoint id whose barrier the writer had passed when
 *   the transaction started (`XA START`); the restored checkpoint id right
 *   after a restore, 0 on a fresh start. The transaction is prepared at a
 *   later barrier, so its checkpoint is `> base`.
 * - `writerId`: 10 random base-36 characters per writer incarnation;
 *   `sequence` counts the incarnation's transactions from 1. Together they
 *   make every xid unique across attempts and jobs, which the commit log
 *   (keyed by xid) relies on.
 *
 * ## Which lingering xids a writer rolls back ({@linkcode decideLingeringRollbacks})
 *
 * A writer restored from checkpoint *n* rolls back the prepared xids of its
 * prefix whose `owner % parallelism` is its subtask index and whose `base`
 * is `>= n`. Why that is safe without knowing the other subtasks' restored
 * committables: a transaction with `base >= n` started after barrier *n*,
 * so it was prepared for a checkpoint after *n* and no committable of
 * checkpoint *n* names it. A transaction with `base < n` was prepared at
 * the first barrier after `base`, which is at most *n* (every subtask passed
 * barrier *n*, since *n* completed): it is one of *n*'s committables (some
 * subtask commits it during its restore, maybe at this very moment) or was
 * committed before. The owner split gives each old owner to exactly one new
 * subtask at any parallelism, and keeps a writer away from the xids another
 * new writer is starting. On a fresh start (no restored checkpoint) every
 * prepared xid of the owner is rolled back, as Kafka's sink aborts the
 * lingering transactions of its transactional-id prefix: two jobs sharing a
 * prefix would roll back each other's transactions.
 *
 * This needs checkpoint ids that increase along a lineage of restores:
 * Weir's coordinator continues the id counter after the restored
 * checkpoint, also when a new job resumes another job's checkpoint (as
 * Flink resets its `CheckpointIDCounter` to a savepoint's id + 1), and the
 * writer refuses a barrier id that is not above its base.
 *
 * @module
 */

/** The XA `formatID` of every xid the sink makes: "WEIR" in ASCII, `0x57454952`. */
export const WEIR_XID_FORMAT_ID = 0x57454952;

/** The largest subtask index an xid may name (Weir's max parallelism bound, 2^15). */
export const MAX_XID_OWNER = 32767;

const PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,32}$/;
const WRITER_ID_PATTERN = /^[0-9a-z]{10}$/;
const DECIMAL_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

/** An XA xid as the server holds it (`XA RECOVER`), bytes decoded as Latin-1. */
export interface Xid {
  /** The global transaction id, at most 64 bytes. */
  readonly gtrid: string;
  /** The branch qualifier, at most 64 bytes. */
  readonly bqual: string;
  /** The format id, a signed 32-bit integer. */
  readonly formatId: number;
}

/** The parts of one of the sink's xids (see the module docs' table). */
export interface WeirXid {
  /** The sink's xid prefix. */
  readonly prefix: string;
  /** The subtask index of the writer that started it. */
  readonly owner: number;
  /** The last checkpoint id the writer had passed at `XA START` (0 before any). */
  readonly base: number;
  /** The writer incarnation's random id (10 base-36 characters). */
  readonly writerId: string;
  /** The transaction's number within the writer incarnation, from 1. */
  readonly sequence: number;
}

/** An xid is not one of the sink's: `message` names the part and its value. */
export class XidFormatError extends Error {
  /**
   * Builds the error.
   * @param message what is wrong, with the current value.
   */
  constructor(message: string) {
    super(message);
    this.name = "XidFormatError";
  }
}

/**
 * Checks an xid prefix.
 * @param prefix the candidate.
 * @param where who passed it, for the message (e.g. `MariaDbXaSink "bills"`).
 * @returns `prefix`.
 * @throws {RangeError} unless it is 1–32 characters of `[A-Za-z0-9_.-]`.
 */
export function checkXidPrefix(prefix: unknown, where: string): string {
  if (typeof prefix !== "string" || !PREFIX_PATTERN.test(prefix)) {
    throw new RangeError(
      `${where}: xidPrefix must be 1 to 32 characters of [A-Za-z0-9_.-]: current value is ${
        JSON.stringify(prefix)
      }`,
    );
  }
  return prefix;
}

/**
 * The default xid prefix of a sink with `uid`: the uid itself when it is a
 * valid prefix; otherwise its first 23 characters with every character
 * outside `[A-Za-z0-9_.-]` replaced by `_`, then `-` and the 32-bit FNV-1a
 * hash of the whole uid in hex (so two uids that clean up alike differ).
 * @param uid the sink's uid.
 * @returns a valid prefix, the same for the same uid in every job.
 */
export function defaultXidPrefix(uid: string): string {
  if (PREFIX_PATTERN.test(uid)) return uid;
  const clean = uid.slice(0, 23).replace(/[^A-Za-z0-9_.-]/g, "_");
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(uid)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${clean}-${hash.toString(16).padStart(8, "0")}`;
}

/**
 * A fresh writer id: 10 random base-36 characters (about 51 bits).
 * @returns the id.
 */
export function newWriterId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  let id = "";
  for (const b of bytes) id += (b % 36).toString(36);
  return id;
}

/**
 * Formats one of the sink's xids.
 * @param parts the xid's parts.
 * @returns the xid, with `formatId` {@linkcode WEIR_XID_FORMAT_ID}.
 * @throws {XidFormatError} when a part is out of range (names it and its value).
 */
export function formatXid(parts: WeirXid): Xid {
  checkXidPrefix(parts.prefix, "formatXid");
  if (!Number.isSafeInteger(parts.owner) || parts.owner < 0 || parts.owner > MAX_XID_OWNER) {
    throw new XidFormatError(
      `xid owner must be an integer in [0, ${MAX_XID_OWNER}]: current value is ${parts.owner}`,
    );
  }
  if (!Number.isSafeInteger(parts.base) || parts.base < 0) {
    throw new XidFormatError(
      `xid base checkpoint must be a non-negative integer: current value is ${parts.base}`,
    );
  }
  if (!WRITER_ID_PATTERN.test(parts.writerId)) {
    throw new XidFormatError(
      `xid writer id must be 10 characters of [0-9a-z]: current value is ${
        JSON.stringify(parts.writerId)
      }`,
    );
  }
  if (!Number.isSafeInteger(parts.sequence) || parts.sequence < 1) {
    throw new XidFormatError(
      `xid sequence must be a positive integer: current value is ${parts.sequence}`,
    );
  }
  return {
    gtrid: `weir:${parts.prefix}:${parts.owner}:${parts.base}`,
    bqual: `${parts.writerId}.${parts.sequence}`,
    formatId: WEIR_XID_FORMAT_ID,
  };
}

function decimal(text: string | undefined, what: string, xid: Xid): number {
  if (text === undefined || !DECIMAL_PATTERN.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new XidFormatError(
      `${what} of xid ${describeXid(xid)} must be a decimal integer: current value is ${
        JSON.stringify(text)
      }`,
    );
  }
  return Number(text);
}

/**
 * Parses one of the sink's xids.
 * @param xid an xid (e.g. from `XA RECOVER`).
 * @returns its parts.
 * @throws {XidFormatError} when it is not in the sink's format (another
 *   format id, another gtrid or bqual shape), naming the part and its value.
 */
export function parseXid(xid: Xid): WeirXid {
  if (xid.formatId !== WEIR_XID_FORMAT_ID) {
    throw new XidFormatError(
      `formatID of xid ${describeXid(xid)} must be ${WEIR_XID_FORMAT_ID}: current value is ${
        String(xid.formatId)
      }`,
    );
  }
  const parts = xid.gtrid.split(":");
  if (parts.length !== 4 || parts[0] !== "weir") {
    throw new XidFormatError(
      `gtrid of xid ${describeXid(xid)} must be weir:<prefix>:<owner>:<base>: current value is ${
        JSON.stringify(xid.gtrid)
      }`,
    );
  }
  const prefix = parts[1] ?? "";
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new XidFormatError(
      `prefix of xid ${describeXid(xid)} must be 1 to 32 characters of [A-Za-z0-9_.-]: ` +
        `current value is ${JSON.stringify(prefix)}`,
    );
  }
  const owner = decimal(parts[2], "owner", xid);
  if (owner > MAX_XID_OWNER) {
    throw new XidFormatError(
      `owner of xid ${
        describeXid(xid)
      } must be at most ${MAX_XID_OWNER}: current value is ${owner}`,
    );
  }
  const base = decimal(parts[3], "base checkpoint", xid);
  const dot = xid.bqual.indexOf(".");
  const writerId = dot < 0 ? xid.bqual : xid.bqual.slice(0, dot);
  if (dot < 0 || !WRITER_ID_PATTERN.test(writerId)) {
    throw new XidFormatError(
      `bqual of xid ${describeXid(xid)} must be <10 characters of [0-9a-z]>.<sequence>: ` +
        `current value is ${JSON.stringify(xid.bqual)}`,
    );
  }
  const sequence = decimal(xid.bqual.slice(dot + 1), "sequence", xid);
  if (sequence < 1) {
    throw new XidFormatError(
      `sequence of xid ${describeXid(xid)} must be positive: current value is ${sequence}`,
    );
  }
  return { prefix, owner, base, writerId, sequence };
}

/**
 * Whether `xid` is one of the sink's xids (see {@linkcode parseXid}).
 * @returns its parts, or `undefined` for a foreign xid.
 */
export function tryParseXid(xid: Xid): WeirXid | undefined {
  try {
    return parseXid(xid);
  } catch (e) {
    if (e instanceof XidFormatError) return undefined;
    throw e;
  }
}

/**
 * An xid as XA SQL arguments: `X'<hex gtrid>',X'<hex bqual>',<formatID>`.
 * Hex literals carry any bytes, so no quoting can go wrong.
 * @param xid the xid.
 * @returns the text to put after `XA COMMIT`, `XA ROLLBACK`, etc.
 */
export function xidSql(xid: Xid): string {
  return `X'${latin1Hex(xid.gtrid)}',X'${latin1Hex(xid.bqual)}',${xid.formatId | 0}`;
}

function latin1Hex(text: string): string {
  let hex = "";
  for (let i = 0; i < text.length; i++) {
    hex += (text.charCodeAt(i) & 0xff).toString(16).padStart(2, "0");
  }
  return hex;
}

/**
 * How an xid reads in logs and errors: `'<gtrid>','<bqual>',<formatID>`.
 * @param xid the xid.
 * @returns the text.
 */
export function describeXid(xid: Xid): string {
  return `${JSON.stringify(xid.gtrid)},${JSON.stringify(xid.bqual)},${xid.formatId}`;
}

/**
 * Reads one row of `XA RECOVER` (MariaDB/MySQL: `formatID`,
 * `gtrid_length`, `bqual_length`, `data` with gtrid and bqual back to back).
 * @param row the row, as the driver returns it (numbers or bigints; `data`
 *   as bytes or a string).
 * @returns the xid, bytes decoded as Latin-1.
 * @throws {XidFormatError} when the row does not have that shape (names the field and value).
 */
export function xidFromRecoverRow(row: Record<string, unknown>): Xid {
  const formatId = Number(row.formatID);
  const gtridLength = Number(row.gtrid_length);
  const bqualLength = Number(row.bqual_length);
  const data = row.data;
  const bytes = data instanceof Uint8Array
    ? data
    : typeof data === "string"
    ? Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)
    : undefined;
  if (
    !Number.isSafeInteger(formatId) || !Number.isSafeInteger(gtridLength) ||
    !Number.isSafeInteger(bqualLength) || bytes === undefined || gtridLength < 0 ||
    bqualLength < 0 || gtridLength + bqualLength > bytes.length
  ) {
    throw new XidFormatError(
      `XA RECOVER row must have formatID, gtrid_length, bqual_length and data of that length: ` +
        `current value is ${JSON.stringify(row, (_k, v) => typeof v === "bigint" ? String(v) : v)}`,
    );
  }
  const latin1 = (from: number, to: number) => {
    let text = "";
    for (let i = from; i < to; i++) text += String.fromCharCode(bytes[i]!);
    return text;
  };
  return {
    formatId,
    gtrid: latin1(0, gtridLength),
    bqual: latin1(gtridLength, gtridLength + bqualLength),
  };
}

/** What {@linkcode decideLingeringRollbacks} decides on. */
export interface LingeringFacts {
  /** Every prepared xid on the server (`XA RECOVER`), any format. */
  readonly recovered: readonly Xid[];
  /** The sink's xid prefix. */
  readonly prefix: string;
  /** The restoring writer's subtask index. */
  readonly subtaskIndex: number;
  /** The sink's (new) parallelism. */
  readonly parallelism: number;
  /** The checkpoint restored from; `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
}

/**
 * The prepared xids a restoring writer rolls back (see the module docs for
 * why this is safe at any parallelism). Performs no I/O.
 * @param facts what the server holds and who is asking.
 * @returns the xids to roll back, in `recovered` order.
 */
export function decideLingeringRollbacks(facts: LingeringFacts): Xid[] {
  const rollbacks: Xid[] = [];
  for (const xid of facts.recovered) {
    const parts = tryParseXid(xid);
    if (parts === undefined || parts.prefix !== facts.prefix) continue;
    if (parts.owner % facts.parallelism !== facts.subtaskIndex) continue;
    if (facts.restoredCheckpointId !== undefined && parts.base < facts.restoredCheckpointId) {
      continue;
    }
    rollbacks.push(xid);
  }
  return rollbacks;
}
