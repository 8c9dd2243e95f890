/**
 * How watermarks and watermark status from a subtask's input channels
 * combine into the subtask's own (Flink's `StatusWatermarkValve`). A pure
 * state machine: each input returns the actions to take, in order, and the
 * task carries them out (I/O at the edges, like `barrier_handler.ts`).
 *
 * ## Rules (Flink's)
 *
 * - Each channel has a watermark (`-Infinity` at first), a status (active
 *   at first) and an *aligned* flag. The output watermark is the minimum
 *   over aligned channels, emitted only when it grows.
 * - A watermark from an idle channel, or while the valve is idle, is
 *   ignored; so is one not above the channel's last.
 * - A channel turning idle leaves the aligned set. When it was the last
 *   active one, the valve turns idle: if the channel's watermark was the
 *   output watermark, the valve first emits the largest watermark of any
 *   channel (everything is idle, nothing holds it back), then `"idle"`.
 * - A channel turning active rejoins the aligned set only when its
 *   watermark is at or above the output watermark; otherwise it rejoins when
 *   a watermark of its own reaches it. The valve turns active (and emits
 *   `"active"`) when any channel does.
 *
 * ## Beyond Flink: finished channels
 *
 * A channel that delivered `MAX_WATERMARK` or end of data is *finished*: it
 * never holds event time back, but it never carries idle channels to the end
 * of time either. The output watermark is the minimum over aligned channels
 * that are not finished, and becomes `MAX_WATERMARK` only when every channel
 * finished. (Flink would emit `MAX_WATERMARK` as soon as one input finished
 * while all others are idle, making every later record of those inputs
 * late.) The valve is idle when some channel is unfinished and every
 * unfinished channel is idle.
 *
 * ## Invariants
 *
 * - Emitted watermarks strictly increase; statuses alternate, starting from
 *   active (so the first status ever emitted is `"idle"`).
 * - A watermark is never emitted while the valve is idle, except the flush
 *   that comes right before `"idle"`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StatusWatermarkValve } from "./status_watermark_valve.ts";
 *
 * const valve = new StatusWatermarkValve(2);
 * assert.deepEqual(valve.inputWatermark(0, 1_000), []); // channel 1 still at -Infinity
 * assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [
 *   { kind: "watermark", watermark: 1_000 },
 * ]);
 * assert.deepEqual(valve.inputWatermarkStatus(0, "idle"), [{ kind: "status", status: "idle" }]);
 * ```
 *
 * @module
 */

import { MAX_WATERMARK, MIN_WATERMARK, type WatermarkStatus } from "./watermark.ts";

/** What the task does for an input: forward a watermark or a status, in order. */
export type ValveAction =
  | { readonly kind: "watermark"; readonly watermark: number }
  | { readonly kind: "status"; readonly status: WatermarkStatus };

interface ChannelState {
  watermark: number;
  idle: boolean;
  aligned: boolean;
}

const NONE: readonly ValveAction[] = Object.freeze([]);

/** Combines per-channel watermarks and statuses; see the module docs. */
export class StatusWatermarkValve {
  readonly #channels: ChannelState[];
  #lastWatermark = MIN_WATERMARK;
  #idle = false;

