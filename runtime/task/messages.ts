/**
 * The messages subtasks, workers and the coordinator exchange, and their
 * subjects. Every message carries the job id (`job`) and the execution
 * attempt (`att`); a receiver drops messages of another attempt, so a zombie
 * from an older attempt can neither deliver data, acknowledge a checkpoint
 * nor commit.
 *
 * ## Subjects
 *
 * - `weir.<job>.coord`: the job's coordinator.
 * - `weir.<job>.<attempt>.task.<vertexId>.<subtask>`: a subtask's mailbox
 *   (data buffers, in-band events, credits and control).
 * - `weir.worker.<workerId>`: a worker.
 *
 * Job ids and worker ids are `[A-Za-z0-9_-]+`; vertex ids are `v<n>`. No user
 * data ever appears in a subject.
 *
 * ## Data plane
 *
 * A channel connects one producer subtask to one consumer subtask along one
 * JobGraph edge. Each message on a channel (`buf` or `evt`) carries a
 * sequence number, starting at 0 per attempt and channel; the consumer fails
 * the attempt on any gap, duplicate or reorder. A `buf` may only be sent with
 * a credit, granted by the consumer (`credit`) as it consumes buffers; events
 * (barrier, watermark, watermark status, end of data) need none and stay in
 * order behind the buffers queued before them.
 *
 * A `buf` carries its records (and their timestamps, when some record has
 * one) as one block in `vb`, encoded by `encodeRecords` of
 * `record_codec.ts`: column by column when the records share a simple shape,
 * MessagePack otherwise. The envelope around it is MessagePack
 * (`../actor/codec.ts`), which carries `vb` as binary. The consumer decodes
 * `vb` once, when the message arrives, into a
 * {@linkcode ReceivedBufferMessage}.
 *
 * A channel whose consumer shares the producer's thread (the transport's
 * `publishValue` accepts its subject: local mode, and one job's subtasks on
 * one slot thread in cluster mode) sends no bytes: each `buf` goes as a
 * {@linkcode ReceivedBufferMessage} object holding the records themselves
 * (no `vb`), and events and credits go as their message objects, with the
 * same sequence numbers, credits and order (DESIGN.md §15). Records are then
 * shared between producer and consumer, so they must not be changed after
 * `collect` (README, "What is not guaranteed").
 *
 * @module
 */

import type { CheckpointFailureCode, SnapshotType, SubtaskAck } from "../checkpoint/types.ts";
import { SuppressRestartsError } from "../failure.ts";
import { chainMessage } from "../error_chain.ts";
import type { WatermarkStatus } from "../time/watermark.ts";
import type { SubtaskMetricsSample } from "../metrics/task_io_metrics.ts";

/**
 * An in-band control event of a channel: a checkpoint barrier, a watermark
 * (ms), a watermark status change (Flink's `WatermarkStatus`: the producer
 * subtask turned idle or active again) or the end of data. A barrier carries
 * the checkpoint id, its trigger time (epoch ms) and what it is for
 * (`type`; Flink's `CheckpointOptions` travel in the barrier), so every
 * participant knows when a savepoint must be canonical and self-contained.
 */
export type ChannelEvent =
  | {
    readonly k: "barrier";
    readonly id: number;
    readonly ts: number;
    readonly type: SnapshotType;
  }
  | { readonly k: "wm"; readonly wm: number }
  | { readonly k: "status"; readonly s: WatermarkStatus }
  | { readonly k: "eod" };

/** Fields of every message. */
interface Envelope {
  /** The job id. */
  readonly job: string;
  /** The execution attempt. */
  readonly att: number;
}

/** A buffer of records on a channel. It travels as a binary frame (`buffer_frame.ts`), not as MessagePack. */
export interface BufferMessage extends Envelope {
  /** The message type. */
  readonly t: "buf";
  /** The JobGraph edge index. */
  readonly edge: number;
  /** The producer subtask index. */
  readonly src: number;
  /** The channel's sequence number (from 0 per attempt and channel). */
  readonly seq: number;
  /**
   * The records block: `encodeRecords(records, timestamps)` of
   * `record_codec.ts`, with one timestamp per record (ms, `null` = none)
   * when some record has a timestamp, else without timestamps.
   */
  readonly vb: Uint8Array;
  /**
   * On hash-partitioned edges: each record's key group, as the producer
   * computed it to choose the channel, so the consumer need not hash the key
   * again.
   */
  readonly kg?: Uint16Array;
}

/**
 * A buffer of records as the input gate queues it: a
 * {@linkcode BufferMessage} whose block the receiving subtask decoded once,
 * on arrival, or the object a producer in the same thread handed over with
 * `Transport.publishValue` (then without `vb`, and `kg` may be a plain
 * array). Never encoded.
 */
