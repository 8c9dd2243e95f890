/**
 * The MariaDB XA sink's committable (a prepared xid, as plain data in the
 * checkpoint), its validation on restore, and the pure decision of what an
 * `XA COMMIT` that answers "unknown xid" means. Performs no I/O.
 *
 * ## Committed, or lost? ({@linkcode decideUnknownXid})
 *
 * `XA COMMIT` of an xid the server does not hold prepared fails with
 * `ER_XAER_NOTA` (1397). MariaDB gives that answer for three different
 * situations, which its own state cannot tell apart:
 *
 * 1. the xid was committed before (a replayed commit after a crash between
 *    the commit and the checkpoint that would have recorded it): fine;
 * 2. the xid was rolled back or lost (an operator ran `XA ROLLBACK`, the
 *    server lost it): the records are gone;
 * 3. the xid is still prepared but attached to a live connection (MariaDB
 *    10.5+ and MySQL keep a prepared XA transaction with the connection that
 *    prepared it until that connection ends; only then can another one
 *    commit it). `XA RECOVER` lists it.
 *
 * The writer therefore inserts one row into the *commit log* table inside
 * every XA transaction, right before `XA END` (see `commit_log.ts`). The
 * row becomes visible exactly when the transaction commits, so after
 * `ER_XAER_NOTA`: listed by `XA RECOVER` → still attached, retry later;
 * else a log row → committed before (`signalAlreadyCommitted`); else the
 * transaction is lost, and the job fails without restarts naming the xid,
 * its checkpoint and its record count (DESIGN §12: a commit never hides
 * loss). Flink's JDBC XA sink instead logs and ignores an unknown xid at
 * recovery, which would hide case 2.
 *
 * @module
 */

import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { parseXid, WEIR_XID_FORMAT_ID, type Xid, XidFormatError } from "./xid.ts";

/**
 * One prepared XA transaction of a writer: what the committer commits.
 * Plain data (checkpointed as MessagePack).
 */
export interface XaCommittable {
  /** The xid's gtrid, `weir:<prefix>:<owner>:<base>` (see `xid.ts`). */
  readonly gtrid: string;
  /** The xid's bqual, `<writerId>.<sequence>`. */
  readonly bqual: string;
  /** How many records the transaction holds (for logs and loss reports). */
  readonly records: number;
}

const KEYS = new Set(["gtrid", "bqual", "records"]);

/**
 * The xid of a committable (format id {@linkcode WEIR_XID_FORMAT_ID}).
 * @param committable the committable.
 * @returns the xid.
 */
export function committableXid(committable: XaCommittable): Xid {
  return { gtrid: committable.gtrid, bqual: committable.bqual, formatId: WEIR_XID_FORMAT_ID };
}

function problem(message: string): never {
  throw new SinkStateError("MariaDB XA committable", message);
}

/**
 * Validates a committable read back from a checkpoint.
 * @param raw the decoded value.
 * @returns it, typed.
 * @throws {SinkStateError} naming the field that is wrong and its value:
 *   not an object, an unknown or missing field, an xid not in the sink's
 *   format, a record count that is not a non-negative integer.
 */
export function checkXaCommittable(raw: unknown): XaCommittable {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    problem(`it must be an object {gtrid, bqual, records}: current value is ${show(raw)}`);
  }
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!KEYS.has(key)) {
      problem(
        `field '${key}' is unknown (expected gtrid, bqual, records): current value is ${show(raw)}`,
      );
    }
  }
  const { gtrid, bqual, records } = record;
  if (typeof gtrid !== "string") {
    problem(`field 'gtrid' must be a string: current value is ${show(gtrid)}`);
  }
  if (typeof bqual !== "string") {
    problem(`field 'bqual' must be a string: current value is ${show(bqual)}`);
  }
  if (typeof records !== "number" || !Number.isSafeInteger(records) || records < 0) {
    problem(`field 'records' must be a non-negative integer: current value is ${show(records)}`);
  }
  try {
    parseXid({ gtrid, bqual, formatId: WEIR_XID_FORMAT_ID });
  } catch (e) {
    if (e instanceof XidFormatError) problem(e.message);
    throw e;
  }
  return { gtrid, bqual, records };
}

function show(value: unknown): string {
  try {
    const text = JSON.stringify(
      value,
      (_k, v) =>
        typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? `<${v.length} bytes>` : v,
    );
    if (text === undefined) return String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

/** What is known after `XA COMMIT` answered `ER_XAER_NOTA`. */
export interface UnknownXidFacts {
  /** Whether `XA RECOVER` still lists the xid as prepared. */
  readonly stillPrepared: boolean;
  /** Whether the commit log holds the xid's row (visible only once committed). */
  readonly logged: boolean;
}

/**
 * What an unknown xid means (see the module docs).
 * - `"attached"`: still prepared, held by a connection that has not ended
 *   yet (the writer's, closing; or a zombie's): retry later;
 * - `"already-committed"`: its commit-log row is visible;
 * - `"lost"`: neither: the transaction was rolled back or lost.
 */
export type UnknownXidOutcome = "attached" | "already-committed" | "lost";

/**
 * Decides what an `ER_XAER_NOTA` on `XA COMMIT` means. Performs no I/O.
 * @param facts what `XA RECOVER` and the commit log say.
 * @returns the outcome.
 */
export function decideUnknownXid(facts: UnknownXidFacts): UnknownXidOutcome {
  if (facts.stillPrepared) return "attached";
  return facts.logged ? "already-committed" : "lost";
}
