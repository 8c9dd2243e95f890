/**
 * A write-ahead-log sink (Flink's `GenericWriteAheadSink`), on the
 * writer/committer API: records are held back in the checkpoint and sent
 * to the target only once the checkpoint that covers them has completed,
 * so nothing a restore rolls back was ever sent.
 *
 * ## How it maps onto SinkV2
 *
 * Flink's operator keeps the records of each checkpoint in its operator
 * state and sends them in `notifyCheckpointComplete`. Here:
 *
 * 1. `write` appends the record to the writer's in-memory buffer.
 * 2. At checkpoint *n*'s barrier, `prepareCommit(n)` turns the buffer into
 *    committables {@linkcode WalCommittable} — `(job, attempt, subtask, n,
 *    part, values)`, at most `maxValuesPerCommittable` values each — and
 *    empties it. The runtime puts the committables into checkpoint *n*:
 *    that is the write-ahead log.
 * 3. When *n* completes, the committer sends each committable's values and
 *    records its {@linkcode WalCommitId}; a committable whose id is
 *    recorded already is skipped (`isCheckpointCommitted`). On restore, the
 *    committables of the restored checkpoint are sent the same way, which
 *    skips those sent before the crash.
 *
 * The writer keeps no state of its own (the buffer is empty after every
 * pre-commit), so there is no writer state to restore.
 *
 * ## Where it is exactly-once, and where only at-least-once
 *
 * - With an atomic target ({@linkcode WalTargetFactory} `atomicity:
 *   "atomic"`, e.g. `PostgresWalTarget`), the values and the
 *   batch's record are written in one transaction: a crash at any point
 *   either leaves both (the replay is skipped) or neither (the replay
 *   writes it). Exactly-once, given a replayable source and exactly-once
 *   checkpointing.
 * - With a separate target and committer (`atomicity: "separate"`), the
 *   sink is only at-least-once, in exactly these places:
 *   - a crash (or a failing `commitCheckpoint`) after `sendValues`
 *     returned and before `commitCheckpoint` did: the restore finds no
 *     record and sends the whole batch again;
 *   - a `sendValues` that fails halfway (the target took some values):
 *     the retry sends the whole batch again;
 *   - a committer that loses records (not durable, or pruned too early).
 *
 *   `deliveryGuarantee: "exactly-once"` is refused for such a target with
 *   a {@linkcode DeliveryGuaranteeError}.
 * - Checkpointing in at-least-once mode (no alignment) puts records that
 *   follow a barrier into the checkpoint on some channels; a restore replays
 *   them: at-least-once whatever the target.
 * - Without checkpointing, records are sent only at a bounded job's final
 *   checkpoint at the end of input (a failure before it restarts from the
 *   beginning; nothing was sent). An unbounded job would never send
 *   anything, so `execute()` refuses it (`runtime/api/delivery_check.ts`;
 *   the sink declares `commitsOnlyAtCheckpoints`). The writer cannot know
 *   whether the job is bounded, so it does not check the checkpointing
 *   mode itself.
 *
 * ## Costs and limits
 *
 * - Latency: a record reaches the target only after the checkpoint after
 *   it completes (one checkpoint interval plus the checkpoint's duration).
 * - Memory and checkpoint size grow with the records per checkpoint
 *   interval: every record of the interval is held in the writer's memory
 *   until the barrier, and then in the checkpoint (MessagePack) until it is
 *   committed. A slow or failing target makes the pending committables
 *   accumulate in every later checkpoint. Size the interval to the rate:
 *   at 10k records/s of 100 bytes and a 10 s interval, ~10 MB per subtask
 *   per checkpoint.
 * - Writes are chunked: a checkpoint's values are split into committables
 *   of at most `maxValuesPerCommittable` values (default
 *   {@linkcode DEFAULT_MAX_VALUES_PER_COMMITTABLE}); each part is sent and
 *   recorded on its own (one transaction each with an atomic target), and
 *   the PostgreSQL target splits a part into statements of bounded size.
 * - Values must be plain data (they are checkpointed as MessagePack).
 * - Measured (`deno run -A connectors/wal/wal_sink_bench.ts`, 200k records
 *   in 10 checkpoints into the local PostgreSQL, 2-core machine): about
 *   235k rows/s with 10 000 values per committable (20 transactions),
 *   165k rows/s with 1000 (200 transactions).
 *
 * @example
 * ```ts
 * import { WriteAheadSink } from "./wal_sink.ts";
 * import type { WalCommitId } from "./types.ts";
 *
 * const sent: string[] = [];
 * const done = new Set<string>();
 * const key = (id: WalCommitId) => `${id.jobId}/${id.attempt}/${id.subtask}/${id.checkpointId}/${id.part}`;
 * const sink = new WriteAheadSink<string>({
 *   target: {
 *     atomicity: "separate",
 *     open: () => Promise.resolve({
 *       target: { sendValues: (values) => { sent.push(...values); return Promise.resolve(); }, close: () => Promise.resolve() },
 *       committer: {
 *         isCheckpointCommitted: (id) => Promise.resolve(done.has(key(id))),
 *         commitCheckpoint: (id) => { done.add(key(id)); return Promise.resolve(); },
 *         close: () => Promise.resolve(),
 *       },
 *     }),
 *   },
 * });
 * console.assert(sink.deliveryGuarantee === "at-least-once");
 * ```
 *
 * @module
 */

