/**
 * Timestamps and watermarks of one source subtask, per split (Flink's
 * `ProgressiveTimestampsAndWatermarks` with its split-local outputs,
 * FLIP-27 and FLIP-182).
 *
 * It is the {@linkcode ReaderOutput} a reader emits into. Every split output
 * (`createOutputForSplit`) has its own timestamp assignment, watermark
 * generator and idleness timer, and is one input of a
 * {@linkcode WatermarkOutputMultiplexer}; the subtask emits the minimum
 * watermark over its active split outputs, and is idle when all of them
 * are. Records collected on the main output directly count as one more
 * output, registered at the first such record.
 *
 * ## Order on the output
 *
 * - A record on an idle split first makes the split active (and the subtask,
 *   which emits `"active"` before the record).
 * - A watermark a generator emits from `onEvent` follows the record that
 *   caused it.
 * - Periodic watermarks and idleness are decided by
 *   {@linkcode ProgressiveTimestampsAndWatermarks.emitPeriodicWatermark},
 *   which the source operator calls every auto-watermark interval.
 *
 * ## Restore (beyond Flink)
 *
 * {@linkcode ProgressiveTimestampsAndWatermarks.snapshotSplit} returns, for
 * one split, the watermark it contributed and its generator's state;
 * {@linkcode ProgressiveTimestampsAndWatermarks.restoreSplit} hands them back
 * before the split's output is created, so the split starts from that
 * watermark and its generator resumes (see `watermark.ts`). Generator state
 * is handed to `restoreState` only when the generator has one (a strategy
 * changed since the checkpoint may not): the split's watermark still
 * resumes from its checkpointed value. The main output
 * is not a split and is not restored: a reader that collects on it directly
 * starts again from `-Infinity` after a restore (the floors of the
 * operators downstream still hold).
 *
 * @module
 */

import type { ReaderOutput, SourceOutput } from "../api/source.ts";
import type { OutputTag } from "../api/output_tag.ts";
import type { Output } from "../task/operators/operator.ts";
import type { Clock } from "./clock.ts";
import { IdlenessTimer } from "./idleness_timer.ts";
import { WatermarkEmitter } from "./watermark_emitter.ts";
import {
  MAX_WATERMARK,
  MIN_WATERMARK,
  type TimestampAssigner,
  type WatermarkGenerator,
  type WatermarkStrategy,
} from "./watermark.ts";
import { type PartialWatermark, WatermarkOutputMultiplexer } from "./watermark_multiplexer.ts";

/** What a split's checkpoint keeps of its watermark. Plain data, MessagePack-encodable. */
export interface SplitWatermarkState {
  /** The last watermark the split contributed (ms; `-Infinity`: none yet). */
  readonly watermark: number;
  /** The generator's `snapshotState()`, when it has one. */
  readonly generator?: unknown;
}

/** Options of {@linkcode ProgressiveTimestampsAndWatermarks}. */
export interface ProgressiveTimestampsAndWatermarksOptions<T> {
  /** The source's strategy. */
  readonly strategy: WatermarkStrategy<T>;
  /** The job's processing-time clock (idleness). */
  readonly clock: Clock;
  /** Where records, side outputs, watermarks and statuses go. */
  readonly output: Output;
  /** The source subtask, for error messages (e.g. `source 'numbers' subtask 1/2 of job 'j'`). */
  readonly where: string;
}

/** One split's output (or the main output's records); see the module docs. */
class SplitLocalOutput<T> implements SourceOutput<T> {
  readonly partial: PartialWatermark;
  readonly generator: WatermarkGenerator<T> | undefined;
  readonly timer: IdlenessTimer | undefined;
  readonly #assigner: TimestampAssigner<T> | undefined;
  readonly #out: Output;

  constructor(
    partial: PartialWatermark,
    parts: {
      generator: WatermarkGenerator<T> | undefined;
      timer: IdlenessTimer | undefined;
      assigner: TimestampAssigner<T> | undefined;
      out: Output;
    },
  ) {
    this.partial = partial;
    this.generator = parts.generator;
    this.timer = parts.timer;
    this.#assigner = parts.assigner;
    this.#out = parts.out;
  }

  collect(record: T, timestamp?: number): void {
    const ts = this.#assigner === undefined ? timestamp : this.#assigner(record, timestamp);
    const partial = this.partial;
    if (partial.idle) partial.immediate.markActive();
    if (this.timer !== undefined) this.timer.activity();
    this.#out.collect(record, ts);
    if (this.generator !== undefined && ts !== undefined) {
      this.generator.onEvent(record, ts, partial.immediate);
    }
  }

  emitWatermark(watermark: number): void {
    this.partial.immediate.emitWatermark(watermark);
  }

  markIdle(): void {
    this.partial.immediate.markIdle();
  }

  markActive(): void {
    this.partial.immediate.markActive();
  }

  /** One periodic round: idleness first, else the generator's periodic watermark. */
  periodic(nowMs: number): void {
    if (this.timer !== undefined && this.timer.checkIfIdle(nowMs)) {
      this.partial.deferred.markIdle();
    } else if (this.generator !== undefined) {
      this.generator.onPeriodicEmit(this.partial.deferred);
    }
  }
}

