/**
 * The global transaction identifiers (gids) of {@linkcode PostgresPreparedSink}'s
 * prepared transactions, and the pure decision of which lingering ones a
 * writer rolls back. No I/O here.
 *
 * ## Gid format
 *
 * ```text
 * weir:<gidPrefix>:<ownerSubtask>:<checkpointId>:<token>
 * ```
 *
 * | part | meaning |
 * |---|---|
 * | `weir` | marks Weir's gids among others in `pg_prepared_xacts` |
 * | `gidPrefix` | the sink's prefix, `[A-Za-z0-9_.-]{1,64}`, set by the user and stable across jobs (Flink's `transactionalIdPrefix` of `KafkaSink`); unique per sink among the jobs sharing a PostgreSQL server |
 * | `ownerSubtask` | the writer subtask that prepared it (decimal, no leading zeros) |
 * | `checkpointId` | the checkpoint whose barrier prepared it (decimal, ≥ 1) |
 * | `token` | 16 lowercase hex digits drawn at random per writer: no gid is ever reused, even when a job restores the same checkpoint twice or another job resumes it |
 *
 * A gid is at most 5 + 64 + 1 + 10 + 1 + 16 + 1 + 16 = 114 characters
 * (PostgreSQL allows 199).
 *
 * ## Lingering transactions (after Flink's `KafkaSink` abort on restore)
 *
 * A writer of subtask `k` at parallelism `p` owns the gids whose
 * `ownerSubtask % p == k` (so after a rescale every old owner has exactly
 * one new one). At start it rolls back its owned gids that no checkpoint
 * it continues from can name:
 *
 * - on a fresh start, all of them;
 * - on a restore from checkpoint `n`, those with `checkpointId > n`: they
 *   were prepared after the checkpoint and their records will be replayed.
 *   Those with `checkpointId <= n` are named by checkpoint `n` (checkpoint
 *   ids only grow within a job, and a resumed job continues after the
 *   checkpoint it resumed), so a committer commits them; they are left
 *   alone, whichever subtask's committer holds them.
 *
 * @module
 */

/** The first part of every gid this connector writes. */
export const GID_MARKER = "weir";

const PREFIX_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const DECIMAL = /^(0|[1-9][0-9]{0,9})$/;
const TOKEN_PATTERN = /^[0-9a-f]{16}$/;

/** A gid's parts (see the module docs). */
export interface GidParts {
  /** The sink's gid prefix. */
  readonly gidPrefix: string;
  /** The writer subtask that prepared it. */
  readonly ownerSubtask: number;
  /** The checkpoint whose barrier prepared it. */
  readonly checkpointId: number;
  /** 16 lowercase hex digits, random per writer. */
  readonly token: string;
}

/**
 * Checks a gid prefix.
 * @param where names the sink, for the error, e.g. `"PostgresPreparedSink"`.
 * @returns `prefix`.
 * @throws {TypeError} when it is not 1–64 characters of `[A-Za-z0-9_.-]`, with the current value.
 */
