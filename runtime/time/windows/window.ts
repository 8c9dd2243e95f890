/**
 * Window types: the time window `[start, end)` and the one global window
 * (Flink's `Window`, `TimeWindow`, `GlobalWindow`), with the arithmetic
 * that assigners and session merging share.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TimeWindow } from "./window.ts";
 *
 * const w = new TimeWindow(1_000, 2_000);
 * assert.equal(w.maxTimestamp(), 1_999);
 * assert.equal(w.namespace, "1000:2000");
 * assert.deepEqual(TimeWindow.fromNamespace("1000:2000"), w);
 * assert.equal(TimeWindow.getWindowStartWithOffset(-1, 0, 1_000), -1_000);
 * ```
 *
 * ## Namespaces
 *
 * A window's state lives in keyed state under the window's *namespace* and
 * its timers carry the same string, so the operator can rebuild the window
 * from a timer alone. The namespace is stable across versions (it is part of
 * the checkpoint format) and parseable:
 *
 * | window                | namespace      |
 * | --------------------- | -------------- |
 * | `TimeWindow(s, e)`    | `"<s>:<e>"`, decimal integers, e.g. `"-1000:0"` |
 * | `GlobalWindow`        | `"global"`     |
 *
 * Neither is `""`, the namespace of state outside windows (`VOID_NAMESPACE`).
 *
 * ## Invariants
 *
 * - A `TimeWindow` has integer `start < end`; it holds the timestamps
 *   `start <= t < end`, so `maxTimestamp() = end - 1`.
 * - Equal windows have equal namespaces and unequal windows unequal ones:
 *   the namespace is the window's identity (Flink's `equals`/`hashCode`).
 *
 * @module
 */

/** The largest timestamp Weir uses as "end of time" for windows, in ms (Flink's `Long.MAX_VALUE`): `Number.MAX_SAFE_INTEGER`. */
export const END_OF_TIME: number = Number.MAX_SAFE_INTEGER;

/**
 * A finite group of elements, usually a span of time (Flink's `Window`).
 * Custom windows implement it together with a custom assigner, whose
 * `windowFromNamespace` parses {@linkcode Window.namespace} back.
 */