  /**
   * @param channels the number of input channels (>= 1).
   * @throws {RangeError} unless `channels` is a positive integer.
   */
  constructor(channels: number) {
    if (!Number.isInteger(channels) || channels < 1) {
      throw new RangeError(
        `Cannot create a StatusWatermarkValve as 'channels' must be a positive integer: current value is ${channels}`,
      );
    }
    this.#channels = Array.from({ length: channels }, () => ({
      watermark: MIN_WATERMARK,
      idle: false,
      aligned: true,
    }));
  }

  /** The last watermark emitted (ms), `-Infinity` before the first. */
  get lastOutputWatermark(): number {
    return this.#lastWatermark;
  }

  /** The valve's current status. */
  get lastOutputStatus(): WatermarkStatus {
    return this.#idle ? "idle" : "active";
  }

  /**
   * Feeds watermark `watermark` (ms) of channel `channel`.
   * @returns the actions to take, in order (often none).
   * @throws {RangeError} for an unknown channel.
   */
  inputWatermark(channel: number, watermark: number): readonly ValveAction[] {
    const ch = this.#channel(channel);
    if (this.#idle || ch.idle || !(watermark > ch.watermark)) return NONE;
    if (watermark === MAX_WATERMARK) return this.endOfData(channel);
    ch.watermark = watermark;
    if (!ch.aligned && watermark >= this.#lastWatermark) ch.aligned = true;
    return this.#newMinimum([]);
  }

  /**
   * Feeds a watermark status of channel `channel`.
   * @returns the actions to take, in order (often none).
   * @throws {RangeError} for an unknown channel.
   */
  inputWatermarkStatus(channel: number, status: WatermarkStatus): readonly ValveAction[] {
    const ch = this.#channel(channel);
    if (status === "idle") {
      if (ch.idle || ch.watermark === MAX_WATERMARK) return NONE;
      ch.idle = true;
      ch.aligned = false;
      if (!this.#anyActiveUnfinished()) {
        const actions: ValveAction[] = [];
        if (ch.watermark === this.#lastWatermark) this.#flush(actions);
        this.#idle = true;
        actions.push({ kind: "status", status: "idle" });
        return actions;
      }
      return ch.watermark === this.#lastWatermark ? this.#newMinimum([]) : NONE;
    }
    if (!ch.idle) return NONE;
    ch.idle = false;
    if (ch.watermark >= this.#lastWatermark) ch.aligned = true;
    if (!this.#idle) return NONE;
    this.#idle = false;
    return [{ kind: "status", status: "active" }];
  }

  /**
   * Channel `channel` delivered end of data (or `MAX_WATERMARK`): it is
   * finished (see the module docs), active and aligned at `MAX_WATERMARK`.
   * @returns the actions to take, in order.
   * @throws {RangeError} for an unknown channel.
   */
  endOfData(channel: number): readonly ValveAction[] {
    const ch = this.#channel(channel);
    ch.idle = false;
    ch.watermark = MAX_WATERMARK;
    ch.aligned = true;
    const actions: ValveAction[] = [];
    const unfinished = this.#channels.filter((c) => c.watermark !== MAX_WATERMARK);
    const idle = unfinished.length > 0 && unfinished.every((c) => c.idle);
    if (idle && !this.#idle) {
      this.#flush(actions);
      this.#idle = true;
      actions.push({ kind: "status", status: "idle" });
      return actions;
    }
    if (!idle && this.#idle) {
      this.#idle = false;
      actions.push({ kind: "status", status: "active" });
    }
    return this.#idle ? actions : this.#newMinimum(actions);
  }

  #channel(index: number): ChannelState {
    const ch = this.#channels[index];
    if (ch === undefined) {
      throw new RangeError(
        `No input channel ${index} in a StatusWatermarkValve of ${this.#channels.length} channels`,
      );
    }
    return ch;
  }

  #anyActiveUnfinished(): boolean {
    for (const c of this.#channels) if (!c.idle && c.watermark !== MAX_WATERMARK) return true;
    return false;
  }

  /** Emits the minimum over aligned unfinished channels when it grew; MAX once all finished. */
  #newMinimum(actions: ValveAction[]): readonly ValveAction[] {
    let min = MAX_WATERMARK;
    let found = false;
    let allFinished = true;
    for (const c of this.#channels) {
      if (c.watermark !== MAX_WATERMARK) allFinished = false;
      if (c.aligned && c.watermark !== MAX_WATERMARK) {
        found = true;
        if (c.watermark < min) min = c.watermark;
      }
    }
    if (!found && !allFinished) return actions.length === 0 ? NONE : actions;
    if (min > this.#lastWatermark) {
      this.#lastWatermark = min;
      actions.push({ kind: "watermark", watermark: min });
    }
    return actions.length === 0 ? NONE : actions;
  }

  /** Everything is idle: emits the largest watermark of an unfinished channel, when it grew. */
  #flush(actions: ValveAction[]): void {
    let max = MIN_WATERMARK;
    for (const c of this.#channels) {
      if (c.watermark !== MAX_WATERMARK && c.watermark > max) max = c.watermark;
    }
    if (max > this.#lastWatermark) {
      this.#lastWatermark = max;
      actions.push({ kind: "watermark", watermark: max });
    }
  }
}