import {
  checkDeliveryGuarantee,
  type CommitRequest,
  type Committer,
  type CommitterInitContext,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import type { SinkContext } from "../../runtime/api/sink.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { logger } from "../../runtime/log.ts";
import type {
  AtomicWalTarget,
  SeparateWalDestination,
  WalCommitId,
  WalTargetFactory,
} from "./types.ts";
import {
  checkWalCommittable,
  describeWalCommitId,
  type WalCommittable,
} from "./wal_committable.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode WriteAheadSinkOptions} and the kinds of their values. */
const WAL_SINK_OPTIONS: OptionsShape<WriteAheadSinkOptions<unknown>> = {
  target: "object",
  deliveryGuarantee: "any",
  maxValuesPerCommittable: "number",
  checkValue: "function",
  name: "string",
};

const log = logger("wal-sink");

/** Default of {@linkcode WriteAheadSinkOptions.maxValuesPerCommittable}: 10 000 values. */
export const DEFAULT_MAX_VALUES_PER_COMMITTABLE = 10_000;

/** Options of {@linkcode WriteAheadSink}. */
export interface WriteAheadSinkOptions<T> {
  /** Where committed batches go; its `atomicity` decides the guarantees the sink can give. */
  readonly target: WalTargetFactory<T>;
  /**
   * What the sink promises: `"exactly-once"` (default for an atomic target;
   * refused for a separate one) or `"at-least-once"` (default for a
   * separate target).
   */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /** The most values in one committable (one transaction of an atomic target): an integer ≥ 1. */
  readonly maxValuesPerCommittable?: number;
  /**
   * Validates one value read back from a checkpoint, throwing naming what
   * is wrong; values are taken as they are when absent.
   */
  readonly checkValue?: (raw: unknown) => T;
  /** The sink's name in errors and logs. Default `"WriteAheadSink"`. */
  readonly name?: string;
}

function positiveInteger(sink: string, name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(
      `${sink}: '${name}' must be an integer >= ${min}: current value is ${value}`,
    );
  }
  return value;
}

/**
 * A write-ahead-log sink (Flink's `GenericWriteAheadSink`); see the module
 * docs for the protocol, its guarantees and its costs.
 *
 * @typeParam T the records (plain data: they are checkpointed).
 */
export class WriteAheadSink<T> implements SinkV2<T, WalCommittable<T>, never> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** What this sink promises, after the checks of the constructor. */
  readonly deliveryGuarantee: DeliveryGuarantee;
  /** Always `true`: records are sent only when a checkpoint completes. */
  readonly commitsOnlyAtCheckpoints = true;
  /** The most values per committable. */
  readonly maxValuesPerCommittable: number;
  readonly #options: WriteAheadSinkOptions<T>;
  readonly #name: string;

  /**
   * Builds the sink.
   * @param options the target and the limits.
   * @throws {DeliveryGuaranteeError} when `deliveryGuarantee` is not one the
   *   target supports (`"exactly-once"` needs `atomicity: "atomic"`).
   * @throws {RangeError} when `maxValuesPerCommittable` is not an integer ≥ 1,
   *   or for an unknown option (`checkOptions`).
   * @throws {TypeError} for an option of the wrong type (`name: 5`).
   */
  constructor(options: WriteAheadSinkOptions<T>) {
    checkOptions("WriteAheadSink", options, WAL_SINK_OPTIONS);
    this.#options = options;
    this.#name = options.name ?? "WriteAheadSink";
    const atomic = options.target.atomicity === "atomic";
    const supports: DeliveryGuarantee[] = atomic
      ? ["at-least-once", "exactly-once"]
      : ["at-least-once"];
    this.deliveryGuarantee = checkDeliveryGuarantee(
      atomic ? this.#name : `${this.#name} with a non-atomic target (atomicity "separate")`,
      options.deliveryGuarantee ?? (atomic ? "exactly-once" : "at-least-once"),
      supports,
    );
    this.maxValuesPerCommittable = positiveInteger(
      this.#name,
      "maxValuesPerCommittable",
      options.maxValuesPerCommittable ?? DEFAULT_MAX_VALUES_PER_COMMITTABLE,
      1,
    );
  }

  /** Creates the subtask's writer. */
  createWriter(context: WriterInitContext<never>): SinkWriter<T, WalCommittable<T>, never> {
    return new WalWriter<T>({
      name: this.#name,
      context,
      maxValuesPerCommittable: this.maxValuesPerCommittable,
    });
  }

  /** Opens the target for the subtask's committer. */
  async createCommitter(context: CommitterInitContext): Promise<Committer<WalCommittable<T>>> {
    const target = this.#options.target;
    const where = `${this.#name} ${context.uid}#${context.subtaskIndex} of job ${context.jobId}`;
    const sender = target.atomicity === "atomic"
      ? new AtomicSender(await target.open(context))
      : new SeparateSender(await target.open(context));
    return new WalCommitter<T>({ where, sender });
  }

  /**
   * Validates a committable read back from a checkpoint.
   * @throws {SinkStateError} naming what is wrong.
   */
  checkCommittable(raw: unknown): WalCommittable<T> {
    return checkWalCommittable(raw, this.#options.checkValue);
  }
}

