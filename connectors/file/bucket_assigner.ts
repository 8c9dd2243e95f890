/**
 * Which directory under the file sink's output directory a record goes to
 * (Flink's `BucketAssigner`): a bucket id is a relative path, `""` for the
 * output directory itself. Each bucket has its own part files.
 *
 * - {@linkcode BasePathBucketAssigner}: one bucket, the output directory
 *   (the default here).
 * - {@linkcode DateTimeBucketAssigner}: one bucket per hour of processing
 *   time, `yyyy-MM-dd--HH` in UTC (Flink's default assigner, with its
 *   default format; Flink uses the JVM's time zone, Weir always UTC).
 *
 * A bucket id is checked by {@linkcode checkBucketId}: segments separated
 * by `/`, none empty, `.` or `..`, none starting with `.` (hidden names are
 * the sink's in-progress and pending files), no `\`, NUL or control
 * characters, at most 255 characters per segment.
 *
 * @example
 * ```ts
 * import { DateTimeBucketAssigner } from "./bucket_assigner.ts";
 *
 * const hourly = new DateTimeBucketAssigner();
 * console.assert(hourly.getBucketId(null, { timestamp: undefined, currentProcessingTimeMs: 0 }) === "1970-01-01--00");
 * ```
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";

/** What a bucket assigner gets with each record (Flink's `BucketAssigner.Context`). */
export interface BucketAssignerContext {
  /** The record's event timestamp in ms, if any. */
  readonly timestamp: number | undefined;
  /** The processing time, ms since the epoch. */
  readonly currentProcessingTimeMs: number;
}

/** Picks a record's bucket (Flink's `BucketAssigner`). */
export interface BucketAssigner<T> {
  /** The bucket id of `value`: a relative directory path, `""` for the output directory. */
  getBucketId(value: T, context: BucketAssignerContext): string;
}

/** A bucket id that is not a safe relative path; the job fails without restarts. */
export class BucketIdError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the rule broken and the id.
   */
  constructor(message: string) {
    super(message);
    this.name = "BucketIdError";
  }
}

// deno-lint-ignore no-control-regex
const FORBIDDEN = /[\\\u0000-\u001f\u007f]/;

/**
 * The reason `bucketId` is not a valid bucket id, or `undefined` when it is
 * (see the module docs).
 */
export function bucketIdProblem(bucketId: unknown): string | undefined {
  if (typeof bucketId !== "string") {
    return `it must be a string: current value is ${String(bucketId)}`;
  }
  if (bucketId === "") return undefined;
  if (FORBIDDEN.test(bucketId)) {
    return `it must not hold '\\' or control characters: current value is ${
      JSON.stringify(bucketId)
    }`;
  }
  for (const segment of bucketId.split("/")) {
    if (segment === "" || segment.startsWith(".") || segment.length > 255) {
      return `its '/'-separated segments must be 1 to 255 characters not starting with '.': current value is ${
        JSON.stringify(bucketId)
      }`;
    }
  }
  return undefined;
}

/**
 * Checks a bucket id.
 * @returns `bucketId`.
 * @throws {BucketIdError} naming the rule it breaks and its value.
 */
export function checkBucketId(bucketId: unknown): string {
  const problem = bucketIdProblem(bucketId);
  if (problem !== undefined) throw new BucketIdError(`Invalid bucket id: ${problem}`);
  return bucketId as string;
}

/** Every record in the output directory itself (Flink's `BasePathBucketAssigner`). */
export class BasePathBucketAssigner implements BucketAssigner<unknown> {
  /** Always `""`. */
  getBucketId(_value: unknown, _context: BucketAssignerContext): string {
    return "";
  }
}

/**
 * One bucket per hour of processing time, `yyyy-MM-dd--HH` in UTC (Flink's
 * `DateTimeBucketAssigner` with its default format).
 */
export class DateTimeBucketAssigner implements BucketAssigner<unknown> {
  /** The bucket of the processing time, e.g. `"2024-03-01--17"`. */
  getBucketId(_value: unknown, context: BucketAssignerContext): string {
    const iso = new Date(context.currentProcessingTimeMs).toISOString(); // 2024-03-01T17:04:05.000Z
    return `${iso.slice(0, 10)}--${iso.slice(11, 13)}`;
  }
}
