/**
 * The committable of the write-ahead-log sink: one batch of values and the
 * {@linkcode WalCommitId} it is sent under, and its validation when it is
 * read back from a checkpoint.
 *
 * ## Checkpointed shape (MessagePack, plain data)
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `jobId` | non-empty string | job whose subtask wrote the batch |
 * | `attempt` | integer ≥ 0 | execution attempt that wrote it |
 * | `subtask` | integer ≥ 0 | sink subtask that wrote it |
 * | `checkpointId` | integer ≥ 1 | checkpoint whose barrier closed it |
 * | `part` | integer ≥ 0 | part of that checkpoint's values |
 * | `values` | array, length ≥ 1 | the records, in write order |
 *
 * No other field is allowed. Each value goes through the sink's
 * `checkValue` (when given), which names the index of a bad one.
 *
 * @module
 */

import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import type { WalCommitId } from "./types.ts";

/** One batch of a write-ahead-log sink, as checkpointed (see the module docs). */
export interface WalCommittable<T> extends WalCommitId {
  /** The batch's values, in the order they were written; never empty. */
  readonly values: readonly T[];
}

const WHAT = "write-ahead-log committable";
const FIELDS = new Set(["jobId", "attempt", "subtask", "checkpointId", "part", "values"]);

function show(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 60 ? value.slice(0, 60) + "…" : value);
  }
  if (typeof value === "bigint") return `${value}n`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return String(value);
}

function integer(record: Record<string, unknown>, field: string, min: number): number {
  const value = record[field];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new SinkStateError(
      WHAT,
      `field '${field}' must be an integer >= ${min}: current value is ${show(value)}`,
    );
  }
  return value;
}

/**
 * Validates a write-ahead-log committable read back from a checkpoint.
 * @param raw the decoded committable.
 * @param checkValue validates one value (throws naming what is wrong);
 *   values are taken as they are when absent.
 * @returns the committable, with values as `checkValue` returned them.
 * @throws {SinkStateError} naming the field (and value index) that is wrong,
 *   with its current value.
 */
export function checkWalCommittable<T>(
  raw: unknown,
  checkValue?: (raw: unknown) => T,
): WalCommittable<T> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SinkStateError(WHAT, `it must be an object: current value is ${show(raw)}`);
  }
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!FIELDS.has(key)) {
      throw new SinkStateError(WHAT, `unknown field '${key}' (expected ${[...FIELDS].join(", ")})`);
    }
  }
  const jobId = record.jobId;
  if (typeof jobId !== "string" || jobId.length === 0) {
    throw new SinkStateError(
      WHAT,
      `field 'jobId' must be a non-empty string: current value is ${show(jobId)}`,
    );
  }
  const attempt = integer(record, "attempt", 0);
  const subtask = integer(record, "subtask", 0);
  const checkpointId = integer(record, "checkpointId", 1);
  const part = integer(record, "part", 0);
  const values = record.values;
  if (!Array.isArray(values) || values.length === 0) {
    throw new SinkStateError(
      WHAT,
      `field 'values' must be a non-empty array: current value is ${show(values)}`,
    );
  }
  let checked: readonly T[] = values as T[];
  if (checkValue !== undefined) {
    checked = values.map((value, index) => {
      try {
        return checkValue(value);
      } catch (error) {
        throw new SinkStateError(
          WHAT,
          `values[${index}] of checkpoint ${checkpointId} part ${part} is rejected: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
    });
  }
  return { jobId, attempt, subtask, checkpointId, part, values: checked };
}

/** `job <jobId> attempt <a> subtask <s> checkpoint <n> part <p>`, for logs and errors. */
export function describeWalCommitId(id: WalCommitId): string {
  return `job ${id.jobId} attempt ${id.attempt} subtask ${id.subtask} checkpoint ${id.checkpointId} part ${id.part}`;
}
