/**
 * Combines the watermarks and idleness of several outputs (a source
 * subtask's splits) into one (Flink's `WatermarkOutputMultiplexer` and
 * `CombinedWatermarkStatus`, FLIP-27). Performs no I/O: it calls the
 * underlying {@linkcode WatermarkOutput} it was given.
 *
 * Each registered output has a watermark (ms) and an idle flag. The
 * combined watermark is the minimum over the outputs that are not idle; the
 * combined output is idle when every output is idle. An *immediate* output
 * updates the combined one on every call (watermarks emitted from
 * `onEvent`, idleness changes caused by records); a *deferred* output only
 * records, and the combined one is updated by
 * {@linkcode WatermarkOutputMultiplexer.onPeriodicEmit} (periodic
 * generators), so a round of periodic emits yields one combined watermark.
 *
 * Outputs are identified by the handles `registerNewOutput` returns, not by
 * split ids as in Flink, so the per-record path does no map lookup.
 *
 * ## Invariants
 *
 * - The combined watermark never decreases, and is emitted only when it
 *   grows.
 * - With no output registered nothing is emitted (no watermark, no status).
 * - `markIdle` / `markActive` reach the underlying output only on a change
 *   of the combined status; `markActive` comes before the watermark that a
 *   change to active allows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WatermarkOutputMultiplexer } from "./watermark_multiplexer.ts";
 *
 * const seen: string[] = [];
 * const mux = new WatermarkOutputMultiplexer({
 *   emitWatermark: (w) => seen.push(`wm ${w}`),
 *   markIdle: () => seen.push("idle"),
 *   markActive: () => seen.push("active"),
 * });
 * const a = mux.registerNewOutput();
 * const b = mux.registerNewOutput();
 * a.immediate.emitWatermark(10);
 * b.immediate.emitWatermark(5);
 * b.immediate.markIdle();
 * assert.deepEqual(seen, ["wm 5", "wm 10"]);
 * ```
 *
 * @module
 */

import { MIN_WATERMARK, type WatermarkOutput } from "./watermark.ts";

/** One registered output of a {@linkcode WatermarkOutputMultiplexer}. */
export interface PartialWatermark {
  /** Its watermark so far (ms). */
  readonly watermark: number;
  /** Whether it is idle. */
  readonly idle: boolean;
  /** Updates the combined output on every call. */
  readonly immediate: WatermarkOutput;
  /** Updates the combined output at the next `onPeriodicEmit`. */
  readonly deferred: WatermarkOutput;
}

class Partial implements PartialWatermark {
  watermark: number;
  idle = false;
  readonly immediate: WatermarkOutput;
  readonly deferred: WatermarkOutput;
  constructor(initialWatermark: number, update: () => void) {
    this.watermark = initialWatermark;
    this.deferred = {
      emitWatermark: (watermark: number) => {
        this.idle = false;
        if (watermark > this.watermark) this.watermark = watermark;
      },
      markIdle: () => {
        this.idle = true;
      },
      markActive: () => {
        this.idle = false;
      },
    };
    this.immediate = {
      emitWatermark: (watermark: number) => {
        const wasIdle = this.idle;
        this.idle = false;
        if (watermark > this.watermark) {
          this.watermark = watermark;
          update();
        } else if (wasIdle) update();
      },
      markIdle: () => {
        if (this.idle) return;
        this.idle = true;
        update();
      },
      markActive: () => {
        if (!this.idle) return;
        this.idle = false;
        update();
      },
    };
  }
}

/** Combines the watermarks of several outputs into one; see the module docs. */
export class WatermarkOutputMultiplexer {
  readonly #underlying: WatermarkOutput;
  readonly #outputs: Partial[] = [];
  #combined = MIN_WATERMARK;
  #idle = false;
  readonly #update = () => this.#updateCombined();

  /** @param underlying receives the combined watermark and status changes. */
  constructor(underlying: WatermarkOutput) {
    this.#underlying = underlying;
  }

  /**
   * Registers an output.
   * @param initialWatermark its watermark to start from (ms), e.g. a split's
   *   watermark restored from a checkpoint; default `MIN_WATERMARK`.
   * @returns the output's handle.
   */
  registerNewOutput(initialWatermark: number = MIN_WATERMARK): PartialWatermark {
    const partial = new Partial(initialWatermark, this.#update);
    this.#outputs.push(partial);
    return partial;
  }

  /**
   * Removes an output (its split finished) and updates the combined output
   * without it.
   * @returns false when `output` was not registered (nothing changes).
   */
  unregisterOutput(output: PartialWatermark): boolean {
    const i = this.#outputs.indexOf(output as Partial);
    if (i < 0) return false;
    this.#outputs.splice(i, 1);
    this.#updateCombined();
    return true;
  }

  /** Number of registered outputs. */
  get size(): number {
    return this.#outputs.length;
  }

  /** The last combined watermark emitted (ms), `MIN_WATERMARK` before the first. */
  get combinedWatermark(): number {
    return this.#combined;
  }

  /** Whether the combined output is idle. */
  get idle(): boolean {
    return this.#idle;
  }

  /** Updates the combined output from what the deferred outputs recorded. */
  onPeriodicEmit(): void {
    this.#updateCombined();
  }

  #updateCombined(): void {
    const outputs = this.#outputs;
    if (outputs.length === 0) return;
    let min = Number.POSITIVE_INFINITY;
    let allIdle = true;
    for (const o of outputs) {
      if (o.idle) continue;
      allIdle = false;
      if (o.watermark < min) min = o.watermark;
    }
    if (allIdle) {
      if (!this.#idle) {
        this.#idle = true;
        this.#underlying.markIdle();
      }
      return;
    }
    if (this.#idle) {
      this.#idle = false;
      this.#underlying.markActive();
    }
    if (min > this.#combined) {
      this.#combined = min;
      this.#underlying.emitWatermark(min);
    }
  }
}
