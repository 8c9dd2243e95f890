/**
 * The one place a keyed operator gets its keyed state backend from (Flink's
 * `StateBackend.createKeyedStateBackend`, chosen by the job's
 * `state.backend.type`): the job's {@linkcode StateBackendConfig} picks the
 * heap backend or the embedded SQLite backend, and
 * {@linkcode createKeyedStateBackend} builds it for one subtask.
 *
 * | `kind`     | backend                                   | for                                  |
 * | ---------- | ----------------------------------------- | ------------------------------------ |
 * | `"heap"`   | `HeapKeyedStateBackend` (JS `Map`s)        | state that fits in memory (default)  |
 * | `"sqlite"` | `SqliteKeyedStateBackend` (`node:sqlite`)  | state larger than the JS heap        |
 *
 * Both write the canonical keyed snapshot for savepoints, so a job may
 * switch backends across a savepoint. With `changelog` set (incremental
 * checkpoints), either is wrapped in a `ChangelogKeyedStateBackend`.
 *
 * @example
 * ```ts
 * import { createKeyedStateBackend } from "./state_backend_factory.ts";
 * import { KeyGroupRange } from "./key_group.ts";
 *
 * const backend = await createKeyedStateBackend(
 *   { kind: "sqlite", cacheEntries: 50_000 },
 *   { keyGroupRange: new KeyGroupRange(0, 127), maxParallelism: 128, name: "job-op-0" },
 * );
 * await backend.dispose();
 * ```
 *
 * @module
 */

import type { KeyedStateBackend } from "./keyed_state_backend.ts";
import type { KeyGroupRange } from "./key_group.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { SqliteKeyedStateBackend } from "./sqlite/sqlite_keyed_backend.ts";
import { ChangelogKeyedStateBackend } from "./changelog/changelog_keyed_backend.ts";

/** The keyed state backends a job can choose. */
export type StateBackendKind = "heap" | "sqlite";

/** The state backends a job can choose, for checks and messages. */
export const STATE_BACKEND_KINDS: readonly StateBackendKind[] = ["heap", "sqlite"];

/**
 * A job's choice of keyed state backend (plain data: it travels to workers
 * with the task configuration).
 */
export interface StateBackendConfig {
  /** Which backend. */
  readonly kind: StateBackendKind;
  /**
   * `"sqlite"` only: the local directory under which each subtask's
   * database directory is made (and deleted when the subtask ends). Default:
   * the system's temporary directory.
   */
  readonly localDirectory?: string;
  /** `"sqlite"` only: the cache's bound, in entries per subtask (default 100 000). */
  readonly cacheEntries?: number;
  /**
   * Incremental checkpoints: when present, the backend is wrapped in a
   * `ChangelogKeyedStateBackend` (Flink's FLIP-158 changelog with periodic
   * materialization, `changelog/`), so each checkpoint uploads only the
   * state changed since the previous one. Set by
   * `enableCheckpointing(…, { incrementalCheckpoints: true })`.
   */
  readonly changelog?: ChangelogConfig;
}

/** Settings of the changelog (incremental checkpoints) over a keyed state backend. */
export interface ChangelogConfig {
  /**
   * Materialize (upload a full snapshot that later checkpoints build on)
   * at least this often, ms; `Infinity` only when the changelog outgrows
   * the last materialization. Default 600 000 (Flink's
   * `state.backend.changelog.periodic-materialize.interval`, 10 min).
   */
  readonly materializationIntervalMs?: number;
}

/** What a keyed operator knows when it builds its backend. */
export interface KeyedStateBackendParams {
  /** The key groups the subtask owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups. */
  readonly maxParallelism: number;
  /** Processing-time clock for TTL, ms. Default `Date.now`. */
  readonly clock?: () => number;
  /** Event-time clock for event-time TTL, ms (the operator's watermark). */
  readonly eventTimeClock?: () => number;
  /** A name for on-disk files (job, operator and subtask), sanitized by the backend. */
  readonly name?: string;
}

