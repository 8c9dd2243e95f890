/**
 * The trigger contract (Flink's `Trigger`, `TriggerResult`,
 * `Trigger.TriggerContext` and `Trigger.OnMergeContext`): a trigger decides
 * when a window's function runs (fires) and when its contents are dropped
 * (purged).
 *
 * The window operator calls a trigger for one (key, window) at a time:
 * `onElement` for every element added to the window, `onEventTime` and
 * `onProcessingTime` when a timer the trigger registered fires, `onMerge`
 * when session windows merge into the window, and `clear` when the window
 * is removed. The context scopes timers and state to that key and window.
 *
 * ## Invariants
 *
 * - A trigger keeps per-window data only in `ctx.getPartitionedState`
 *   (namespaced to the window, so it is in every checkpoint and merges
 *   with the window), never in fields: one trigger object serves every key
 *   and window of a subtask.
 * - `clear` removes every timer and every state the trigger made for the
 *   window; the operator calls it when the window's cleanup time passes or
 *   the window is merged away.
 * - The operator also fires the window's function only for a non-empty
 *   window: a `FIRE` on an empty window emits nothing.
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
import type { Window } from "./window.ts";

/**
 * What a trigger call asks of the window operator (Flink's `TriggerResult`):
 *
 * | result           | run the window function | drop the window's contents |
 * | ---------------- | ----------------------- | -------------------------- |
 * | `CONTINUE`       | no                      | no                         |
 * | `FIRE`           | yes                     | no                         |
 * | `PURGE`          | no                      | yes                        |
 * | `FIRE_AND_PURGE` | yes                     | yes                        |
 *
 * Purging drops the elements (or the accumulator) only; the window's
 * trigger state and timers stay until the window is cleared.
 */
export type TriggerResult = "CONTINUE" | "FIRE" | "PURGE" | "FIRE_AND_PURGE";

/** The {@linkcode TriggerResult} values, by name (Flink's enum constants). */
export const TriggerResult: {
  readonly CONTINUE: "CONTINUE";
  readonly FIRE: "FIRE";
  readonly PURGE: "PURGE";
  readonly FIRE_AND_PURGE: "FIRE_AND_PURGE";
} = Object.freeze({
  CONTINUE: "CONTINUE",
  FIRE: "FIRE",
  PURGE: "PURGE",
  FIRE_AND_PURGE: "FIRE_AND_PURGE",
});

/** Whether `result` runs the window function (`FIRE`, `FIRE_AND_PURGE`). */
export function isFire(result: TriggerResult): boolean {
  return result === "FIRE" || result === "FIRE_AND_PURGE";
}

/** Whether `result` drops the window's contents (`PURGE`, `FIRE_AND_PURGE`). */
export function isPurge(result: TriggerResult): boolean {
  return result === "PURGE" || result === "FIRE_AND_PURGE";
}

/**
 * The state kinds a trigger can keep per window. Reading and writing it
 * applies to the current key and window.
 */
export interface PartitionedStateStore {
  /** A {@linkcode ValueState} of the current key and window. */
  getPartitionedState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  /** A {@linkcode ListState} of the current key and window. */
  getPartitionedState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  /** A {@linkcode MapState} of the current key and window. */
  getPartitionedState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>;
  /** A {@linkcode ReducingState} of the current key and window. */
  getPartitionedState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  /** An {@linkcode AggregatingState} of the current key and window. */
  getPartitionedState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT>;
}

/**
 * What a trigger may do for the current key and window (Flink's
 * `Trigger.TriggerContext`). Times in ms.
 */
export interface TriggerContext extends PartitionedStateStore {
  /** The current processing time (the job's clock). */
  currentProcessingTime(): number;
  /** The operator's current event-time watermark (`-Infinity` before the first). */
  currentWatermark(): number;
  /**
   * Calls `onProcessingTime(time, window)` when processing time reaches
   * `time`. Registering the same time twice for a window fires once.
   */
  registerProcessingTimeTimer(time: number): void;
  /** Calls `onEventTime(time, window)` when the watermark reaches `time` (deduplicated likewise). */
  registerEventTimeTimer(time: number): void;
  /** Deletes this window's processing-time timer at `time`, if any. */
  deleteProcessingTimeTimer(time: number): void;
  /** Deletes this window's event-time timer at `time`, if any. */
  deleteEventTimeTimer(time: number): void;
}

/** A mergeable state's descriptor: list, reducing or aggregating. */
export type MergeableStateDescriptor =
  | ListStateDescriptor<unknown>
  | ReducingStateDescriptor<unknown>
  | AggregatingStateDescriptor<unknown, unknown, unknown>;

/**
 * The context of {@linkcode Trigger.onMerge} (Flink's
 * `Trigger.OnMergeContext`): the current window is the merge result.
 */
export interface OnMergeContext extends TriggerContext {
  /**
   * Merges the state named by `descriptor` of every window merged into the
   * current one (lists concatenate, reducing state reduces, aggregating
   * state merges accumulators).
   * @throws {Error} for a value or map state descriptor, which cannot merge.
   */
  mergePartitionedState(descriptor: MergeableStateDescriptor): void;
}

/**
 * Decides when a window fires and purges (Flink's `Trigger`). Implement it
 * as a class or an object; keep per-window data in
 * `ctx.getPartitionedState`, not in fields (see the module docs).
 * The built-in ones are `EventTimeTrigger`, `ProcessingTimeTrigger`,
 * `CountTrigger`, `ContinuousEventTimeTrigger`, `PurgingTrigger` and
 * `NeverTrigger`.
 *
 * The methods keep Flink's parameter order, so Flink triggers port
 * line by line.
 *
 * @typeParam T the element type.
 * @typeParam W the window type.
 */
export interface Trigger<T, W extends Window> {
  /**
   * Called for every element added to `window`.
   * @param element the element.
   * @param timestamp its event timestamp in ms, or `undefined`.
   * @param window the window it was added to.
   * @param ctx timers, state and time of this key and window.
   */
  onElement(
    element: T,
    timestamp: number | undefined,
    window: W,
    ctx: TriggerContext,
  ): TriggerResult;

  /** Called when a processing-time timer this trigger registered for `window` fires at `time` (ms). */
  onProcessingTime(time: number, window: W, ctx: TriggerContext): TriggerResult;

  /** Called when an event-time timer this trigger registered for `window` fires at `time` (ms). */
  onEventTime(time: number, window: W, ctx: TriggerContext): TriggerResult;

  /**
   * Whether the trigger supports merging windows (`onMerge`). Default
   * false; a merging assigner (sessions) needs true.
   */
  canMerge?(): boolean;

  /**
   * Called when windows merge into `window`: re-register the timers the
   * merged windows had, and merge their state with
   * `ctx.mergePartitionedState`. The operator clears the merged windows
   * (`clear`) right after this call, as Flink does.
   */
  onMerge?(window: W, ctx: OnMergeContext): void;

  /** Removes every timer and state this trigger holds for `window`. */
  clear(window: W, ctx: TriggerContext): void;
}