interface WalWriterOptions {
  readonly name: string;
  readonly context: WriterInitContext<never>;
  readonly maxValuesPerCommittable: number;
}

/** Buffers the records of the current checkpoint interval. */
class WalWriter<T> implements SinkWriter<T, WalCommittable<T>, never> {
  #buffer: T[] = [];
  readonly #context: WriterInitContext<never>;
  readonly #maxValues: number;

  constructor(options: WalWriterOptions) {
    const { context } = options;
    this.#context = context;
    this.#maxValues = options.maxValuesPerCommittable;
  }

  write(value: T, _context: SinkContext): void {
    this.#buffer.push(value);
  }

  flush(_endOfInput: boolean): void {}

  prepareCommit(checkpointId: number): readonly WalCommittable<T>[] {
    const buffer = this.#buffer;
    if (buffer.length === 0) return [];
    this.#buffer = [];
    const { jobId, attempt, subtaskIndex: subtask } = this.#context;
    const committables: WalCommittable<T>[] = [];
    for (let start = 0, part = 0; start < buffer.length; start += this.#maxValues, part++) {
      const values = start === 0 && buffer.length <= this.#maxValues
        ? buffer
        : buffer.slice(start, start + this.#maxValues);
      committables.push({ jobId, attempt, subtask, checkpointId, part, values });
    }
    return committables;
  }

  close(): void {
    this.#buffer = [];
  }
}

/** Sends one batch once: the two kinds of target behind one face. */
interface BatchSender<T> {
  send(values: readonly T[], id: WalCommitId): Promise<"sent" | "already-committed">;
  close(): Promise<void>;
}

class AtomicSender<T> implements BatchSender<T> {
  readonly #target: AtomicWalTarget<T>;
  constructor(target: AtomicWalTarget<T>) {
    this.#target = target;
  }
  send(values: readonly T[], id: WalCommitId): Promise<"sent" | "already-committed"> {
    return this.#target.sendValuesOnce(values, id);
  }
  close(): Promise<void> {
    return this.#target.close();
  }
}

class SeparateSender<T> implements BatchSender<T> {
  readonly #destination: SeparateWalDestination<T>;
  constructor(destination: SeparateWalDestination<T>) {
    this.#destination = destination;
  }
  async send(values: readonly T[], id: WalCommitId): Promise<"sent" | "already-committed"> {
    const { target, committer } = this.#destination;
    if (await committer.isCheckpointCommitted(id)) return "already-committed";
    // At-least-once window: a crash between these two calls sends the batch again.
    await target.sendValues(values, id);
    await committer.commitCheckpoint(id);
    return "sent";
  }
  async close(): Promise<void> {
    const { target, committer } = this.#destination;
    const results = await Promise.allSettled([target.close(), committer.close()]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  }
}

interface WalCommitterOptions<T> {
  readonly where: string;
  readonly sender: BatchSender<T>;
}

/** Sends committed batches, skipping those recorded already. */
class WalCommitter<T> implements Committer<WalCommittable<T>> {
  readonly #o: WalCommitterOptions<T>;
  #closed = false;

  constructor(options: WalCommitterOptions<T>) {
    this.#o = options;
  }

  async commit(requests: readonly CommitRequest<WalCommittable<T>>[]): Promise<void> {
    for (const request of requests) {
      const { jobId, attempt, subtask, checkpointId, part, values } = request.committable;
      const id: WalCommitId = { jobId, attempt, subtask, checkpointId, part };
      let outcome: "sent" | "already-committed";
      try {
        outcome = await this.#o.sender.send(values, id);
      } catch (error) {
        const what = `${this.#o.where}: cannot send batch ${describeWalCommitId(id)} ` +
          `(${values.length} values, try ${request.numberOfRetries + 1})`;
        if (error instanceof SuppressRestartsError) {
          request.signalFailedWithKnownReason(
            new WalCommitError(`${what}: ${error.message}`, { cause: error }),
          );
        } else {
          // The commit round bounds the retries; then the attempt fails and a restore sends again.
          log.warn(`${what}, will retry: ${error instanceof Error ? error.message : error}`);
          request.retryLater();
        }
        continue;
      }
      if (outcome === "already-committed") {
        log.info(`${this.#o.where}: batch ${describeWalCommitId(id)} was sent before; skipped`);
        request.signalAlreadyCommitted();
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#o.sender.close();
  }
}

/**
 * A batch the target rejected for good (a {@linkcode SuppressRestartsError}
 * from the target): the job fails without restarts, naming the sink
 * subtask and the batch.
 */
export class WalCommitError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the sink subtask, the batch and the target's reason.
   * @param options the target's error as `cause`.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WalCommitError";
  }
}