/**
 * Checks a state backend choice (e.g. as deserialized on a worker).
 * @returns `config`, or the heap default for `undefined`.
 * @throws {RangeError} naming `where` for an unknown kind, an option the
 *   kind does not take, or a `cacheEntries` that is not an integer ≥ 1.
 * @throws {TypeError} for a `localDirectory` that is not a non-empty string.
 */
export function checkStateBackendConfig(
  config: StateBackendConfig | undefined,
  where: string,
): StateBackendConfig {
  if (config === undefined) return { kind: "heap" };
  if (!STATE_BACKEND_KINDS.includes(config.kind)) {
    throw new RangeError(
      `${where}: unknown state backend (known: ${
        STATE_BACKEND_KINDS.join(", ")
      }): current value is ${JSON.stringify(config.kind)}`,
    );
  }
  if (config.kind === "heap") {
    for (const option of ["localDirectory", "cacheEntries"] as const) {
      if (config[option] !== undefined) {
        throw new RangeError(
          `${where}: option '${option}' applies to the "sqlite" state backend only, not to "heap": current value is ${
            JSON.stringify(config[option])
          }`,
        );
      }
    }
  }
  const dir = config.localDirectory;
  if (dir !== undefined && (typeof dir !== "string" || dir.length === 0)) {
    throw new TypeError(
      `${where}: 'localDirectory' must be a non-empty string: current value is ${
        JSON.stringify(dir)
      }`,
    );
  }
  const changelog = config.changelog;
  if (changelog !== undefined) {
    const interval = changelog?.materializationIntervalMs;
    if (
      typeof changelog !== "object" || changelog === null ||
      (interval !== undefined && !(typeof interval === "number" && interval >= 0))
    ) {
      throw new RangeError(
        `${where}: 'changelog.materializationIntervalMs' must be a number ≥ 0 (ms) or Infinity: current value is ${
          JSON.stringify(changelog)
        }`,
      );
    }
  }
  const cache = config.cacheEntries;
  if (cache !== undefined && (!Number.isInteger(cache) || cache < 1)) {
    throw new RangeError(
      `${where}: 'cacheEntries' must be an integer ≥ 1: current value is ${JSON.stringify(cache)}`,
    );
  }
  return config;
}

/**
 * Builds the keyed state backend of one subtask of a keyed operator.
 * @param config the job's choice; `undefined` is the heap backend.
 * @param params the subtask's key groups, max parallelism, clocks and name.
 * @returns a fresh, empty backend; the caller restores it and disposes it
 *   when the subtask ends (the SQLite backend then deletes its database).
 * @throws {RangeError} or {TypeError} for an invalid `config` (see
 *   {@linkcode checkStateBackendConfig}) or key-group range.
 * @throws {Deno.errors.PermissionDenied} and other file errors when the
 *   SQLite backend cannot make its directory.
 */
export async function createKeyedStateBackend(
  config: StateBackendConfig | undefined,
  params: KeyedStateBackendParams,
): Promise<KeyedStateBackend> {
  const checked = checkStateBackendConfig(config, "state backend");
  const common = {
    keyGroupRange: params.keyGroupRange,
    maxParallelism: params.maxParallelism,
    ...(params.clock === undefined ? {} : { clock: params.clock }),
    ...(params.eventTimeClock === undefined ? {} : { eventTimeClock: params.eventTimeClock }),
  };
  const inner = checked.kind === "heap"
    ? new HeapKeyedStateBackend(common)
    : await SqliteKeyedStateBackend.create({
      ...common,
      ...(checked.localDirectory === undefined ? {} : { localDirectory: checked.localDirectory }),
      ...(checked.cacheEntries === undefined ? {} : { cacheEntries: checked.cacheEntries }),
      ...(params.name === undefined ? {} : { name: params.name }),
    });
  if (checked.changelog === undefined) return inner;
  const interval = checked.changelog.materializationIntervalMs;
  return new ChangelogKeyedStateBackend({
    inner,
    ...(interval === undefined ? {} : { materialization: { intervalMs: interval } }),
    ...(params.clock === undefined ? {} : { clock: params.clock }),
    ...(params.eventTimeClock === undefined ? {} : { eventTimeClock: params.eventTimeClock }),
  });
}
