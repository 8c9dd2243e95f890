/**
 * Global windows: one window per key holding every element (Flink's
 * `GlobalWindows`). It never fires by itself (its default trigger is
 * {@linkcode NeverTrigger}); give it a trigger, as `countWindow` does with
 * a purging `CountTrigger`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GlobalWindows } from "./global_windows.ts";
 * import { GlobalWindow } from "./window.ts";
 *
 * const [w] = GlobalWindows.create().assignWindows("x", undefined, { currentProcessingTime: () => 0 });
 * assert.equal(w, GlobalWindow.get());
 * ```
 *
 * ## Invariants
 *
 * - Every element, with or without a timestamp, goes to the one
 *   {@linkcode GlobalWindow}; the assigner is not in event time, so no
 *   element is late and no cleanup timer is set.
 *
 * @module
 */

import { WindowAssigner, type WindowAssignerContext } from "./window_assigner.ts";
import { GlobalWindow } from "./window.ts";
import type { Trigger } from "./trigger.ts";
import { NeverTrigger } from "./triggers.ts";

/** Assigns every element to the {@linkcode GlobalWindow} (Flink's `GlobalWindows`). */
export class GlobalWindows extends WindowAssigner<unknown, GlobalWindow> {
  private constructor() {
    super();
  }

  /** The global window assigner. */
  static create(): GlobalWindows {
    return new GlobalWindows();
  }

  /** `[GlobalWindow.get()]`. */
  assignWindows(
    _element: unknown,
    _timestamp: number | undefined,
    _context: WindowAssignerContext,
  ): GlobalWindow[] {
    return [GlobalWindow.get()];
  }

  /** {@linkcode NeverTrigger}. */
  getDefaultTrigger(): Trigger<unknown, GlobalWindow> {
    return NeverTrigger.create();
  }

  /** False. */
  isEventTime(): boolean {
    return false;
  }

  /** The global window. @throws {RangeError} unless `namespace` is `"global"`. */
  windowFromNamespace(namespace: string): GlobalWindow {
    return GlobalWindow.fromNamespace(namespace);
  }

  /** `GlobalWindows()`. */
  override toString(): string {
    return "GlobalWindows()";
  }
}
