/**
 * The checks of an operator's settings in the StreamGraph, shared by
 * `SingleOutputStreamOperator` (`datastream.ts`) and
 * `DataStreamSink` (`data_stream_sink.ts`): its uid (Flink's
 * `uid`), parallelism and max parallelism (the number of key groups).
 *
 * @module
 */

import { WATERMARK_FLOORS_KEY } from "../time/watermark.ts";

/**
 * `uid`, checked as an operator's stable id.
 * @throws {TypeError} when it is not a non-empty string, or is the key
 *   checkpoints keep the operators' watermarks under (`WATERMARK_FLOORS_KEY`).
 */
export function checkedUid(uid: string): string {
  if (typeof uid !== "string" || uid.length === 0) {
    throw new TypeError(`uid must be a non-empty string: current value is ${JSON.stringify(uid)}`);
  }
  if (uid === WATERMARK_FLOORS_KEY) {
    throw new TypeError(
      `uid '${uid}' is reserved (checkpoints keep the operators' watermarks under it): choose another`,
    );
  }
  return uid;
}

/**
 * `parallelism`, checked as an operator's number of subtasks.
 * @throws {RangeError} unless it is a positive integer.
 */
export function checkedParallelism(parallelism: number): number {
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new RangeError(`parallelism must be a positive integer: current value is ${parallelism}`);
  }
  return parallelism;
}

/**
 * `maxParallelism`, checked as an operator's number of key groups.
 * @throws {RangeError} unless it is an integer in 1..32768.
 */
export function checkedMaxParallelism(maxParallelism: number): number {
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > 32768) {
    throw new RangeError(
      `maxParallelism must be an integer in 1..32768: current value is ${maxParallelism}`,
    );
  }
  return maxParallelism;
}