export interface ReceivedBufferMessage extends Envelope {
  /** The message type. */
  readonly t: "buf";
  /** The JobGraph edge index. */
  readonly edge: number;
  /** The producer subtask index. */
  readonly src: number;
  /** The channel's sequence number (from 0 per attempt and channel). */
  readonly seq: number;
  /** The records, in order. Shared with the producer when handed over in-thread: never change them. */
  readonly v: readonly unknown[];
  /** One timestamp per record (ms, `null` = none), or `undefined` when no record had one. */
  readonly ts: readonly (number | null)[] | undefined;
  /** On hash-partitioned edges: each record's key group (see {@linkcode BufferMessage.kg}). */
  readonly kg?: Uint16Array | readonly number[];
  /**
   * On hash-partitioned edges handed over in-thread only: each record's key,
   * as the edge's key selector returned it (`undefined` for a record whose
   * key the consumer must compute itself), so the consumer's keyed operator
   * does not run the key selector again. Shared with the producer: never
   * change them.
   */
  readonly k?: readonly unknown[];
}

/** An in-band event on a channel. */
export interface EventMessage extends Envelope {
  readonly t: "evt";
  readonly edge: number;
  readonly src: number;
  readonly seq: number;
  readonly e: ChannelEvent;
}

/** Credits from a consumer to the producer of channel (`edge`, producer `src`, consumer `dst`). */
export interface CreditMessage extends Envelope {
  readonly t: "credit";
  readonly edge: number;
  readonly dst: number;
  readonly n: number;
}

/**
 * A message without its envelope (`job`, `att`): what a sender fills in
 * before adding the envelope. Distributes over unions.
 */
export type MessageBody<T> = T extends unknown ? Omit<T, "job" | "att"> : never;

/** Coordinator -> subtask control messages. */
export type TaskControlMessage =
  & Envelope
  & (
    | { readonly t: "start" }
    | {
      readonly t: "trigger";
      readonly id: number;
      readonly ts: number;
      /** What the snapshot is for; absent means `"checkpoint"`. */
      readonly type?: "checkpoint" | "savepoint";
    }
    /**
     * Stop-with-savepoint (FLIP-34), to source subtasks: stop reading. With
     * `drain` the source ends its input as a bounded one does (`MAX_WATERMARK`,
     * end of data); without, it only stops emitting. Either way it then
     * reports end of input, so the coordinator takes the final savepoint.
     */
    | { readonly t: "stop-source"; readonly drain: boolean }
    | { readonly t: "complete"; readonly id: number }
    | { readonly t: "abort"; readonly id: number; readonly reason: string }
    | { readonly t: "finish" }
    | { readonly t: "cancel" }
  );

/** Everything a subtask's mailbox subject receives. */
export type TaskMessage = BufferMessage | EventMessage | CreditMessage | TaskControlMessage;

/**
 * What a subtask measured over its run (Flink's task metrics of the same
 * names). Times in ms.
 */
