/**
 * The window operator (Flink's `WindowOperator` and
 * `EvictingWindowOperator`): assigns each element of a keyed stream to
 * windows, keeps each window's contents in keyed state under the window's
 * namespace, asks the trigger when to fire and purge, and runs the window
 * function.
 *
 * ## Per element
 *
 * 1. The assigner gives the element's windows. For a merging assigner
 *    (sessions) each is added to the key's {@linkcode MergingWindowSet},
 *    which may merge it with live windows: the trigger's `onMerge` runs for
 *    the result, the merged windows are cleared (trigger state and timers,
 *    cleanup timer) and their contents merged into the result's state
 *    window.
 * 2. A window whose cleanup time the watermark has passed is skipped (event
 *    time only). Otherwise the element is added and the trigger's
 *    `onElement` decides: fire (run the function), purge (drop the
 *    contents), both or neither; then the window's cleanup timer is set.
 * 3. An element that went into no window and is late
 *    (`timestamp + allowedLateness <= watermark`) goes to the late side
 *    output, or is dropped and counted in `numLateRecordsDropped`.
 *
 * ## The default trigger's short path
 *
 * For a non-merging event-time window without evictor whose trigger is
 * Flink's `EventTimeTrigger` itself (the default; a subclass or a wrapper
 * takes the general path), the operator makes `EventTimeTrigger.onElement`'s
 * decision itself (fire when the watermark has passed the window's end) and
 * knows which timers are pending, whether the window held contents before
 * the element tells (see `WindowContents.add`):
 *
 * - **With contents**, both timers step 2 would register exist: it
 *   registers none. The first element into the window's empty contents
 *   registered the cleanup timer, and the trigger's timer at
 *   `maxTimestamp()` unless the watermark had passed it; `EventTimeTrigger`
 *   never purges, and deletes its timer only in `clear`, which runs when the
 *   cleanup timer clears the contents. So while contents exist, the cleanup
 *   timer is pending, and so is the trigger's timer while the watermark is
 *   before the window's end.
 * - **Without contents**, no timer of the window is pending (both fired
 *   with the cleanup, or never were): it registers them with the timer
 *   service's `registerAbsentEventTimeTimer`, which skips the lookup for
 *   duplicates.
 *
 * Both hold for windows the operator filled since it started. Windows
 * restored from a checkpoint may have been filled under another trigger (a
 * job may change its trigger across a savepoint), so after a restore the
 * short path waits until the watermark has passed every restored timer: by
 * then every restored window was cleaned up, since a window with contents
 * always has its cleanup timer pending, whatever its trigger.
 *
 * Each registration would otherwise be a lookup in a map holding every
 * key's timer of the window; this path makes none.
 *
 * ## Per timer
 *
 * Timers carry the window's namespace; the operator rebuilds the window and
 * calls the trigger's `onEventTime`/`onProcessingTime`. At the window's
 * cleanup time (`maxTimestamp() + allowedLateness` in event time,
 * `maxTimestamp()` in processing time) it clears everything the window
 * holds: contents, trigger state, the function's per-window state
 * (`clear(context)`) and its merging-set entry.
 *
 * ## Invariants
 *
 * - Window contents, trigger state, per-window state and the merging
 *   window set are keyed state, and timers are in the timer service: every
 *   checkpoint holds all open windows, and a restore at another
 *   parallelism keeps each in its key group's new subtask.
 * - A window fires only with contents; its records carry its
 *   `maxTimestamp()`.
 * - No element is dropped without being counted or side-output.
 *
 * ## Differences from Flink
 *
 * - Processing-time windows still open when a bounded input ends are not
 *   fired (as in Flink since FLIP-147: processing-time timers do not fire
 *   at the end of input).
 * - See `merging_window_set.ts` and `window_contents.ts` for two edge cases
 *   where Weir avoids Flink's data loss or `null` output.
 *
 * ## Measured costs
 *
 * `window_operator_bench.ts` (1M records, 100 per ms of event time, one
 * subtask), records per CPU-second, median of 5 interleaved rounds against
 * the operator before the changes below, on the project's shared 2-core
 * machine (single rounds vary by ±25%):
 *
 * | scenario                        | before | now   | ratio |
 * | ------------------------------- | ------ | ----- | ----- |
 * | tumbling reduce, 10k keys       | 0.81M  | 1.99M | 2.5×  |
 * | tumbling aggregate, 10k keys    | 0.72M  | 2.23M | 3.1×  |
 * | tumbling aggregate, 100k keys   | 0.15M  | 0.71M | 4.1×  |
 * | tumbling aggregate + process    | 0.57M  | 1.65M | 3.3×  |
 * | sliding 1 s / 200 ms aggregate  | 80k    | 350k  | 4.5×  |
 * | session aggregate (merging)     | 70k    | 79k   | 1.1×  |
 *
 * Where it came from, in order (ratios of the same rounds, 10k / 100k
 * keys): the timer index by (namespace, timestamp) first with the last
 * lookup cached, window objects reused per window start
 * (`_aligned_windows.ts`), one state lookup per aggregating `add` and the
 * last timer's window kept (1.8–2.3×); timers in buckets by timestamp
 * instead of one heap of all timers (`_timer_queue.ts`: 1.1–1.2× / 1.2–1.75×);
 * the default trigger's short path for windows with contents and
 * lookup-free deletion of a fired timer (1.2–1.3×); registration of a new
 * window's timers without the dedup lookup (1.1–1.2× / 1.5–1.8×). What is
 * left per new (key, window) is mostly allocation: the accumulator, its
 * state entry and the timer's place in its bucket, and the garbage
 * collector's work on them. Sessions keep their per-element cost: each
 * element reads, merges and writes its key's merging window set.
 *
 * @module
 */

