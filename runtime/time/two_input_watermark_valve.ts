/**
 * How the watermarks and watermark status of a two-input operator's
 * channels combine (Flink's `StreamTwoInputProcessor` with one
 * `StatusWatermarkValve` per input, and `AbstractStreamOperator`'s
 * `CombinedWatermarkStatus`). A pure state machine with the interface of
 * {@linkcode StatusWatermarkValve}, so the task's input drives either.
 *
 * ## Rules
 *
 * - Each input's channels go through their own `StatusWatermarkValve`
 *   (minimum over its aligned channels, idleness, the flush of the largest
 *   watermark when the input's last active channel turns idle).
 * - The operator's watermark is the minimum over the inputs that are not
 *   idle, emitted only when it grows (Flink's `CombinedWatermarkStatus`);
 *   an idle input drops out until it is active again.
 * - The operator is idle when every input is idle (no watermark is flushed
 *   across inputs then: an input's flush counts only for that input, as in
 *   Flink). A watermark is emitted before the status change it causes.
 *
 * ## Beyond Flink: finished inputs
 *
 * As for channels in `StatusWatermarkValve`, an input at `MAX_WATERMARK`
 * (ended) never holds event time back, but does not carry an idle input to
 * the end of time: the operator is idle when some input is unfinished and
 * every unfinished input is idle, and reaches `MAX_WATERMARK` only when both
 * inputs did.
 *
 * ## Why not one valve over all channels
 *
 * The minimum over the active channels of both inputs equals the minimum
 * of the inputs' minimums, except when everything turns idle: one valve
 * would flush the largest watermark of *any* channel, possibly one of the
 * input that went idle first, which Flink never emits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TwoInputWatermarkValve } from "./two_input_watermark_valve.ts";
 *
 * const valve = new TwoInputWatermarkValve([1, 2]); // channel 0 feeds input 1, channel 1 input 2
 * assert.deepEqual(valve.inputWatermark(0, 100), []); // input 2 still at -Infinity
 * assert.deepEqual(valve.inputWatermark(1, 50), [{ kind: "watermark", watermark: 50 }]);
 * assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [{ kind: "watermark", watermark: 100 }]);
 * ```
 *
 * @module
 */

import { StatusWatermarkValve, type ValveAction } from "./status_watermark_valve.ts";
import { MAX_WATERMARK, MIN_WATERMARK, type WatermarkStatus } from "./watermark.ts";

const NONE: readonly ValveAction[] = Object.freeze([]);

/** The combined watermark and status of a two-input operator's channels (see the module docs). */
export class TwoInputWatermarkValve {
  readonly #valves: readonly [StatusWatermarkValve, StatusWatermarkValve];
  /** Per channel: its input (0 or 1) and its index in that input's valve. */
  readonly #input: Uint8Array;
  readonly #local: Uint32Array;
  /** Each input's watermark (its valve's last output) and idleness. */
  readonly #watermark: [number, number] = [MIN_WATERMARK, MIN_WATERMARK];
  readonly #inputIdle: [boolean, boolean] = [false, false];
  #lastWatermark = MIN_WATERMARK;
  #idle = false;

  /**
   * @param inputOfChannel for each channel in gate order, the input (1 or 2)
   *   its edge feeds.
   * @throws {RangeError} for an input number other than 1 or 2, or an input
   *   without channels.
   */
  constructor(inputOfChannel: readonly number[]) {
    this.#input = new Uint8Array(inputOfChannel.length);
    this.#local = new Uint32Array(inputOfChannel.length);
    const counts = [0, 0];
    inputOfChannel.forEach((n, channel) => {
      if (n !== 1 && n !== 2) {
        throw new RangeError(
          `Channel ${channel} of a two-input operator must feed input 1 or 2: current value is ${n}`,
        );
      }
      this.#input[channel] = n - 1;
      this.#local[channel] = counts[n - 1]!++;
    });
    if (counts[0] === 0 || counts[1] === 0) {
      throw new RangeError(
        `A two-input operator needs channels on both inputs: current counts are ${
          counts.join(" and ")
        }`,
      );
    }
    this.#valves = [new StatusWatermarkValve(counts[0]!), new StatusWatermarkValve(counts[1]!)];
  }

  /** The last watermark emitted (ms), `-Infinity` before the first. */
  get lastOutputWatermark(): number {
    return this.#lastWatermark;
  }

  /** The operator's current status. */
  get lastOutputStatus(): WatermarkStatus {
    return this.#idle ? "idle" : "active";
  }

  /**
   * Feeds watermark `watermark` (ms) of channel `channel`.
   * @returns the actions to take, in order (often none).
   * @throws {RangeError} for an unknown channel.
   */
  inputWatermark(channel: number, watermark: number): readonly ValveAction[] {
    const input = this.#inputOf(channel);
    return this.#combine(
      input,
      this.#valves[input].inputWatermark(this.#local[channel]!, watermark),
    );
  }

  /**
   * Feeds a watermark status of channel `channel`.
   * @returns the actions to take, in order (often none).
   * @throws {RangeError} for an unknown channel.
   */
  inputWatermarkStatus(channel: number, status: WatermarkStatus): readonly ValveAction[] {
    const input = this.#inputOf(channel);
    return this.#combine(
      input,
      this.#valves[input].inputWatermarkStatus(this.#local[channel]!, status),
    );
  }

  /**
   * Channel `channel` delivered end of data (or `MAX_WATERMARK`).
   * @returns the actions to take, in order.
   * @throws {RangeError} for an unknown channel.
   */
  endOfData(channel: number): readonly ValveAction[] {
    const input = this.#inputOf(channel);
    return this.#combine(input, this.#valves[input].endOfData(this.#local[channel]!));
  }

  #inputOf(channel: number): 0 | 1 {
    if (!(channel >= 0 && channel < this.#input.length)) {
      throw new RangeError(
        `No input channel ${channel} in a TwoInputWatermarkValve of ${this.#input.length} channels`,
      );
    }
    return this.#input[channel] as 0 | 1;
  }

  /** Applies an input valve's actions to that input's state and combines (Flink's `CombinedWatermarkStatus`). */
  #combine(input: 0 | 1, actions: readonly ValveAction[]): readonly ValveAction[] {
    if (actions.length === 0) return NONE;
    for (const action of actions) {
      if (action.kind === "watermark") this.#watermark[input] = action.watermark;
      else this.#inputIdle[input] = action.status === "idle";
    }
    const out: ValveAction[] = [];
    const unfinished = [0, 1].filter((i) => this.#watermark[i] !== MAX_WATERMARK);
    const idle = unfinished.length > 0 && unfinished.every((i) => this.#inputIdle[i]);
    if (!idle) {
      let min = MAX_WATERMARK;
      for (const i of [0, 1]) {
        if (!this.#inputIdle[i] && this.#watermark[i]! < min) min = this.#watermark[i]!;
      }
      if (min > this.#lastWatermark) {
        this.#lastWatermark = min;
        out.push({ kind: "watermark", watermark: min });
      }
    }
    if (idle !== this.#idle) {
      this.#idle = idle;
      out.push({ kind: "status", status: idle ? "idle" : "active" });
    }
    return out;
  }
}
