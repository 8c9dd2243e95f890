/**
 * {@linkcode PostgresPreparedSink}'s committable, the plain data it puts in
 * each checkpoint, and its check on restore. Pure: no I/O.
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `gid` | string | the prepared transaction's gid (format: `gid.ts`), of this sink's `gidPrefix` |
 * | `rows` | integer ≥ 1 | how many rows the transaction inserted (for logs) |
 *
 * No other field is allowed: the sink writes exactly these two.
 *
 * @module
 */

import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { parseGid } from "./gid.ts";

/** A prepared transaction waiting for `COMMIT PREPARED` (see the module docs). */
export interface PostgresCommittable {
  /** The prepared transaction's gid. */
  readonly gid: string;
  /** How many rows it inserted. */
  readonly rows: number;
}

const WHAT = "PostgreSQL prepared-transaction committable";

/**
 * Checks a committable read back from a checkpoint.
 * @param raw the decoded MessagePack value.
 * @param gidPrefix the sink's gid prefix; a gid of another prefix is another sink's.
 * @returns `raw` as a {@linkcode PostgresCommittable}.
 * @throws {SinkStateError} naming the field that is wrong, with its current value.
 */
export function checkPostgresCommittable(raw: unknown, gidPrefix: string): PostgresCommittable {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SinkStateError(
      WHAT,
      `it must be an object {gid, rows}: current value is ${show(raw)}`,
    );
  }
  for (const key of Object.keys(raw)) {
    if (key !== "gid" && key !== "rows") {
      throw new SinkStateError(
        WHAT,
        `field ${JSON.stringify(key)} is unknown: only 'gid' and 'rows' are allowed`,
      );
    }
  }
  const { gid, rows } = raw as { gid?: unknown; rows?: unknown };
  if (typeof gid !== "string") {
    throw new SinkStateError(WHAT, `field 'gid' must be a string: current value is ${show(gid)}`);
  }
  const parsed = parseGid(gid);
  if (parsed.kind === "invalid") {
    throw new SinkStateError(WHAT, `field 'gid' is not a gid of this sink: ${parsed.problem}`);
  }
  if (parsed.parts.gidPrefix !== gidPrefix) {
    throw new SinkStateError(
      WHAT,
      `field 'gid' must have this sink's gidPrefix '${gidPrefix}': current value is ${show(gid)}`,
    );
  }
  if (typeof rows !== "number" || !Number.isSafeInteger(rows) || rows < 1) {
    throw new SinkStateError(
      WHAT,
      `field 'rows' must be an integer >= 1: current value is ${show(rows)}`,
    );
  }
  return { gid, rows };
}

/** A short rendering of any decoded value for error messages. */
function show(value: unknown): string {
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 120 ? `${text.slice(0, 120)}...` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}
