/**
 * The source operator: runs a {@linkcode SourceReader} on the subtask's
 * mailbox loop, assigns timestamps and generates watermarks per split
 * (`ProgressiveTimestampsAndWatermarks`, Flink's FLIP-27 split-local
 * outputs), and checkpoints the reader's splits, with their positions and
 * watermark state, as split-redistributed operator list state named
 * `_splits`.
 *
 * ## Periodic watermarks and idleness
 *
 * From its first poll on, the operator asks the task for a processing-time
 * wake-up every auto-watermark interval (`env.requestWakeup`, on the job's
 * clock, so `ManualClock` drives it in tests) and, at each, lets every split
 * output check its idleness and emit its periodic watermark. Wake-ups are
 * requested only when the strategy generates watermarks or detects
 * idleness. They run even while the reader has nothing to emit.
 *
 * ## A subtask without splits
 *
 * A source subtask that owns no split (more subtasks than splits) marks
 * itself idle at its first poll, so it never holds back event time
 * downstream. If the source is unbounded, its reader is never polled and
 * the subtask never ends: it emits no `MAX_WATERMARK` while the source runs.
 * A bounded source's reader is polled as usual and ends the subtask
 * normally.
 *
 * ## Checkpointed split state
 *
 * Each item of `_splits` is `{ split, watermark }`: the reader's split at its
 * position, and the split's `SplitWatermarkState` (or `null` when the split
 * has no output yet). Items of the older format, bare splits, are restored
 * without watermark state.
 *
 * @module
 */

import type { InputStatus, Source, SourceReader, SourceSplit } from "../../api/source.ts";
import type { ListState } from "../../api/state.ts";
import { ListStateDescriptor } from "../../api/state.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import type { WatermarkStrategy } from "../../time/watermark.ts";
import {
  ProgressiveTimestampsAndWatermarks,
  type SplitWatermarkState,
} from "../../time/progressive_watermarks.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshot,
  Output,
  StreamOperator,
} from "./operator.ts";

/** One item of the `_splits` operator state. Plain data, MessagePack-encodable. */
export interface SourceSplitState {
  /** The split at its checkpointed position. */
  readonly split: SourceSplit;
  /** The split's watermark state, or `null` when it had no output yet. */
  readonly watermark: SplitWatermarkState | null;
}

/** Drives one source subtask's reader. */
export class SourceOperator implements StreamOperator {
  readonly uid: string;
  readonly name: string;
  readonly #source: Source<unknown, SourceSplit>;
  readonly #env: OperatorEnvironment;
  readonly #watermarkIntervalMs: number;
  readonly #watermarks: ProgressiveTimestampsAndWatermarks<unknown>;
  #reader: SourceReader<unknown, SourceSplit> | undefined;
  #store: DefaultOperatorStateStore | undefined;
  #splitsState: ListState<SourceSplitState | SourceSplit> | undefined;
  #restoredSplits: SourceSplit[] | undefined;
  /** False when the subtask was assigned no split. */
  #ownsSplits = true;
  /** Set at the first poll: from then on, periodic watermarks and status may be emitted. */
  #running = false;
  #ended = false;
  #nextPeriodicAt = 0;
  #closed = false;
  /** What an unbounded subtask without splits waits for: only `close`. */
  readonly #closedSignal: { promise: Promise<void>; resolve: () => void };