export interface Window {
  /** The largest timestamp that still belongs to this window, in ms. */
  maxTimestamp(): number;
  /**
   * The window's namespace: the key of its state and timers, stable and
   * unique per window (see the module docs). Never `""`.
   */
  readonly namespace: string;
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * The time window `[start, end)`, in ms (Flink's `TimeWindow`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TimeWindow } from "./window.ts";
 *
 * const a = new TimeWindow(0, 5_000);
 * const b = new TimeWindow(5_000, 8_000);
 * assert.ok(a.intersects(b)); // touching session windows merge
 * assert.deepEqual(a.cover(b), new TimeWindow(0, 8_000));
 * ```
 */
export class TimeWindow implements Window {
  /** First timestamp in the window, ms (inclusive). */
  readonly start: number;
  /** End of the window, ms (exclusive). */
  readonly end: number;
  /** `"<start>:<end>"`. */
  readonly namespace: string;

  /**
   * Creates the window `[start, end)`.
   * @param start the first timestamp, ms; an integer.
   * @param end the exclusive end, ms; an integer greater than `start`.
   * @throws {RangeError} when either is not a safe integer or `end <= start`.
   */
  constructor(start: number, end: number) {
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end <= start) {
      throw new RangeError(
        `A TimeWindow needs integer bounds with start < end: current value is [${start}, ${end})`,
      );
    }
    this.start = start;
    this.end = end;
    this.namespace = `${start}:${end}`;
  }

  /** `end - 1`: the largest timestamp in the window, ms. */
  maxTimestamp(): number {
    return this.end - 1;
  }

  /**
   * Whether this window and `other` overlap or touch (Flink's
   * `TimeWindow.intersects`: `start <= other.end && end >= other.start`), so
   * that session windows `[0, 5)` and `[5, 8)` merge.
   */
  intersects(other: TimeWindow): boolean {
    return this.start <= other.end && this.end >= other.start;
  }

  /** The smallest window containing this one and `other`. */
  cover(other: TimeWindow): TimeWindow {
    return new TimeWindow(Math.min(this.start, other.start), Math.max(this.end, other.end));
  }

  /** `TimeWindow{start=<start>, end=<end>}`, as Flink prints it. */
  toString(): string {
    return `TimeWindow{start=${this.start}, end=${this.end}}`;
  }

  /**
   * Rebuilds a window from its {@linkcode TimeWindow.namespace}.
   * @param namespace `"<start>:<end>"`.
   * @throws {RangeError} when `namespace` is not of that form or the bounds are invalid.
   */
  static fromNamespace(namespace: string): TimeWindow {
    const colon = typeof namespace === "string" ? namespace.indexOf(":", 1) : -1;
    const start = colon > 0 ? namespace.slice(0, colon) : "";
    const end = colon > 0 ? namespace.slice(colon + 1) : "";
    if (!INTEGER.test(start) || !INTEGER.test(end)) {
      throw new RangeError(
        `A TimeWindow namespace must be "<start>:<end>" with integer bounds: current value is ${
          JSON.stringify(namespace)
        }`,
      );
    }
    return new TimeWindow(Number(start), Number(end));
  }

  /**
   * The start of the window of size `windowSize` that holds `timestamp`,
   * for windows aligned to `offset` (Flink's
   * `TimeWindow.getWindowStartWithOffset`). Negative timestamps get the
   * window below them: `-1` with size 1000 starts at `-1000`.
   *
   * @param timestamp ms.
   * @param offset ms, `|offset| < windowSize`.
   * @param windowSize ms, > 0.
   * @returns the window start, ms.
   */
  static getWindowStartWithOffset(timestamp: number, offset: number, windowSize: number): number {
    const remainder = (timestamp - offset) % windowSize;
    // % truncates toward zero, as Java's does: handle both signs.
    return remainder < 0 ? timestamp - (remainder + windowSize) : timestamp - remainder;
  }

  /**
   * Merges overlapping (or touching) windows (Flink's
   * `TimeWindow.mergeWindows`): sorts `windows` by start, groups each run of
   * intersecting windows, and calls `callback` once per group of two or
   * more with the group and the window covering it.
   *
   * @param windows the windows to consider (duplicates by namespace count once).
   * @param callback called with `(toBeMerged, mergeResult)` per merge.
   */
  static mergeWindows(
    windows: Iterable<TimeWindow>,
    callback: (toBeMerged: TimeWindow[], mergeResult: TimeWindow) => void,
  ): void {
    const sorted = [...windows].sort((a, b) => a.start - b.start);
    const merged: { cover: TimeWindow; members: Map<string, TimeWindow> }[] = [];
    let current: { cover: TimeWindow; members: Map<string, TimeWindow> } | undefined;
    for (const candidate of sorted) {
      if (current !== undefined && current.cover.intersects(candidate)) {
        current.cover = current.cover.cover(candidate);
        current.members.set(candidate.namespace, candidate);
      } else {
        if (current !== undefined) merged.push(current);
        current = { cover: candidate, members: new Map([[candidate.namespace, candidate]]) };
      }
    }
    if (current !== undefined) merged.push(current);
    for (const m of merged) {
      if (m.members.size > 1) callback([...m.members.values()], m.cover);
    }
  }
}

/**
 * The one window that holds every element of a key (Flink's
 * `GlobalWindow`); it never ends on its own, so a trigger must fire it.
 */
export class GlobalWindow implements Window {
  static readonly #instance = new GlobalWindow();
  /** `"global"`. */
  readonly namespace: string = "global";

  private constructor() {}

  /** The only instance. */
  static get(): GlobalWindow {
    return GlobalWindow.#instance;
  }

  /** {@linkcode END_OF_TIME}: the window never ends. */
  maxTimestamp(): number {
    return END_OF_TIME;
  }

  /** `GlobalWindow`. */
  toString(): string {
    return "GlobalWindow";
  }

  /**
   * The global window, from its namespace.
   * @throws {RangeError} when `namespace` is not `"global"`.
   */
  static fromNamespace(namespace: string): GlobalWindow {
    if (namespace !== "global") {
      throw new RangeError(
        `The GlobalWindow namespace is "global": current value is ${JSON.stringify(namespace)}`,
      );
    }
    return GlobalWindow.#instance;
  }
}
