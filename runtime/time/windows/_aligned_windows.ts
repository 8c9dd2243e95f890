/**
 * Internal: the aligned time windows of the tumbling and sliding assigners,
 * made once per window start and reused for every element until one needs
 * another start. Elements arrive roughly in time order, so consecutive
 * elements nearly always share their windows, and a window operator then
 * sees the same {@linkcode TimeWindow} objects, with the same namespace
 * strings, for element after element: no window or namespace is built per
 * element, and the state and timer maps keyed by namespace compare one
 * string with itself.
 *
 * Measured with `runtime/task/operators/window_operator_bench.ts` (1M
 * records, 10k keys, interleaved rounds against the assigners without the
 * cache): see the window operator's module docs for the figures.
 *
 * ## Invariants
 *
 * - {@linkcode AlignedWindows.holding} returns exactly the windows the
 *   uncached loop would (the same starts, latest first), in a fresh array.
 * - The windows handed out are shared between elements (and between the
 *   subtasks using one assigner); `TimeWindow`'s fields are read-only, so
 *   sharing them is safe.
 *
 * @module
 */

import { TimeWindow } from "./window.ts";

/**
 * The windows `[s, s + size)` for starts `s` aligned to `slide`, cached for
 * the last latest start asked for (see the module docs).
 */
export class AlignedWindows {
  readonly #size: number;
  readonly #slide: number;
  /** The latest start the cached windows are of; `NaN` before the first call. */
  #lastStart = NaN;
  /** `[s, s + size)` for `s = #lastStart, #lastStart - slide, …` while `s > #lastStart - size`. */
  #windows: readonly TimeWindow[] = [];

  /**
   * @param size window length, ms (a positive integer, checked by the assigner).
   * @param slide distance between window starts, ms (`size` for tumbling windows).
   */
  constructor(size: number, slide: number) {
    this.#size = size;
    this.#slide = slide;
  }

  /**
   * The windows holding `time` (ms), latest first: `[s, s + size)` for
   * `s = lastStart, lastStart - slide, …` while `s > time - size`.
   *
   * @param time the element's time, ms.
   * @param lastStart the latest window start at or before `time` (the
   *   start of `time`'s window of size `slide`).
   * @returns a fresh array of shared windows.
   * @throws {RangeError} when a window's bounds are no safe integers (see `TimeWindow`).
   */
  holding(time: number, lastStart: number): TimeWindow[] {
    if (lastStart !== this.#lastStart) {
      const windows: TimeWindow[] = [];
      for (let s = lastStart; s > lastStart - this.#size; s -= this.#slide) {
        windows.push(new TimeWindow(s, s + this.#size));
      }
      this.#windows = windows;
      this.#lastStart = lastStart;
    }
    const windows = this.#windows;
    const after = time - this.#size;
    const out: TimeWindow[] = [];
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]!;
      if (w.start <= after) break;
      out.push(w);
    }
    return out;
  }
}