/** The per-split timestamps and watermarks of one source subtask; see the module docs. */
export class ProgressiveTimestampsAndWatermarks<T> {
  /** The output the reader emits into. */
  readonly readerOutput: ReaderOutput<T>;
  readonly #o: ProgressiveTimestampsAndWatermarksOptions<T>;
  readonly #subtask: WatermarkEmitter;
  readonly #mux: WatermarkOutputMultiplexer;
  readonly #splits = new Map<string, SplitLocalOutput<T>>();
  readonly #restored = new Map<string, SplitWatermarkState>();
  #main: SplitLocalOutput<T> | undefined;

  /** @param options see {@linkcode ProgressiveTimestampsAndWatermarksOptions}. */
  constructor(options: ProgressiveTimestampsAndWatermarksOptions<T>) {
    this.#o = options;
    this.#subtask = new WatermarkEmitter(options.output);
    this.#mux = new WatermarkOutputMultiplexer(this.#subtask);
    const out = options.output;
    const main = () => this.#main ??= this.#newOutput(undefined, undefined);
    this.readerOutput = {
      collect: (record: T, timestamp?: number) => main().collect(record, timestamp),
      emitWatermark: (watermark: number) => main().emitWatermark(watermark),
      markIdle: () => main().markIdle(),
      markActive: () => main().markActive(),
      output: <X>(tag: OutputTag<X>, value: X) => out.collectSide(tag.id, value, undefined),
      createOutputForSplit: (splitId: string) => this.#createOutputForSplit(splitId),
      releaseOutputForSplit: (splitId: string) => this.#releaseOutputForSplit(splitId),
    };
  }

  /**
   * Whether periodic rounds do anything: the strategy generates watermarks
   * or detects idleness. Without either, the source operator needs no
   * periodic wake-ups.
   */
  get periodic(): boolean {
    return this.#o.strategy.createGenerator !== undefined ||
      this.#o.strategy.idleTimeoutMs !== undefined;
  }

  /** The subtask's last emitted watermark (ms). */
  get currentWatermark(): number {
    return this.#subtask.watermark;
  }

  /** Whether the subtask is idle. */
  get idle(): boolean {
    return this.#subtask.idle;
  }

  /**
   * Hands back a split's watermark state from a checkpoint; used when the
   * reader creates the split's output.
   */
  restoreSplit(splitId: string, state: SplitWatermarkState): void {
    this.#restored.set(splitId, state);
  }

  /**
   * The watermark state of split `splitId` to checkpoint with it: that of
   * its output, or what was restored for it and not used yet, or `undefined`.
   */
  snapshotSplit(splitId: string): SplitWatermarkState | undefined {
    const output = this.#splits.get(splitId);
    if (output === undefined) return this.#restored.get(splitId);
    const generator = output.generator?.snapshotState?.();
    return generator === undefined
      ? { watermark: output.partial.watermark }
      : { watermark: output.partial.watermark, generator };
  }

  /**
   * One periodic round at processing time `nowMs`: each output checks its
   * idleness or asks its generator for a watermark, then the subtask emits
   * the new minimum (or turns idle).
   */
  emitPeriodicWatermark(nowMs: number): void {
    for (const output of this.#splits.values()) output.periodic(nowMs);
    this.#main?.periodic(nowMs);
    this.#mux.onPeriodicEmit();
  }

  /** Marks the subtask idle (it owns no split). A later record or watermark makes it active. */
  markIdle(): void {
    this.#subtask.markIdle();
  }

  /** End of input: emits `MAX_WATERMARK` (after `"active"` if the subtask was idle). */
  emitFinalWatermark(): void {
    this.#subtask.emitWatermark(MAX_WATERMARK);
  }

  #createOutputForSplit(splitId: string): SourceOutput<T> {
    const existing = this.#splits.get(splitId);
    if (existing !== undefined) return existing;
    const restored = this.#restored.get(splitId);
    this.#restored.delete(splitId);
    const output = this.#newOutput(splitId, restored);
    this.#splits.set(splitId, output);
    return output;
  }

  #releaseOutputForSplit(splitId: string): void {
    const output = this.#splits.get(splitId);
    if (output === undefined) return;
    this.#splits.delete(splitId);
    this.#mux.unregisterOutput(output.partial);
  }

  #newOutput(
    splitId: string | undefined,
    restored: SplitWatermarkState | undefined,
  ): SplitLocalOutput<T> {
    const { strategy, clock, output } = this.#o;
    const generator = strategy.createGenerator?.({ clock });
    if (restored?.generator !== undefined && generator?.restoreState !== undefined) {
      try {
        generator.restoreState(restored.generator);
      } catch (error) {
        throw new Error(
          `Cannot restore the watermark generator of split ${splitId} in ${this.#o.where}: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
    }
    const idleTimeoutMs = strategy.idleTimeoutMs;
    const initial = restored === undefined ? MIN_WATERMARK : restored.watermark;
    if (typeof initial !== "number" || Number.isNaN(initial)) {
      throw new Error(
        `Cannot restore the watermark of split ${splitId} in ${this.#o.where}: it must be a number (ms), current value is ${
          JSON.stringify(initial)
        }`,
      );
    }
    return new SplitLocalOutput<T>(this.#mux.registerNewOutput(initial), {
      generator,
      timer: idleTimeoutMs === undefined
        ? undefined
        : new IdlenessTimer(idleTimeoutMs, clock.now()),
      assigner: strategy.timestampAssigner,
      out: output,
    });
  }
}
