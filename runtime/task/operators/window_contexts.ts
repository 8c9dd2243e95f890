/**
 * The contexts a window operator hands to user code: the trigger's
 * (Flink's `WindowOperator.Context`, a `TriggerContext` and
 * `OnMergeContext`), the window function's (Flink's
 * `WindowOperator.WindowContext`) and the keyed state stores behind
 * `windowState()`, `globalState()` and `getPartitionedState`.
 *
 * ## Invariants
 *
 * - Each context is one reusable object per operator subtask; the operator
 *   sets its key and window before every call into user code.
 * - Timers a trigger registers carry the window's namespace, so the
 *   operator rebuilds the window when they fire.
 * - A state object handed to user code re-selects its scope (the window's
 *   namespace, or the VOID one) on every call, so a per-window and a
 *   global handle on the same state name never see each other's entries,
 *   however the calls interleave.
 *
 * @module
 */

import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "../../api/state.ts";
import type { OutputTag } from "../../api/output_tag.ts";
import type { KeyedStateStore, ProcessWindowContext } from "../../api/window_functions.ts";
import type { KeyedStateBackend } from "../../state/keyed_state_backend.ts";
import { type InternalKvState, VOID_NAMESPACE } from "../../state/internal_state.ts";
import type { InternalTimerService } from "../../state/timer_service.ts";
import type { Key } from "../../state/key_group.ts";
import type {
  MergeableStateDescriptor,
  OnMergeContext,
  Trigger,
  TriggerResult,
} from "../../time/windows/trigger.ts";
import type { Window } from "../../time/windows/window.ts";
import type { Output } from "./operator.ts";

/** A descriptor of any keyed state kind. */
export type AnyStateDescriptor =
  | ValueStateDescriptor<unknown>
  | ListStateDescriptor<unknown>
  | MapStateDescriptor<unknown, unknown>
  | ReducingStateDescriptor<unknown>
  | AggregatingStateDescriptor<unknown, unknown, unknown>;

/** The methods of each state kind, which a scoped handle forwards. */
const METHODS = {
  value: ["value", "update", "clear"],
  list: ["get", "add", "addAll", "update", "clear"],
  map: [
    "get",
    "put",
    "putAll",
    "remove",
    "contains",
    "entries",
    "keys",
    "values",
    "isEmpty",
    "clear",
  ],
  reducing: ["get", "add", "clear"],
  aggregating: ["get", "add", "clear"],
} as const;

/**
 * The keyed state objects of one operator subtask, by name, obtained once
 * from the backend (the backend's objects serve every namespace).
 */
export class WindowStates {
  readonly #backend: KeyedStateBackend;
  readonly #byName = new Map<string, { kind: string; state: InternalKvState }>();

  /** Wraps the operator's keyed backend. */
  constructor(backend: KeyedStateBackend) {
    this.#backend = backend;
  }

  /**
   * The backend's state object for `descriptor`.
   * @throws {Error} when the name is already used with another kind (the backend's error).
   */
  state(descriptor: AnyStateDescriptor): InternalKvState {
    const cached = this.#byName.get(descriptor.name);
    if (cached !== undefined && cached.kind === descriptor.kind) return cached.state;
    const b = this.#backend;
    let state: InternalKvState;
    switch (descriptor.kind) {
      case "value":
        state = b.getValueState(descriptor);
        break;
      case "list":
        state = b.getListState(descriptor);
        break;
      case "map":
        state = b.getMapState(descriptor);
        break;
      case "reducing":
        state = b.getReducingState(descriptor);
        break;
      case "aggregating":
        state = b.getAggregatingState(descriptor);
        break;
      default:
        throw new TypeError(
          `Keyed state '${
            (descriptor as { name?: unknown }).name
          }' needs a value, list, map, reducing or aggregating state descriptor: current kind is ${
            JSON.stringify((descriptor as { kind?: unknown }).kind)
          }`,
        );
    }
    this.#byName.set(descriptor.name, { kind: descriptor.kind, state });
    return state;
  }
}

/**
 * Hands out state handles of one scope: each call on a handle first sets
 * the namespace `namespaceOf()` returns, then forwards to the backend's
 * state object. Handles are cached per state name.
 */
export class ScopedStateStore implements KeyedStateStore {
  readonly #states: WindowStates;
  readonly #namespaceOf: () => string;
  readonly #refusal: (() => string) | undefined;
  readonly #handles = new Map<string, { kind: string; handle: object }>();