  constructor(options: {
    uid: string;
    name: string;
    source: Source<unknown, SourceSplit>;
    watermarkStrategy: WatermarkStrategy<unknown>;
    env: OperatorEnvironment;
    output: Output;
    autoWatermarkIntervalMs: number;
  }) {
    this.uid = options.uid;
    this.name = options.name;
    this.#source = options.source;
    this.#env = options.env;
    this.#watermarkIntervalMs = options.autoWatermarkIntervalMs;
    this.#watermarks = new ProgressiveTimestampsAndWatermarks({
      strategy: options.watermarkStrategy,
      clock: options.env.clock,
      output: options.output,
      where: this.#where(),
    });
    let resolve!: () => void;
    const promise = new Promise<void>((r) => resolve = r);
    this.#closedSignal = { promise, resolve };
  }

  #where(): string {
    const env = this.#env;
    return `source '${this.name}' (uid ${this.uid}) subtask ${env.subtaskIndex}/${env.parallelism} of job ${env.jobId}`;
  }

  get #idleForever(): boolean {
    return !this.#ownsSplits && this.#source.boundedness !== "bounded";
  }

  initializeState(restore: OperatorRestore | undefined): Promise<void> {
    this.#store = new DefaultOperatorStateStore(restore?.operator);
    this.#splitsState = this.#store.getListState(
      new ListStateDescriptor<SourceSplitState | SourceSplit>("_splits"),
    );
    if (restore) {
      this.#restoredSplits = [...this.#splitsState.get()].map((item) => this.#restoreItem(item));
    }
    return Promise.resolve();
  }

  /** Reads one `_splits` item (either format) and hands its watermark state over. */
  #restoreItem(item: SourceSplitState | SourceSplit): SourceSplit {
    const isObject = (v: unknown): v is Record<string, unknown> =>
      typeof v === "object" && v !== null;
    if (isObject(item) && typeof item.splitId === "string") return item as SourceSplit;
    if (isObject(item) && isObject(item.split) && typeof item.split.splitId === "string") {
      const { split, watermark } = item as SourceSplitState;
      if (watermark !== null && watermark !== undefined) {
        this.#watermarks.restoreSplit(split.splitId, watermark);
      }
      return split;
    }
    throw new Error(
      `Cannot restore ${this.#where()}: a checkpointed split must be a split or { split, watermark }, got ${
        JSON.stringify(item)
      }`,
    );
  }

  async open(): Promise<void> {
    const env = this.#env;
    this.#reader = this.#source.createReader({
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
      attempt: env.attempt,
      operatorName: this.name,
      currentProcessingTime: () => env.clock.now(),
      clock: env.clock,
    });
    await this.#reader.start?.();
    let splits = this.#restoredSplits;
    if (splits === undefined) {
      const all = await this.#source.enumerateSplits({ parallelism: env.parallelism });
      splits = all.filter((_, i) => i % env.parallelism === env.subtaskIndex);
    }
    this.#ownsSplits = splits.length > 0;
    this.#reader.addSplits(splits);
  }

  /**
   * Polls the reader once. The first poll starts periodic watermarks and,
   * for a subtask without splits, marks it idle. An unbounded subtask
   * without splits never polls its reader.
   */
  poll(): InputStatus | Promise<InputStatus> {
    if (!this.#running) this.#start();
    if (this.#idleForever) return "NOTHING_AVAILABLE";
    return this.#reader!.pollNext(this.#watermarks.readerOutput);
  }

  #start(): void {
    this.#running = true;
    if (!this.#ownsSplits) this.#watermarks.markIdle();
    if (this.#watermarks.periodic) {
      this.#nextPeriodicAt = this.#env.clock.now() + this.#watermarkIntervalMs;
      this.#env.requestWakeup(this.#nextPeriodicAt);
    }
  }

  /** Resolves when the reader may have records again (never, for an unbounded subtask without splits). */
  isAvailable(): Promise<void> {
    if (this.#idleForever) return this.#closedSignal.promise;
    return this.#reader!.isAvailable?.() ??
      new Promise((resolve) => setTimeout(resolve, 1));
  }

  processElement(): void {
    throw new Error(`Source operator '${this.name}' has no input`);
  }

  processWatermark(): void {}

  /** Emits the periodic watermarks and idleness when their interval is due, and asks for the next wake-up. */
  onProcessingTime(nowMs: number): void {
    if (!this.#running || this.#ended || this.#closed || !this.#watermarks.periodic) return;
    if (nowMs >= this.#nextPeriodicAt) {
      this.#watermarks.emitPeriodicWatermark(nowMs);
      this.#nextPeriodicAt = nowMs + this.#watermarkIntervalMs;
    }
    this.#env.requestWakeup(this.#nextPeriodicAt);
  }

  quiesce(): Promise<void> {
    return Promise.resolve();
  }

  /** End of input: event time ends too, so every event-time timer downstream fires. */
  endInput(): Promise<void> {
    this.#ended = true;
    this.#watermarks.emitFinalWatermark();
    return Promise.resolve();
  }

  snapshotState(checkpointId: number): Promise<OperatorSnapshot> {
    const splits = this.#reader!.snapshotState(checkpointId);
    this.#splitsState!.update(splits.map((split) => ({
      split,
      watermark: this.#watermarks.snapshotSplit(split.splitId) ?? null,
    })));
    return Promise.resolve({ operator: this.#store!.snapshot() });
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await this.#reader?.notifyCheckpointComplete?.(checkpointId);
  }

  notifyCheckpointAborted(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closedSignal.resolve();
    await this.#reader?.close?.();
  }
}
