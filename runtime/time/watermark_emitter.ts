/**
 * The last step of watermark generation in an operator (Flink's
 * `WatermarkEmitter` of `TimestampsAndWatermarksOperator`): turns
 * {@linkcode WatermarkOutput} calls into an operator `Output`'s watermarks
 * and watermark status, emitting a watermark only when it grows and a status
 * only when it changes.
 *
 * ## Invariants
 *
 * - Emitted watermarks strictly increase.
 * - Statuses alternate, starting from active: the first one emitted is
 *   `"idle"`.
 * - A watermark emitted while idle is preceded by `"active"`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WatermarkEmitter } from "./watermark_emitter.ts";
 *
 * const seen: unknown[] = [];
 * const emitter = new WatermarkEmitter({
 *   collect() {},
 *   collectSide() {},
 *   emitWatermark: (w) => seen.push(w),
 *   emitWatermarkStatus: (s) => seen.push(s),
 * });
 * emitter.markIdle();
 * emitter.emitWatermark(5);
 * emitter.emitWatermark(5);
 * assert.deepEqual(seen, ["idle", "active", 5]);
 * ```
 *
 * @module
 */

import type { Output } from "../task/operators/operator.ts";
import { MIN_WATERMARK, type WatermarkOutput } from "./watermark.ts";

/** Emits watermarks and status changes on an operator output; see the module docs. */
export class WatermarkEmitter implements WatermarkOutput {
  readonly #out: Output;
  #idle = false;
  #watermark: number;

  /**
   * @param out where watermarks and statuses go.
   * @param initialWatermark watermarks at or below it are not emitted (ms):
   *   a floor restored from a checkpoint; default `-Infinity`.
   */
  constructor(out: Output, initialWatermark: number = MIN_WATERMARK) {
    this.#out = out;
    this.#watermark = initialWatermark;
  }

  /** Whether the output is idle. */
  get idle(): boolean {
    return this.#idle;
  }

  /** The last watermark emitted, or the initial one (ms). */
  get watermark(): number {
    return this.#watermark;
  }

  /** Emits `watermark` (ms) when it is above the last one, after `"active"` if idle. */
  emitWatermark(watermark: number): void {
    if (!(watermark > this.#watermark)) return;
    this.markActive();
    this.#watermark = watermark;
    this.#out.emitWatermark(watermark);
  }

  /** Emits `"idle"` unless already idle. */
  markIdle(): void {
    if (this.#idle) return;
    this.#idle = true;
    this.#out.emitWatermarkStatus("idle");
  }

  /** Emits `"active"` when idle. */
  markActive(): void {
    if (!this.#idle) return;
    this.#idle = false;
    this.#out.emitWatermarkStatus("active");
  }
}