  /**
   * @param states the operator's state objects.
   * @param namespaceOf the scope's namespace at the time of each call.
   * @param refusal when given, every getter throws an `Error` with its message.
   */
  constructor(
    states: WindowStates,
    namespaceOf: () => string,
    refusal?: () => string,
  ) {
    this.#states = states;
    this.#namespaceOf = namespaceOf;
    this.#refusal = refusal;
  }

  /** A handle on `descriptor`'s state in this scope. @throws {Error} when refused. */
  handle<S>(descriptor: AnyStateDescriptor): S {
    if (this.#refusal !== undefined) throw new Error(this.#refusal());
    const cached = this.#handles.get(descriptor.name);
    if (cached !== undefined && cached.kind === descriptor.kind) return cached.handle as S;
    const state = this.#states.state(descriptor) as unknown as Record<string, unknown>;
    const namespaceOf = this.#namespaceOf;
    const handle: Record<string, unknown> = {};
    for (const method of METHODS[descriptor.kind]) {
      const f = state[method] as (...args: unknown[]) => unknown;
      handle[method] = (...args: unknown[]) => {
        (state as unknown as InternalKvState).setCurrentNamespace(namespaceOf());
        return f.apply(state, args);
      };
    }
    this.#handles.set(descriptor.name, { kind: descriptor.kind, handle });
    return handle as S;
  }

  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> {
    return this.handle(descriptor as ValueStateDescriptor<unknown>);
  }

  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    return this.handle(descriptor);
  }

  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV> {
    return this.handle(descriptor as MapStateDescriptor<unknown, unknown>);
  }

  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T> {
    return this.handle(descriptor as ReducingStateDescriptor<unknown>);
  }

  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT> {
    return this.handle(descriptor as AggregatingStateDescriptor<unknown, unknown, unknown>);
  }
}

/** What the contexts need of the operator. */
export interface WindowOperatorServices {
  /** The keyed backend's state objects. */
  readonly states: WindowStates;
  /** The operator's timer service. */
  readonly timers: InternalTimerService<Key>;
  /** The operator's output. */
  readonly output: Output;
  /** The current watermark, ms. */
  currentWatermark(): number;
  /** The current processing time, ms. */
  currentProcessingTime(): number;
  /** Asks the task for an `onProcessingTime` call at `time` (ms). */
  requestWakeup(time: number): void;
  /** Where the operator runs, for messages. */
  where(): string;
}

/**
 * The trigger's context for the current key and window, and the calls
 * into the trigger (Flink's `WindowOperator.Context`).
 */
export class WindowTriggerContext implements OnMergeContext {
  /** The key of the window being handled. */
  key: Key = "";
  /** The window being handled. */
  window!: Window;
  readonly #services: WindowOperatorServices;
  readonly #trigger: Trigger<unknown, Window>;
  readonly #store: ScopedStateStore;
  #mergedWindows: readonly Window[] = [];

  /**
   * @param services the operator's timers, state, time and output.
   * @param trigger the subtask's trigger copy.
   */
  constructor(services: WindowOperatorServices, trigger: Trigger<unknown, Window>) {
    this.#services = services;
    this.#trigger = trigger;
    this.#store = new ScopedStateStore(services.states, () => this.window.namespace);
  }

  currentProcessingTime(): number {
    return this.#services.currentProcessingTime();
  }

  currentWatermark(): number {
    return this.#services.currentWatermark();
  }

  registerProcessingTimeTimer(time: number): void {
    this.#services.timers.registerProcessingTimeTimer(this.key, time, this.window.namespace);
    this.#services.requestWakeup(time);
  }

  registerEventTimeTimer(time: number): void {
    this.#services.timers.registerEventTimeTimer(this.key, time, this.window.namespace);
  }

  deleteProcessingTimeTimer(time: number): void {
    this.#services.timers.deleteProcessingTimeTimer(this.key, time, this.window.namespace);
  }

  deleteEventTimeTimer(time: number): void {
    this.#services.timers.deleteEventTimeTimer(this.key, time, this.window.namespace);
  }

  getPartitionedState<S>(descriptor: AnyStateDescriptor): S;
  getPartitionedState(descriptor: AnyStateDescriptor): unknown {
    return this.#store.handle(descriptor);
  }

