/**
 * The live windows of one key under a merging assigner (sessions), and the
 * *state window* of each: the namespace its contents are actually stored
 * under (Flink's `MergingWindowSet`).
 *
 * When windows merge, their contents are not moved to the new window's
 * namespace: one of the merged windows' state windows is kept, and the
 * others' contents are merged into it. So merging `[0, 5)` (state window
 * `[0, 5)`) with `[4, 9)` gives the window `[0, 9)` whose state window is
 * still `[0, 5)`. The set persists this window -> state window mapping in
 * keyed state, so it is in every checkpoint and restores per key group.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MergingWindowSet } from "./merging_window_set.ts";
 * import { EventTimeSessionWindows } from "./session_windows.ts";
 * import { TimeWindow } from "./window.ts";
 *
 * let stored: (readonly [string, string])[] = [];
 * const state = { get: () => stored, update: (pairs: Iterable<readonly [string, string]>) => { stored = [...pairs]; } };
 * const set = new MergingWindowSet(EventTimeSessionWindows.withGap(5), state);
 * set.addWindow(new TimeWindow(0, 5), () => {});
 * const merged = set.addWindow(new TimeWindow(4, 9), ({ stateWindowResult, mergedStateWindows }) => {
 *   // here the operator merges the contents of mergedStateWindows into stateWindowResult
 *   assert.equal(stateWindowResult.namespace, "0:5");
 *   assert.deepEqual(mergedStateWindows, []);
 * });
 * assert.equal(merged.namespace, "0:9");
 * assert.equal(set.getStateWindow(merged)?.namespace, "0:5");
 * set.persist();
 * assert.deepEqual(stored, [["0:9", "0:5"]]);
 * ```
 *
 * ## Invariants
 *
 * - The live windows of a key never overlap (nor touch, for time windows):
 *   every overlap is merged when the window that causes it is added.
 * - Every live window maps to exactly one state window, and no two live
 *   windows share a state window.
 * - `persist()` writes only when the mapping changed since it was read.
 *
 * ## Difference from Flink
 *
 * Adding a window equal to a live window that merges with nothing else
 * keeps that window's state window. Flink's `addWindow` maps it to itself
 * there, which loses the contents held under the old state window when the
 * live window was itself the result of a merge (possible with dynamic
 * gaps: elements at 0 and 5 with gap 10 make `[0, 15)` stored under
 * `[0, 10)`; an element at 0 with gap 15 adds `[0, 15)` again).
 *
 * @module
 */

import type { MergingWindowAssigner } from "./window_assigner.ts";
import type { Window } from "./window.ts";

/**
 * Where the set persists its mapping: `[window namespace, state window
 * namespace]` pairs. A keyed `ListState<readonly [string, string]>` (of
 * the current key, in the VOID namespace) fits.
 */
export interface MergingWindowState {
  /** The persisted pairs; empty when none. */
  get(): readonly (readonly [string, string])[];
  /** Replaces the persisted pairs (an empty iterable clears them). */
  update(pairs: Iterable<readonly [string, string]>): void;
}

/** What a {@linkcode MergeFunction} gets for one merge. */
export interface MergeFunctionArgs<W> {
  /** The window the merge produces. */
  readonly mergeResult: W;
  /** The live windows merged into it (without the window being added). */
  readonly mergedWindows: readonly W[];
  /** The state window of `mergeResult`: merge the contents into this namespace. */
  readonly stateWindowResult: W;
  /** The state windows whose contents must be merged into `stateWindowResult`. */
  readonly mergedStateWindows: readonly W[];
}

/**
 * Merges state and timers for one merge (Flink's
 * `MergingWindowSet.MergeFunction`); the window operator moves trigger
 * state, timers and contents here.
 */
export type MergeFunction<W> = (merge: MergeFunctionArgs<W>) => void;

interface Entry<W> {
  readonly window: W;
  readonly stateWindow: W;
}

/**
 * The merging window set of the current key (see the module docs). Build
 * one per key access from the persisted state, use it, then `persist()`.
 *
 * @typeParam W the window type.
 */
export class MergingWindowSet<W extends Window> {
  readonly #assigner: MergingWindowAssigner<unknown, W>;
  readonly #state: MergingWindowState;
  /** window namespace -> entry. */
  readonly #mapping = new Map<string, Entry<W>>();
  /** The persisted pairs, as read. */
  readonly #initial: readonly (readonly [string, string])[];

