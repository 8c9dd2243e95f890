/**
 * Internal: the options of {@linkcode SqliteKeyedStateBackend.create}, their
 * defaults and their range checks. The public names are re-exported by
 * `sqlite_keyed_backend.ts`, the module to import.
 *
 * @module
 */

import type { KeyGroupRange } from "../key_group.ts";

/** Default bound of the cache: entries (a map state's entry weighs 1 + its user entries). */
export const DEFAULT_CACHE_ENTRIES = 100_000;
/** Default number of dirty entries one eviction writes back in one transaction. */
export const DEFAULT_WRITE_BATCH_SIZE = 1_000;
/** Default number of rows per blob a snapshot writes (about; blobs end at key-group boundaries). */
export const DEFAULT_SNAPSHOT_CHUNK_ROWS = 200_000;

/** Options of {@linkcode SqliteKeyedStateBackend.create}. */
export interface SqliteKeyedStateBackendOptions {
  /** The key groups this backend (subtask) owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups, in `[1, 32768]`; equal across restores. */
  readonly maxParallelism: number;
  /**
   * A local directory for the database: a fresh subdirectory is made in it
   * (created if missing) and deleted on dispose. Default: the system's
   * temporary directory (`Deno.makeTempDir`).
   */
  readonly localDirectory?: string;
  /** A name for the database's directory (e.g. the subtask's), sanitized. Default `"keyed"`. */
  readonly name?: string;
  /** The cache's bound in entries (≥ 1). Default {@linkcode DEFAULT_CACHE_ENTRIES}. */
  readonly cacheEntries?: number;
  /** Dirty entries written back per eviction transaction (≥ 1). Default {@linkcode DEFAULT_WRITE_BATCH_SIZE}. */
  readonly writeBatchSize?: number;
  /** Rows per snapshot blob, about (≥ 1). Default {@linkcode DEFAULT_SNAPSHOT_CHUNK_ROWS}. */
  readonly snapshotChunkRows?: number;
  /** Processing-time clock for TTL, in ms. Default `Date.now`. */
  readonly clock?: () => number;
  /**
   * Event-time clock for TTLs with `timeCharacteristic: "EventTime"`, in
   * ms: the operator's current watermark, `-Infinity` before the first.
   * Without it, registering such a state throws.
   */
  readonly eventTimeClock?: () => number;
}

/**
 * `value`, or `fallback` when it is `undefined`.
 *
 * @param name the option's name, for the error.
 * @throws {RangeError} naming the option and its value when `value` is not an integer ≥ 1.
 */
export function checkPositiveInteger(
  name: string,
  value: number | undefined,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `SqliteKeyedStateBackend option '${name}' must be an integer ≥ 1: current value is ${value}`,
    );
  }
  return value;
}