export function checkGidPrefix(where: string, prefix: unknown): string {
  if (typeof prefix !== "string" || !PREFIX_PATTERN.test(prefix)) {
    throw new TypeError(
      `${where}: gidPrefix must be 1-64 characters of A-Z, a-z, 0-9, '_', '.', '-': ` +
        `current value is ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}

/** A fresh random token: 16 lowercase hex digits. */
export function newGidToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Formats a gid (see the module docs).
 * @returns `weir:<gidPrefix>:<ownerSubtask>:<checkpointId>:<token>`.
 * @throws {RangeError} when a part is out of its range, naming it with the current value.
 */
export function formatGid(parts: GidParts): string {
  checkGidPrefix("formatGid", parts.gidPrefix);
  for (
    const [name, value, min] of [
      ["ownerSubtask", parts.ownerSubtask, 0],
      ["checkpointId", parts.checkpointId, 1],
    ] as const
  ) {
    if (!Number.isSafeInteger(value) || value < min || value > 9_999_999_999) {
      throw new RangeError(
        `formatGid: ${name} must be an integer in [${min}, 9999999999]: current value is ${value}`,
      );
    }
  }
  if (!TOKEN_PATTERN.test(parts.token)) {
    throw new RangeError(
      `formatGid: token must be 16 lowercase hex digits: current value is ${
        JSON.stringify(parts.token)
      }`,
    );
  }
  return `${GID_MARKER}:${parts.gidPrefix}:${parts.ownerSubtask}:${parts.checkpointId}:${parts.token}`;
}

/** What {@linkcode parseGid} found. */
export type ParsedGid =
  | { readonly kind: "weir"; readonly parts: GidParts }
  | { readonly kind: "invalid"; readonly problem: string };

/**
 * Parses a gid written by {@linkcode formatGid}; the inverse of it.
 * @returns its parts, or `invalid` with what is wrong (the gid of another
 *   application, or a damaged one). Never throws.
 */
export function parseGid(gid: string): ParsedGid {
  const fields = gid.split(":");
  if (fields.length !== 5) {
    return {
      kind: "invalid",
      problem: `a gid must have 5 ':'-separated fields: current value ${
        JSON.stringify(gid.length > 120 ? `${gid.slice(0, 120)}...` : gid)
      } has ${fields.length}`,
    };
  }
  const [marker, gidPrefix, owner, checkpoint, token] = fields as [
    string,
    string,
    string,
    string,
    string,
  ];
  if (marker !== GID_MARKER) {
    return {
      kind: "invalid",
      problem: `field 1 must be '${GID_MARKER}': current value is ${JSON.stringify(marker)}`,
    };
  }
  if (!PREFIX_PATTERN.test(gidPrefix)) {
    return {
      kind: "invalid",
      problem: `field 2 (gidPrefix) must be 1-64 characters of [A-Za-z0-9_.-]: current value is ${
        JSON.stringify(gidPrefix)
      }`,
    };
  }
  if (!DECIMAL.test(owner) || Number(owner) > 9_999_999_999) {
    return {
      kind: "invalid",
      problem: `field 3 (ownerSubtask) must be a decimal integer in [0, 9999999999] without ` +
        `leading zeros: current value is ${JSON.stringify(owner)}`,
    };
  }
  if (!DECIMAL.test(checkpoint) || checkpoint === "0" || Number(checkpoint) > 9_999_999_999) {
    return {
      kind: "invalid",
      problem: `field 4 (checkpointId) must be a decimal integer in [1, 9999999999] without ` +
        `leading zeros: current value is ${JSON.stringify(checkpoint)}`,
    };
  }
  if (!TOKEN_PATTERN.test(token)) {
    return {
      kind: "invalid",
      problem: `field 5 (token) must be 16 lowercase hex digits: current value is ${
        JSON.stringify(token)
      }`,
    };
  }
  return {
    kind: "weir",
    parts: { gidPrefix, ownerSubtask: Number(owner), checkpointId: Number(checkpoint), token },
  };
}

/** What a writer knows at start, for {@linkcode decideLingering}. */
export interface LingeringFacts {
  /** The sink's gid prefix. */
  readonly gidPrefix: string;
  /** The writer's subtask index. */
  readonly subtaskIndex: number;
  /** The sink's parallelism now. */
  readonly parallelism: number;
  /** The checkpoint restored from; `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
  /** The gids in `pg_prepared_xacts` of the sink's database (any application's). */
  readonly preparedGids: readonly string[];
}

/**
 * Which prepared transactions a starting writer rolls back (see the module
 * docs): the gids of `gidPrefix` it owns and that no checkpoint it
 * continues from names. Performs no I/O.
 * @returns the gids to `ROLLBACK PREPARED`, in the order given.
 */
export function decideLingering(facts: LingeringFacts): string[] {
  const rollBack: string[] = [];
  for (const gid of facts.preparedGids) {
    const parsed = parseGid(gid);
    if (parsed.kind !== "weir" || parsed.parts.gidPrefix !== facts.gidPrefix) continue;
    if (parsed.parts.ownerSubtask % facts.parallelism !== facts.subtaskIndex) continue;
    if (
      facts.restoredCheckpointId === undefined ||
      parsed.parts.checkpointId > facts.restoredCheckpointId
    ) {
      rollBack.push(gid);
    }
  }
  return rollBack;
}