import type { AggregateFunction, Collector, ReduceFunction } from "../../api/functions.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  ReducingStateDescriptor,
} from "../../api/state.ts";
import type { WindowOperatorSpec, WindowProcessSpec } from "../../api/windowed_stream.ts";
import type { KeySelector } from "../../graph/stream_graph.ts";
import type { Key } from "../../state/key_group.ts";
import { VOID_NAMESPACE } from "../../state/internal_state.ts";
import type { Evictor } from "../../time/windows/evictor.ts";
import { MergingWindowSet } from "../../time/windows/merging_window_set.ts";
import { isFire, isPurge, type Trigger } from "../../time/windows/trigger.ts";
import { EventTimeTrigger } from "../../time/windows/triggers.ts";
import {
  isMergingWindowAssigner,
  type MergingWindowAssigner,
  type WindowAssigner,
  type WindowAssignerContext,
} from "../../time/windows/window_assigner.ts";
import { END_OF_TIME, type Window } from "../../time/windows/window.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";
import { instantiate, UdfOperator } from "./udf_operator.ts";
import {
  ScopedStateStore,
  type WindowOperatorServices,
  WindowProcessContext,
  WindowStates,
  WindowTriggerContext,
} from "./window_contexts.ts";
import {
  EvictingContents,
  type EvictingFold,
  ListContents,
  reduceCall,
  ValueContents,
  type WindowContents,
} from "./window_contents.ts";

/** The name of the keyed state holding window contents (Flink's). */
export const WINDOW_CONTENTS_STATE = "window-contents";
/** The name of the keyed state holding each key's merging window set (Flink's). */
export const MERGING_WINDOW_SET_STATE = "merging-window-set";

/** Runs a window function over a window's elements. */
type Emit = (key: Key, window: Window, elements: readonly unknown[]) => void;

/** The function the operator's `UdfOperator` base copies and calls the hooks of. */
function mainFunction(spec: WindowOperatorSpec): unknown {
  const f = spec.function;
  switch (f.kind) {
    case "process":
      return f.process.fn;
    case "reduce":
      return f.process?.fn ?? f.reduce;
    case "aggregate":
      return f.process?.fn ?? f.aggregate;
  }
}