  mergePartitionedState(descriptor: MergeableStateDescriptor): void {
    if (this.#mergedWindows.length === 0) return;
    const kind = (descriptor as { kind?: unknown }).kind;
    if (kind !== "list" && kind !== "reducing" && kind !== "aggregating") {
      throw new Error(
        `mergePartitionedState needs a list, reducing or aggregating state descriptor, which can merge: current value is a ${
          String(kind)
        } state descriptor '${descriptor.name}' (${this.#services.where()})`,
      );
    }
    const state = this.#services.states.state(descriptor) as unknown as {
      mergeNamespaces(target: string, sources: readonly string[]): void;
    };
    state.mergeNamespaces(this.window.namespace, this.#mergedWindows.map((w) => w.namespace));
  }

  /** Calls the trigger's `onElement` for the current window. */
  onElement(value: unknown, timestamp: number | undefined): TriggerResult {
    return this.#checked("onElement", this.#trigger.onElement(value, timestamp, this.window, this));
  }

  /** Calls the trigger's `onEventTime` for the current window. */
  onEventTime(time: number): TriggerResult {
    return this.#checked("onEventTime", this.#trigger.onEventTime(time, this.window, this));
  }

  /** Calls the trigger's `onProcessingTime` for the current window. */
  onProcessingTime(time: number): TriggerResult {
    return this.#checked(
      "onProcessingTime",
      this.#trigger.onProcessingTime(time, this.window, this),
    );
  }

  /** `result`, when it is a {@linkcode TriggerResult}. @throws {TypeError} otherwise. */
  #checked(method: string, result: TriggerResult): TriggerResult {
    switch (result) {
      case "CONTINUE":
      case "FIRE":
      case "PURGE":
      case "FIRE_AND_PURGE":
        return result;
      default:
        throw new TypeError(
          `The trigger ${
            String(this.#trigger)
          } of ${this.#services.where()} returned no TriggerResult from ${method} for window ${this.window}: current value is ${
            JSON.stringify(result)
          } (expected CONTINUE, FIRE, PURGE or FIRE_AND_PURGE)`,
        );
    }
  }

  /**
   * Calls the trigger's `onMerge` for the current window (the merge result).
   * @throws {Error} when the trigger has no `onMerge`.
   */
  onMerge(mergedWindows: readonly Window[]): void {
    const trigger = this.#trigger;
    if (trigger.onMerge === undefined) {
      throw new Error(
        `The trigger ${
          String(trigger)
        } of ${this.#services.where()} cannot merge windows: it has no onMerge`,
      );
    }
    this.#mergedWindows = mergedWindows;
    try {
      trigger.onMerge(this.window, this);
    } finally {
      this.#mergedWindows = [];
    }
  }

  /** Calls the trigger's `clear` for the current window. */
  clear(): void {
    this.#trigger.clear(this.window, this);
  }
}

/**
 * The window function's context for the current key and window (Flink's
 * `WindowOperator.WindowContext`): time, per-window and global state, and
 * side outputs stamped with the window's `maxTimestamp()`.
 */
export class WindowProcessContext implements ProcessWindowContext<Window> {
  /** The window being evaluated or cleared. */
  current!: Window;
  readonly #services: WindowOperatorServices;
  readonly #windowState: ScopedStateStore;
  readonly #globalState: ScopedStateStore;

  /**
   * @param services the operator's timers, state, time and output.
   * @param merging whether windows merge (then per-window state is refused, as in Flink).
   */
  constructor(services: WindowOperatorServices, merging: boolean) {
    this.#services = services;
    this.#windowState = new ScopedStateStore(
      services.states,
      () => this.current.namespace,
      merging
        ? () =>
          `Per-window state is not allowed when using merging windows (sessions): windowState() of ${services.where()}; use globalState()`
        : undefined,
    );
    this.#globalState = new ScopedStateStore(services.states, () => VOID_NAMESPACE);
  }

  window(): Window {
    return this.current;
  }

  currentProcessingTime(): number {
    return this.#services.currentProcessingTime();
  }

  currentWatermark(): number {
    return this.#services.currentWatermark();
  }

  windowState(): KeyedStateStore {
    return this.#windowState;
  }

  globalState(): KeyedStateStore {
    return this.#globalState;
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.#services.output.collectSide(tag.id, value, this.current.maxTimestamp());
  }
}
