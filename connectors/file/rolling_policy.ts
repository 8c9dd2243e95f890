/**
 * When the file sink closes a part file and starts the next one (Flink's
 * `RollingPolicy`, `DefaultRollingPolicy`, `OnCheckpointRollingPolicy`).
 * The decisions are pure: the writer passes the part file's facts and the
 * processing time.
 *
 * ## When each check runs
 *
 * - `shouldRollOnEvent(part, value)`: before a record is written to an
 *   open part file. A part file may thus exceed `maxPartSizeBytes` by the
 *   record that crossed it (as in Flink).
 * - `shouldRollOnProcessingTime(part, nowMs)`: before a record is written
 *   to the part file, for every open part file at most once per
 *   `checkIntervalMs` of the sink (on a write to any bucket), and at every
 *   `flush`.
 * - At every checkpoint, always: every open part file is closed and
 *   becomes pending. Flink keeps a row-format part file open across
 *   checkpoints through a recoverable writer (a resumable upload or a
 *   truncatable file); Weir does not have one, so it rolls at every
 *   checkpoint for every format — a part file never holds more than one
 *   checkpoint interval of records (simplification).
 *
 * @example
 * ```ts
 * import { DefaultRollingPolicy } from "./rolling_policy.ts";
 *
 * const policy = new DefaultRollingPolicy({ maxPartSizeBytes: 1024, rolloverIntervalMs: 60_000 });
 * const part = { bucketId: "", sizeBytes: 2048, creationTimeMs: 0, lastUpdateTimeMs: 0 };
 * console.assert(policy.shouldRollOnEvent(part, "x") && policy.shouldRollOnProcessingTime(part, 60_000));
 * ```
 *
 * @module
 */

/** The facts about an open part file that a rolling policy decides on (Flink's `PartFileInfo`). */
export interface PartFileInfo {
  /** The bucket the part file belongs to (`""` for the base directory). */
  readonly bucketId: string;
  /** Bytes written to it so far (buffered bytes included). */
  readonly sizeBytes: number;
  /** Processing time it was opened at, ms since the epoch. */
  readonly creationTimeMs: number;
  /** Processing time of its last write, ms since the epoch. */
  readonly lastUpdateTimeMs: number;
}

/** Decides when to close a part file (Flink's `RollingPolicy`); part files also roll at every checkpoint. */
export interface RollingPolicy<T> {
  /** Whether to close `part` before `value` is written to it. */
  shouldRollOnEvent(part: PartFileInfo, value: T): boolean;
  /** Whether to close `part` at processing time `nowMs`. */
  shouldRollOnProcessingTime(part: PartFileInfo, nowMs: number): boolean;
}

/** Options of {@linkcode DefaultRollingPolicy}; every field is optional. */
export interface DefaultRollingPolicyOptions {
  /** Roll once a part file holds this many bytes; an integer ≥ 1. Default 128 MiB. */
  readonly maxPartSizeBytes?: number;
  /** Roll a part file this long after it was opened, in ms > 0. Default 60 000. */
  readonly rolloverIntervalMs?: number;
  /** Roll a part file not written to for this long, in ms > 0. Default 60 000. */
  readonly inactivityIntervalMs?: number;
}

/** Default part size of {@linkcode DefaultRollingPolicy}: 128 MiB (Flink's). */
export const DEFAULT_MAX_PART_SIZE_BYTES = 128 * 1024 * 1024;
/** Default rollover and inactivity interval of {@linkcode DefaultRollingPolicy}: 60 s (Flink's). */
export const DEFAULT_ROLLOVER_INTERVAL_MS = 60_000;

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(
      `DefaultRollingPolicy: '${name}' must be a finite number > 0: current value is ${value}`,
    );
  }
  return value;
}

/**
 * Rolls on size, on age and on inactivity (Flink's `DefaultRollingPolicy`),
 * and at every checkpoint.
 */
export class DefaultRollingPolicy implements RollingPolicy<unknown> {
  /** Size limit in bytes. */
  readonly maxPartSizeBytes: number;
  /** Age limit in ms. */
  readonly rolloverIntervalMs: number;
  /** Inactivity limit in ms. */
  readonly inactivityIntervalMs: number;

  /**
   * Builds the policy.
   * @param options the limits; defaults as in Flink.
   * @throws {RangeError} naming a limit that is not a positive finite
   *   number (an integer for the size).
   */
  constructor(options: DefaultRollingPolicyOptions = {}) {
    this.maxPartSizeBytes = positive(
      "maxPartSizeBytes",
      options.maxPartSizeBytes ?? DEFAULT_MAX_PART_SIZE_BYTES,
    );
    if (!Number.isSafeInteger(this.maxPartSizeBytes)) {
      throw new RangeError(
        `DefaultRollingPolicy: 'maxPartSizeBytes' must be an integer: current value is ${this.maxPartSizeBytes}`,
      );
    }
    this.rolloverIntervalMs = positive(
      "rolloverIntervalMs",
      options.rolloverIntervalMs ?? DEFAULT_ROLLOVER_INTERVAL_MS,
    );
    this.inactivityIntervalMs = positive(
      "inactivityIntervalMs",
      options.inactivityIntervalMs ?? DEFAULT_ROLLOVER_INTERVAL_MS,
    );
  }

  /** True once the part holds `maxPartSizeBytes` or more. */
  shouldRollOnEvent(part: PartFileInfo, _value: unknown): boolean {
    return part.sizeBytes >= this.maxPartSizeBytes;
  }

  /** True once the part is `rolloverIntervalMs` old or `inactivityIntervalMs` idle. */
  shouldRollOnProcessingTime(part: PartFileInfo, nowMs: number): boolean {
    return nowMs - part.creationTimeMs >= this.rolloverIntervalMs ||
      nowMs - part.lastUpdateTimeMs >= this.inactivityIntervalMs;
  }
}

/**
 * Rolls only at checkpoints (Flink's `OnCheckpointRollingPolicy`, the
 * default for bulk formats): one part file per bucket per checkpoint
 * interval.
 */
export class OnCheckpointRollingPolicy implements RollingPolicy<unknown> {
  /** Always false. */
  shouldRollOnEvent(_part: PartFileInfo, _value: unknown): boolean {
    return false;
  }
  /** Always false. */
  shouldRollOnProcessingTime(_part: PartFileInfo, _nowMs: number): boolean {
    return false;
  }
}