/** The window operator (see the module docs). */
export class WindowOperator extends UdfOperator<unknown> {
  readonly #spec: WindowOperatorSpec;
  readonly #assigner: WindowAssigner<unknown, Window>;
  readonly #merging: MergingWindowAssigner<unknown, Window> | undefined;
  readonly #isEventTime: boolean;
  readonly #allowedLateness: number;
  readonly #assignerContext: WindowAssignerContext;
  #contents!: WindowContents;
  #triggerContext!: WindowTriggerContext;
  #processContext!: WindowProcessContext;
  #mergingSetState!: {
    get(): readonly (readonly [string, string])[];
    update(pairs: Iterable<readonly [string, string]>): void;
  };
  #emit!: Emit;
  #clearFunction!: (window: Window) => void;
  #numLateRecordsDropped = 0;
  /** The window {@linkcode WindowOperator.#windowOf} rebuilt last. */
  #lastTimerWindow: Window | undefined;
  /** Whether the trigger is the default `EventTimeTrigger` (see the module docs). */
  #knownEventTimeTrigger = false;
  /** The watermark from which the default trigger's short path applies: past every restored timer. */
  #shortPathFrom = -Infinity;

  /**
   * @param options the operator's uid, name, spec, environment, output and
   *   the key selector of its keyed input.
   * @throws {TypeError} when the input is not keyed (the API always keys it).
   */
  constructor(options: {
    uid: string;
    name: string;
    spec: WindowOperatorSpec;
    env: OperatorEnvironment;
    output: Output;
    keySelector: KeySelector | undefined;
  }) {
    super({ ...options, fn: mainFunction(options.spec) });
    if (options.keySelector === undefined) {
      throw new TypeError(
        `The window operator ${this.where()} needs a keyed input: current key selector is undefined`,
      );
    }
    const spec = options.spec;
    this.#spec = spec;
    this.#assigner = spec.assigner;
    this.#merging = isMergingWindowAssigner(spec.assigner) ? spec.assigner : undefined;
    this.#isEventTime = spec.assigner.isEventTime();
    this.#allowedLateness = spec.allowedLateness;
    this.#assignerContext = { currentProcessingTime: () => this.env.clock.now() };
  }

  /** Late elements dropped so far (Flink's `numLateRecordsDropped`). */
  get numLateRecordsDropped(): number {
    return this.#numLateRecordsDropped;
  }

  /** The operator's counters, by Flink metric name. */
  metrics(): Readonly<Record<string, number>> {
    return { numLateRecordsDropped: this.#numLateRecordsDropped };
  }

  override async open(): Promise<void> {
    const states = new WindowStates(this.keyed!);
    const services: WindowOperatorServices = {
      states,
      timers: this.timers!,
      output: this.output,
      currentWatermark: () => this.currentWatermark,
      currentProcessingTime: () => this.env.clock.now(),
      requestWakeup: (time) => this.env.requestWakeup(time),
      where: () => this.where(),
    };
    const trigger = instantiate(this.#spec.trigger) as Trigger<unknown, Window>;
    this.#knownEventTimeTrigger = Object.getPrototypeOf(trigger) === EventTimeTrigger.prototype &&
      this.#isEventTime && this.#merging === undefined && this.#spec.evictor === undefined;
    this.#shortPathFrom = this.timers!.lastEventTime() ?? -Infinity;
    this.#triggerContext = new WindowTriggerContext(services, trigger);
    this.#processContext = new WindowProcessContext(services, this.#merging !== undefined);
    this.#contents = this.#makeContents(services);
    this.#mergingSetState = new ScopedStateStore(states, () => VOID_NAMESPACE).getListState(
      new ListStateDescriptor<readonly [string, string]>(MERGING_WINDOW_SET_STATE),
    );
    this.#makeFunction();
    await super.open();
  }

  #makeContents(services: WindowOperatorServices): WindowContents {
    const f = this.#spec.function;
    const own = f.process === undefined; // the reduce/aggregate function is this.fn itself
    const evictor = this.#spec.evictor;
    if (evictor !== undefined) {
      let fold: EvictingFold = { kind: "none" };
      if (f.kind === "reduce") {
        const fn = (own ? this.fn : instantiate(f.reduce)) as ReduceFunction<unknown>;
        fold = { kind: "reduce", reduce: reduceCall(fn) };
      } else if (f.kind === "aggregate") {
        const fn = own ? this.fn : instantiate(f.aggregate);
        fold = { kind: "aggregate", aggregate: fn as AggregateFunction<unknown, unknown, unknown> };
      }
      return new EvictingContents({
        state: this.keyed!.getListState(
          new ListStateDescriptor<readonly [unknown, number | null]>(WINDOW_CONTENTS_STATE),
        ),
        evictor: instantiate(evictor) as Evictor<unknown, Window>,
        fold,
        context: services,
      });
    }
    switch (f.kind) {
      case "process":
        return new ListContents(
          this.keyed!.getListState(new ListStateDescriptor<unknown>(WINDOW_CONTENTS_STATE)),
        );
      case "reduce": {
        const fn = (own ? this.fn : instantiate(f.reduce)) as ReduceFunction<unknown>;
        return new ValueContents(
          this.keyed!.getReducingState(new ReducingStateDescriptor(WINDOW_CONTENTS_STATE, fn)),
        );
      }
      case "aggregate": {
        const fn = (own ? this.fn : instantiate(f.aggregate)) as AggregateFunction<
          unknown,
          unknown,
          unknown
        >;
        return new ValueContents(
          this.keyed!.getAggregatingState(
            new AggregatingStateDescriptor(WINDOW_CONTENTS_STATE, fn),
          ),
        );
      }
    }
  }

  /** Sets `#emit` and `#clearFunction` for the process window function, or a pass-through. */
  #makeFunction(): void {
    const process: WindowProcessSpec | undefined = this.#spec.function.process;
    const ctx = this.#processContext;
    const out: Collector<unknown> = this.collector();
    if (process === undefined) {
      this.#emit = (_key, _window, elements) => {
        for (const e of elements) out.collect(e);
      };
      this.#clearFunction = () => {};
      return;
    }
    // this.fn is the subtask's copy of the process window function.
    const fn = this.fn as {
      process(...args: unknown[]): void;
      clear?(context: WindowProcessContext): void;
    };
    this.#emit = process.kind === "keyed"
      ? (key, window, elements) => {
        ctx.current = window;
        fn.process(key, ctx, elements, out);
      }
      : (_key, window, elements) => {
        ctx.current = window;
        fn.process(ctx, elements, out);
      };
    this.#clearFunction = (window) => {
      if (fn.clear === undefined) return;
      ctx.current = window;
      fn.clear(ctx);
    };
  }

  processElement(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    knownKey?: unknown,
  ): void {
    const key = knownKey === undefined ? this.keySelector!(value) : knownKey as Key;
    this.setKey(key, keyGroup);
    const windows = this.#assigner.assignWindows(value, timestamp, this.#assignerContext);
    const skipped = this.#merging === undefined
      ? this.#addToWindows(key, windows, value, timestamp)
      : this.#addToMergingWindows(this.#merging, key, windows, value, timestamp);
    if (skipped && this.#isElementLate(timestamp)) {
      const tag = this.#spec.lateDataTag;
      if (tag !== undefined) this.output.collectSide(tag.id, value, timestamp);
      else this.#numLateRecordsDropped++;
    }
  }

  /** Adds the element to each of `windows`; returns whether it went into none. */
  #addToWindows(
    key: Key,
    windows: readonly Window[],
    value: unknown,
    timestamp: number | undefined,
  ): boolean {
    let skipped = true;
    for (const window of windows) {
      if (this.#isWindowLate(window)) continue;
      skipped = false;
      this.#onElement(key, window, window, value, timestamp);
    }
    return skipped;
  }

  /** Adds the element to each of `windows`, merging; returns whether it went into none. */
  #addToMergingWindows(
    assigner: MergingWindowAssigner<unknown, Window>,
    key: Key,
    windows: readonly Window[],
    value: unknown,
    timestamp: number | undefined,
  ): boolean {
    const set = new MergingWindowSet(assigner, this.#mergingSetState);
    const tc = this.#triggerContext;
    let skipped = true;
    for (const window of windows) {
      const actual = set.addWindow(window, (merge) => {
        this.#checkMergeResult(merge.mergeResult);
        tc.key = key;
        tc.window = merge.mergeResult;
        tc.onMerge(merge.mergedWindows);
        for (const m of merge.mergedWindows) {
          tc.window = m;
          tc.clear();
          this.#deleteCleanupTimer(m);
        }
        this.#contents.mergeNamespaces(
          merge.stateWindowResult.namespace,
          merge.mergedStateWindows.map((w) => w.namespace),
        );
      });
      if (this.#isWindowLate(actual)) {
        set.retireWindow(actual);
        continue;
      }
      skipped = false;
      const stateWindow = set.getStateWindow(actual);
      if (stateWindow === undefined) {
        throw new Error(`Window ${actual} is not in the in-flight window set of ${this.where()}`);
      }
      this.#onElement(key, actual, stateWindow, value, timestamp);
    }
    set.persist();
    return skipped;
  }

  /** Flink's guard: merging must never move a window's end before the current time. */
  #checkMergeResult(result: Window): void {
    if (this.#isEventTime) {
      const watermark = this.currentWatermark;
      if (result.maxTimestamp() + this.#allowedLateness <= watermark) {
        throw new Error(
          `The end timestamp of an event-time window cannot become earlier than the current watermark by merging: current watermark is ${watermark}, window ${result} (${this.where()})`,
        );
      }
    } else {
      const now = this.env.clock.now();
      if (result.maxTimestamp() <= now) {
        throw new Error(
          `The end timestamp of a processing-time window cannot become earlier than the current processing time by merging: current processing time is ${now}, window ${result} (${this.where()})`,
        );
      }
    }
  }

  /** Adds the element to `window` (stored under `stateWindow`) and acts on the trigger. */
  #onElement(
    key: Key,
    window: Window,
    stateWindow: Window,
    value: unknown,
    timestamp: number | undefined,
  ): void {
    const contents = this.#contents;
    const namespace = stateWindow.namespace;
    const hadContents = contents.add(namespace, value, timestamp);
    if (this.#knownEventTimeTrigger && this.currentWatermark >= this.#shortPathFrom) {
      this.#onElementOfKnownTrigger(key, window, namespace, hadContents);
      return;
    }
    const tc = this.#triggerContext;
    tc.key = key;
    tc.window = window;
    const result = tc.onElement(value, timestamp);
    if (isFire(result)) this.#fire(key, window, namespace);
    if (isPurge(result)) contents.clear(namespace);
    this.#registerCleanupTimer(window);
  }

  /**
   * `EventTimeTrigger.onElement` and the cleanup timer, for the default
   * trigger (see the module docs): when `window` had contents both timers
   * are pending; when it had none, neither is, so they are registered
   * without the timer service's lookup.
   */
  #onElementOfKnownTrigger(
    key: Key,
    window: Window,
    namespace: string,
    hadContents: boolean,
  ): void {
    const end = window.maxTimestamp();
    const passed = end <= this.currentWatermark;
    if (!hadContents) {
      const timers = this.timers!;
      if (!passed) timers.registerAbsentEventTimeTimer(key, end, namespace);
      // The cleanup time is after the watermark (else the window was skipped as late).
      const cleanup = this.#cleanupTime(window);
      if (cleanup !== end && cleanup < END_OF_TIME) {
        timers.registerAbsentEventTimeTimer(key, cleanup, namespace);
      }
    }
    if (passed) this.#fire(key, window, namespace);
  }

  #fire(key: Key, window: Window, namespace: string): void {
    this.currentTimestamp = window.maxTimestamp();
    this.#contents.fire(namespace, window, (elements) => this.#emit(key, window, elements));
  }

  protected override fireTimer(
    key: Key,
    timestamp: number,
    domain: "event-time" | "processing-time",
    namespace: string,
  ): void {
    this.setKey(key);
    const window = this.#windowOf(namespace);
    const tc = this.#triggerContext;
    tc.key = key;
    tc.window = window;
    let set: MergingWindowSet<Window> | undefined;
    let stateNamespace = namespace;
    if (this.#merging !== undefined) {
      set = new MergingWindowSet(this.#merging, this.#mergingSetState);
      const stateWindow = set.getStateWindow(window);
      // A timer of a window no longer live: a trigger did not delete it.
      // The window's state is gone already; nothing to do (as Flink).
      if (stateWindow === undefined) return;
      stateNamespace = stateWindow.namespace;
    }
    const eventTime = domain === "event-time";
    const result = eventTime ? tc.onEventTime(timestamp) : tc.onProcessingTime(timestamp);
    if (isFire(result)) this.#fire(key, window, stateNamespace);
    if (isPurge(result)) this.#contents.clear(stateNamespace);
    if (eventTime === this.#isEventTime && timestamp === this.#cleanupTime(window)) {
      this.#clearAllState(window, stateNamespace, set);
    }
    set?.persist();
  }

  /**
   * The window of a timer's namespace. The last one is kept: a window's
   * timers fire one key after another, so most timers need no parsing.
   */
  #windowOf(namespace: string): Window {
    const last = this.#lastTimerWindow;
    if (last !== undefined && last.namespace === namespace) return last;
    return this.#lastTimerWindow = this.#assigner.windowFromNamespace(namespace);
  }

  /** Drops everything `window` holds (Flink's `clearAllState`). */
  #clearAllState(
    window: Window,
    stateNamespace: string,
    set: MergingWindowSet<Window> | undefined,
  ): void {
    this.#contents.clear(stateNamespace);
    const tc = this.#triggerContext;
    tc.window = window;
    tc.clear();
    this.#clearFunction(window);
    set?.retireWindow(window);
  }

  /** When `window` is dropped: its end plus the allowed lateness in event time, its end otherwise. */
  #cleanupTime(window: Window): number {
    if (!this.#isEventTime) return window.maxTimestamp();
    const time = window.maxTimestamp() + this.#allowedLateness;
    return time >= END_OF_TIME ? END_OF_TIME : time;
  }

  #registerCleanupTimer(window: Window): void {
    const time = this.#cleanupTime(window);
    if (time >= END_OF_TIME) return; // no cleanup at the end of time (global windows)
    const tc = this.#triggerContext;
    tc.window = window;
    if (this.#isEventTime) tc.registerEventTimeTimer(time);
    else tc.registerProcessingTimeTimer(time);
  }

  #deleteCleanupTimer(window: Window): void {
    const time = this.#cleanupTime(window);
    if (time >= END_OF_TIME) return;
    const tc = this.#triggerContext;
    tc.window = window;
    if (this.#isEventTime) tc.deleteEventTimeTimer(time);
    else tc.deleteProcessingTimeTimer(time);
  }

  /** Event time only: the element is behind the watermark by more than the allowed lateness. */
  #isElementLate(timestamp: number | undefined): boolean {
    return this.#isEventTime && timestamp !== undefined &&
      timestamp + this.#allowedLateness <= this.currentWatermark;
  }

  /** Event time only: the watermark passed the window's cleanup time. */
  #isWindowLate(window: Window): boolean {
    return this.#isEventTime && this.#cleanupTime(window) <= this.currentWatermark;
  }
}