export interface SubtaskMetrics {
  /** Records consumed from the input gate (`numRecordsIn`). */
  readonly numRecordsIn: number;
  /** Records written to the subtask's network outputs (`numRecordsOut`, chained calls excluded). */
  readonly numRecordsOut: number;
  /** Time the subtask waited for credit to emit, in ms per second of its run (`backPressuredTimeMsPerSecond`). */
  readonly backPressuredTimeMsPerSecond: number;
  /** Wall time from start to finish, in ms. */
  readonly durationMs: number;
  /**
   * The counters of operators that keep their own (`StreamOperator.metrics`),
   * by operator uid, then Flink metric name (e.g. `numLateRecordsDropped`).
   */
  readonly operators?: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** A serialized error. */
export interface ErrorInfo {
  /** The error's class name. */
  readonly name: string;
  /** The message, with the messages of its cause chain appended. */
  readonly message: string;
  /** The stack, when known. */
  readonly stack?: string;
  /** True when the cause chain holds a `SuppressRestartsError`: the job fails without restarts. */
  readonly suppressRestarts?: boolean;
  /**
   * The first `SuppressRestartsError` of the chain (its class name, e.g.
   * `MariaDbRejectedError`, and its own message), when there is one: the
   * coordinator names it when it fails the job without restarts.
   */
  readonly suppressedBy?: { readonly name: string; readonly message: string };
}

/** Subtask/worker -> coordinator messages. */
export type CoordinatorMessage =
  & Envelope
  & (
    | { readonly t: "ready"; readonly vertex: string; readonly subtask: number }
    | { readonly t: "ack"; readonly ack: SubtaskAck }
    | {
      readonly t: "decline";
      readonly vertex: string;
      readonly subtask: number;
      readonly id: number;
      /** Why, as a failure code (it decides whether the decline counts as a failed checkpoint). */
      readonly code: CheckpointFailureCode;
      readonly reason: string;
    }
    | { readonly t: "eoi"; readonly vertex: string; readonly subtask: number }
    | {
      readonly t: "finished";
      readonly vertex: string;
      readonly subtask: number;
      readonly metrics: SubtaskMetrics;
    }
    | {
      readonly t: "failed";
      readonly vertex: string;
      readonly subtask: number;
      readonly error: ErrorInfo;
    }
    /**
     * A worker's answer to `cancel-attempt`: every subtask of attempt `att`
     * (or earlier) it ran has ended (its run settled, its operators closed).
     * `worker` is the worker (slot, in cluster mode) id it was sent to.
     */
    | { readonly t: "attempt-cancelled"; readonly worker: string }
    /**
     * A running subtask's metrics, sent every `METRICS_REPORT_INTERVAL_MS`
     * (`runtime/metrics/task_io_metrics.ts`); the coordinator keeps the
     * latest per subtask of the current attempt.
     */
    | {
      readonly t: "metrics";
      readonly vertex: string;
      readonly subtask: number;
      readonly sample: SubtaskMetricsSample;
    }
  );

/**
 * A completed checkpoint to restore: the job whose storage holds it (the
 * running job itself after a failover, or an earlier job when resuming) and
 * its id.
 */
export interface RestorePoint {
  /** The job id under which the checkpoint is stored. */
  readonly jobId: string;
  /** The checkpoint's id. */
  readonly checkpointId: number;
}

/** Coordinator -> worker messages. */
export type WorkerMessage =
  & Envelope
  & {
    /**
     * The sending coordinator's leader epoch (high availability); absent: 0.
     * Workers refuse messages of an epoch below the highest they saw
     * (`../cluster/ha/epoch_fence.ts`).
     */
    readonly epoch?: number | undefined;
  }
  & (
    | {
      readonly t: "deploy";
      readonly vertex: string;
      readonly subtask: number;
      readonly restore: RestorePoint | null;
    }
    /**
     * Cancel the job's subtasks of attempt `att` or earlier. With
     * `subtasks` (`vertexId#subtask` keys), only those (a region
     * failover); without, every one (a full failover).
     */
    | { readonly t: "cancel-attempt"; readonly subtasks?: readonly string[] | undefined }
    /** The job ended: the worker may free what it holds for it. */
    | { readonly t: "release" }
  );

/**
 * Checks that `value` can be one subject token: `[A-Za-z0-9_-]+`. Ids that
 * reach subjects (job, vertex, worker and slot ids) are made of these
 * characters, and one that arrives off the wire otherwise (e.g. a job id
 * `*`) must not turn into a wildcard that receives other jobs' messages.
 * @throws {RangeError} naming `what` and the value.
 */
export function subjectToken(value: string, what: string): string {
  if (!SUBJECT_TOKEN.test(value)) {
    throw new RangeError(`${what} must match [A-Za-z0-9_-]+, got ${JSON.stringify(value)}`);
  }
  return value;
}

const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;

/** The coordinator's subject of job `jobId`. @throws {RangeError} for an invalid job id. */
export function coordinatorSubject(jobId: string): string {
  return `weir.${subjectToken(jobId, "job id")}.coord`;
}

/** The mailbox subject of one subtask. */
export function taskSubject(
  jobId: string,
  attempt: number,
  vertexId: string,
  subtask: number,
): string {
  subjectToken(jobId, "job id");
  subjectToken(vertexId, "vertex id");
  if (!Number.isInteger(attempt) || attempt < 0 || !Number.isInteger(subtask) || subtask < 0) {
    throw new RangeError(
      `attempt and subtask must be non-negative integers, got ${attempt}, ${subtask}`,
    );
  }
  return `weir.${jobId}.${attempt}.task.${vertexId}.${subtask}`;
}

/** A worker's (or slot's) subject. @throws {RangeError} for an invalid id. */
export function workerSubject(workerId: string): string {
  return `weir.worker.${subjectToken(workerId, "worker id")}`;
}

/**
 * Turns an error into its serializable form: its name, its message with
 * each distinct message of its `cause` chain once (`chainMessage` in
 * `runtime/error_chain.ts`), its stack, and whether a
 * `SuppressRestartsError` is anywhere in the chain.
 */
export function errorInfo(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    // Each distinct message of the chain once (`error_chain.ts`).
    const message = chainMessage(error);
    let suppressedBy: Error | undefined = error instanceof SuppressRestartsError
      ? error
      : undefined;
    let cause: unknown = error.cause;
    const seen = new Set<unknown>([error]);
    while (cause instanceof Error && !seen.has(cause)) {
      seen.add(cause);
      if (cause instanceof SuppressRestartsError) suppressedBy ??= cause;
      cause = cause.cause;
    }
    const info: {
      name: string;
      message: string;
      stack?: string;
      suppressRestarts?: boolean;
      suppressedBy?: { name: string; message: string };
    } = {
      name: error.name,
      message: truncate(message),
    };
    if (error.stack !== undefined) info.stack = truncate(error.stack);
    if (suppressedBy !== undefined) {
      info.suppressRestarts = true;
      info.suppressedBy = { name: suppressedBy.name, message: truncate(suppressedBy.message) };
    }
    return info;
  }
  return { name: "Error", message: truncate(String(error)) };
}

/** Longest message or stack an error report carries, in characters (reports must fit one transport message). */
const MAX_ERROR_TEXT = 16 * 1024;

function truncate(text: string): string {
  return text.length <= MAX_ERROR_TEXT
    ? text
    : `${text.slice(0, MAX_ERROR_TEXT)}… (${text.length - MAX_ERROR_TEXT} more characters)`;
}