  /**
   * Reads the mapping from `state`.
   * @param assigner decides merges and parses namespaces.
   * @param state where the mapping is persisted.
   * @throws {RangeError} when the state holds a namespace the assigner cannot parse.
   */
  constructor(assigner: MergingWindowAssigner<unknown, W>, state: MergingWindowState) {
    this.#assigner = assigner;
    this.#state = state;
    this.#initial = state.get();
    for (const [window, stateWindow] of this.#initial) {
      this.#mapping.set(window, {
        window: assigner.windowFromNamespace(window),
        stateWindow: assigner.windowFromNamespace(stateWindow),
      });
    }
  }

  /** The live windows, in insertion order. */
  windows(): W[] {
    return [...this.#mapping.values()].map((e) => e.window);
  }

  /** The state window of live window `window`, or `undefined` when it is not live. */
  getStateWindow(window: W): W | undefined {
    return this.#mapping.get(window.namespace)?.stateWindow;
  }

  /**
   * Removes `window` from the live windows (its contents were cleared).
   * @throws {Error} when `window` is not live.
   */
  retireWindow(window: W): void {
    if (!this.#mapping.delete(window.namespace)) {
      throw new Error(`Window ${window} is not in the in-flight window set`);
    }
  }

  /**
   * Adds `newWindow`, merging it with the live windows the assigner says it
   * merges with, and calls `mergeFunction` once per merge that involves
   * state (Flink's `MergingWindowSet.addWindow`).
   *
   * @returns the live window `newWindow` ended up in: itself, or a merge result.
   */
  addWindow(newWindow: W, mergeFunction: MergeFunction<W>): W {
    const windows = [...this.windows(), newWindow];
    const mergeResults: { result: W; merged: W[] }[] = [];
    this.#assigner.mergeWindows(windows, (toBeMerged, mergeResult) => {
      mergeResults.push({ result: mergeResult, merged: [...toBeMerged] });
    });
    let resultWindow = newWindow;
    let mergedNewWindow = false;
    for (const { result, merged } of mergeResults) {
      const at = merged.findIndex((w) => w.namespace === newWindow.namespace);
      if (at >= 0) {
        merged.splice(at, 1);
        mergedNewWindow = true;
        resultWindow = result;
      }
      // Keep the state window of one of the merged windows for the result.
      const stateWindow = this.#mapping.get(merged[0]!.namespace)!.stateWindow;
      const mergedStateWindows: W[] = [];
      for (const w of merged) {
        const entry = this.#mapping.get(w.namespace);
        if (entry === undefined) continue;
        this.#mapping.delete(w.namespace);
        if (entry.stateWindow.namespace !== stateWindow.namespace) {
          mergedStateWindows.push(entry.stateWindow);
        }
      }
      this.#mapping.set(result.namespace, { window: result, stateWindow });
      // Merging a live window only with the new window, without growing it,
      // involves no state: the new window never had any.
      const grewNothing = merged.length === 1 && merged[0]!.namespace === result.namespace;
      if (!grewNothing) {
        mergeFunction({
          mergeResult: result,
          mergedWindows: merged,
          stateWindowResult: stateWindow,
          mergedStateWindows,
        });
      }
    }
    if (mergeResults.length === 0 && this.#mapping.has(newWindow.namespace)) {
      return newWindow; // already live, merging with nothing (see "Difference from Flink")
    }
    if (mergeResults.length === 0 || (resultWindow === newWindow && !mergedNewWindow)) {
      this.#mapping.set(newWindow.namespace, { window: newWindow, stateWindow: newWindow });
    }
    return resultWindow;
  }

  /** Writes the mapping to the state when it changed since it was read. */
  persist(): void {
    const pairs = [...this.#mapping].map(([ns, e]) => [ns, e.stateWindow.namespace] as const);
    if (!samePairs(pairs, this.#initial)) this.#state.update(pairs);
  }
}

function samePairs(
  a: readonly (readonly [string, string])[],
  b: readonly (readonly [string, string])[],
): boolean {
  if (a.length !== b.length) return false;
  const byWindow = new Map(b.map(([w, s]) => [w, s]));
  return a.every(([w, s]) => byWindow.get(w) === s);
}
