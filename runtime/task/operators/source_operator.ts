/**
 * The source operator: runs a {@linkcode SourceReader} on the subtask's
 * mailbox loop, assigns timestamps, generates watermarks periodically, and
 * checkpoints the reader's splits (with their positions) as split-
 * redistributed operator list state named `_splits`.
 *
 * @module
 */

import type {
  InputStatus,
  ReaderOutput,
  Source,
  SourceReader,
  SourceSplit,
} from "../../api/source.ts";
import type { OutputTag } from "../../api/output_tag.ts";
import type { ListState } from "../../api/state.ts";
import { ListStateDescriptor } from "../../api/state.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import {
  MAX_WATERMARK,
  MIN_WATERMARK,
  type WatermarkGenerator,
  type WatermarkStrategy,
} from "../../time/watermark.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshot,
  Output,
  StreamOperator,
} from "./operator.ts";

/** Drives one source subtask's reader. */
export class SourceOperator implements StreamOperator {
  readonly uid: string;
  readonly name: string;
  readonly #source: Source<unknown, SourceSplit>;
  readonly #strategy: WatermarkStrategy<unknown>;
  readonly #env: OperatorEnvironment;
  readonly #output: Output;
  readonly #watermarkIntervalMs: number;
  #reader: SourceReader<unknown, SourceSplit> | undefined;
  #store: DefaultOperatorStateStore | undefined;
  #splitsState: ListState<SourceSplit> | undefined;
  #restoredSplits: SourceSplit[] | undefined;
  #generator: WatermarkGenerator | undefined;
  #watermark = MIN_WATERMARK;
  #lastWatermarkAt = 0;
  #readerOutput: ReaderOutput<unknown>;
  #closed = false;

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
    this.#strategy = options.watermarkStrategy;
    this.#env = options.env;
    this.#output = options.output;
    this.#watermarkIntervalMs = options.autoWatermarkIntervalMs;
    const assigner = this.#strategy.timestampAssigner;
    const output = this.#output;
    this.#readerOutput = {
      collect: (record: unknown, timestamp?: number) => {
        const ts = assigner ? assigner(record, timestamp) : timestamp;
        if (ts !== undefined && this.#generator) this.#generator.onEvent(ts);
        output.collect(record, ts);
      },
      output<X>(tag: OutputTag<X>, value: X) {
        output.collectSide(tag.id, value, undefined);
      },
    };
  }

  initializeState(restore: OperatorRestore | undefined): Promise<void> {
    this.#store = new DefaultOperatorStateStore(restore?.operator);
    this.#splitsState = this.#store.getListState(new ListStateDescriptor<SourceSplit>("_splits"));
    if (restore) this.#restoredSplits = [...this.#splitsState.get()];
    return Promise.resolve();
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
    this.#generator = this.#strategy.createGenerator?.();
    this.#lastWatermarkAt = env.clock.now();
    await this.#reader.start?.();
    let splits = this.#restoredSplits;
    if (splits === undefined) {
      const all = await this.#source.enumerateSplits({ parallelism: env.parallelism });
      splits = all.filter((_, i) => i % env.parallelism === env.subtaskIndex);
    }
    this.#reader.addSplits(splits);
  }

  /** Polls the reader once, then emits a periodic watermark when one is due. */
  poll(): InputStatus | Promise<InputStatus> {
    const status = this.#reader!.pollNext(this.#readerOutput);
    this.#maybeEmitWatermark();
    return status;
  }

  /** Resolves when the reader may have records again. */
  isAvailable(): Promise<void> {
    return this.#reader!.isAvailable?.() ??
      new Promise((resolve) => setTimeout(resolve, 1));
  }

  #maybeEmitWatermark(): void {
    if (!this.#generator) return;
    const now = this.#env.clock.now();
    if (now - this.#lastWatermarkAt < this.#watermarkIntervalMs) return;
    this.#lastWatermarkAt = now;
    const wm = this.#generator.onPeriodicEmit();
    if (wm !== undefined && wm > this.#watermark) {
      this.#watermark = wm;
      this.#output.emitWatermark(wm);
    }
  }

  processElement(): void {
    throw new Error(`Source operator '${this.name}' has no input`);
  }

  processWatermark(): void {}

  onProcessingTime(): void {}

  quiesce(): Promise<void> {
    return Promise.resolve();
  }

  /** End of input: event time ends too, so every event-time timer downstream fires. */
  endInput(): Promise<void> {
    this.#watermark = MAX_WATERMARK;
    this.#output.emitWatermark(MAX_WATERMARK);
    return Promise.resolve();
  }

  snapshotState(checkpointId: number): Promise<OperatorSnapshot> {
    this.#splitsState!.update(this.#reader!.snapshotState(checkpointId));
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
    await this.#reader?.close?.();
  }
}
