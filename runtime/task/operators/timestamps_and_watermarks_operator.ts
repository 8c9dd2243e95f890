/**
 * `assignTimestampsAndWatermarks` in the middle of a job (Flink's
 * `TimestampsAndWatermarksOperator`): assigns each record a timestamp with
 * the strategy's assigner, runs one watermark generator per subtask, and
 * emits its watermarks, punctuated from `onEvent` and periodic every
 * auto-watermark interval of processing time (a wake-up on the job's clock).
 *
 * ## Upstream watermarks and status
 *
 * As in Flink, watermarks from upstream are ignored, except
 * `MAX_WATERMARK` (the end of input), which is forwarded so event time still
 * ends; upstream watermark status is ignored too. With
 * `withIdleness(ms)` the operator marks its own output idle after `ms` of
 * processing time without records, and active again at the next record.
 *
 * ## Restore (beyond Flink)
 *
 * The operator checkpoints the last watermark it emitted as its floor
 * (`OperatorSnapshot.watermark`): after a restore it emits no watermark at
 * or below it. Its generator's state is not checkpointed (on a rescale there
 * would be several to merge): a periodic generator therefore starts again
 * from the replayed records, held up by the floor.
 *
 * @module
 */

import { IdlenessTimer } from "../../time/idleness_timer.ts";
import {
  MAX_WATERMARK,
  type TimestampAssigner,
  type WatermarkGenerator,
  type WatermarkStatus,
  type WatermarkStrategy,
} from "../../time/watermark.ts";
import { WatermarkEmitter } from "../../time/watermark_emitter.ts";
import type { KeySelector } from "../../graph/stream_graph.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";
import { OneInputUdfOperator } from "./udf_operator.ts";

/** Assigns timestamps and generates watermarks mid-stream; see the module docs. */
export class TimestampsAndWatermarksOperator
  extends OneInputUdfOperator<WatermarkStrategy<unknown>> {
  readonly #intervalMs: number;
  #assigner: TimestampAssigner<unknown> | undefined;
  #generator: WatermarkGenerator<unknown> | undefined;
  #timer: IdlenessTimer | undefined;
  #emitter!: WatermarkEmitter;
  #nextPeriodicAt = 0;
  #ended = false;

  /**
   * @param options the operator's uid, name, strategy (`fn`), environment,
   *   output and key selector, and the auto-watermark interval in ms.
   */
  constructor(options: {
    uid: string;
    name: string;
    fn: WatermarkStrategy<unknown>;
    env: OperatorEnvironment;
    output: Output;
    keySelector: KeySelector | undefined;
    autoWatermarkIntervalMs: number;
  }) {
    super(options);
    this.#intervalMs = options.autoWatermarkIntervalMs;
  }

  /** Creates the generator and asks for the first periodic wake-up. */
  override async open(): Promise<void> {
    const strategy = this.fn;
    const clock = this.env.clock;
    this.#assigner = strategy.timestampAssigner;
    this.#generator = strategy.createGenerator?.({ clock });
    const idleMs = strategy.idleTimeoutMs;
    this.#timer = idleMs === undefined ? undefined : new IdlenessTimer(idleMs, clock.now());
    // The floor restored by UdfOperator: nothing at or below it is emitted again.
    this.#emitter = new WatermarkEmitter(this.output, this.currentWatermark);
    if (this.#generator !== undefined || this.#timer !== undefined) {
      this.#nextPeriodicAt = clock.now() + this.#intervalMs;
      this.env.requestWakeup(this.#nextPeriodicAt);
    }
    await super.open();
  }

  protected processRecord(value: unknown, timestamp: number | undefined): void {
    const ts = this.#assigner === undefined ? timestamp : this.#assigner(value, timestamp);
    const emitter = this.#emitter;
    if (emitter.idle) emitter.markActive();
    if (this.#timer !== undefined) this.#timer.activity();
    this.output.collect(value, ts);
    if (this.#generator !== undefined && ts !== undefined) {
      this.#generator.onEvent(value, ts, emitter);
    }
  }

  /** Ignores upstream watermarks, except `MAX_WATERMARK`, which it forwards. */
  override processWatermark(watermark: number): void {
    if (watermark !== MAX_WATERMARK) return;
    this.#ended = true;
    this.#emitter.emitWatermark(MAX_WATERMARK);
  }

  /** Ignores upstream watermark status: this operator decides its own. */
  override processWatermarkStatus(_status: WatermarkStatus): void {}

  /** The periodic round when due (idleness, else the generator), then the next wake-up. */
  override onProcessingTime(nowMs: number): void {
    super.onProcessingTime(nowMs);
    if (this.#ended || (this.#generator === undefined && this.#timer === undefined)) return;
    if (nowMs >= this.#nextPeriodicAt) {
      if (this.#timer !== undefined && this.#timer.checkIfIdle(nowMs)) this.#emitter.markIdle();
      else this.#generator?.onPeriodicEmit(this.#emitter);
      this.#nextPeriodicAt = nowMs + this.#intervalMs;
    }
    this.env.requestWakeup(this.#nextPeriodicAt);
  }

  /** End of input: one last periodic watermark (Flink's `finish`). */
  override async endInput(): Promise<void> {
    if (!this.#ended) this.#generator?.onPeriodicEmit(this.#emitter);
    await super.endInput();
  }

  /** Checkpoints the last emitted watermark as the floor (see the module docs). */
  protected override watermarkFloor(): number | undefined {
    const watermark = this.#emitter.watermark;
    return watermark > Number.NEGATIVE_INFINITY ? watermark : undefined;
  }
}
