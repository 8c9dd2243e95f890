/**
 * The operators of the broadcast state pattern (Flink's
 * `CoBroadcastWithNonKeyedOperator` and `CoBroadcastWithKeyedOperator`).
 * Input 1 is the data stream (keyed or not), input 2 the broadcast stream.
 *
 * - Input 1's records go to `processElement` with a read-only view of the
 *   broadcast states (writes throw, naming the state and operator).
 * - Input 2's records go to `processBroadcastElement` with writable
 *   broadcast states and, in the keyed variant, `applyToKeyedState`; no
 *   key is current there, so timers and keyed state are out of reach except
 *   through `applyToKeyedState`.
 * - Broadcast states live in the operator state store (see
 *   `runtime/state/broadcast_state.ts`): checkpointed by every subtask,
 *   restored at any parallelism from one old subtask's copy.
 *
 * @module
 */

import type {
  BroadcastContext,
  BroadcastProcessFunction,
  BroadcastReadOnlyContext,
  KeyedBroadcastContext,
  KeyedBroadcastOnTimerContext,
  KeyedBroadcastProcessFunction,
  KeyedStateDescriptor,
  KeyedStateFunction,
} from "../../api/broadcast_functions.ts";
import type { MapStateDescriptor } from "../../api/state.ts";
import type { OutputTag } from "../../api/output_tag.ts";
import type { SnapshotType } from "../../checkpoint/snapshot_contract.ts";
import { BroadcastStates } from "../../state/broadcast_state.ts";
import type { Key } from "../../state/key_group.ts";
import type { OperatorRestore, OperatorSnapshotResults } from "./operator.ts";
import { TwoInputUdfOperator, type TwoInputUdfOperatorOptions } from "./two_input_operator.ts";

/** Options of the broadcast operators: a two-input operator's, plus the broadcast states. */
export interface BroadcastOperatorOptions<F> extends TwoInputUdfOperatorOptions<F> {
  /** The broadcast states given to `broadcast(...)`. */
  readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
}

/** What both broadcast operators share: broadcast states, their contexts and snapshot. */
abstract class BroadcastOperatorBase<F> extends TwoInputUdfOperator<F> {
  readonly #descriptors: readonly MapStateDescriptor<unknown, unknown>[];
  /** The broadcast states, set by `initializeState`. */
  protected broadcast!: BroadcastStates;

  constructor(options: BroadcastOperatorOptions<F>) {
    super(options);
    this.#descriptors = options.descriptors;
  }

  override async initializeState(restore: OperatorRestore | undefined): Promise<void> {
    await super.initializeState(restore);
    this.broadcast = new BroadcastStates({
      descriptors: this.#descriptors,
      store: this.operatorState!,
      subtaskIndex: this.env.subtaskIndex,
      where: this.where(),
    });
  }

  override snapshotState(
    checkpointId: number,
    timestamp: number,
    type: SnapshotType,
  ): Promise<OperatorSnapshotResults> {
    this.broadcast.writeToStore();
    return super.snapshotState(checkpointId, timestamp, type);
  }

  /** The element side's context: read-only broadcast state. */
  protected readOnlyContext(): BroadcastReadOnlyContext {
    return {
      timestamp: () => this.currentTimestamp,
      output: <X>(tag: OutputTag<X>, value: X) => {
        this.output.collectSide(tag.id, value, this.currentTimestamp);
      },
      currentProcessingTime: () => this.env.clock.now(),
      currentWatermark: () => this.currentWatermark,
      getBroadcastState: <K, V>(d: MapStateDescriptor<K, V>) => this.broadcast.get(d).readOnly,
    };
  }

  /** The broadcast side's context: writable broadcast state. */
  protected broadcastContext(): BroadcastContext {
    return {
      ...this.readOnlyContext(),
      getBroadcastState: <K, V>(d: MapStateDescriptor<K, V>) => this.broadcast.get(d),
    };
  }
}

/** Runs a `BroadcastProcessFunction` over a non-keyed and a broadcast input. */
export class BroadcastProcessOperator
  extends BroadcastOperatorBase<BroadcastProcessFunction<unknown, unknown, unknown>> {
  #readOnly = this.readOnlyContext();
  #ctx = this.broadcastContext();
  #out = this.collector();
  processElement1(value: unknown, timestamp: number | undefined): void {
    this.currentTimestamp = timestamp;
    this.fn.processElement(value, this.#readOnly, this.#out);
  }
  processElement2(value: unknown, timestamp: number | undefined): void {
    this.currentTimestamp = timestamp;
    this.fn.processBroadcastElement(value, this.#ctx, this.#out);
  }
}

/**
 * Runs a `KeyedBroadcastProcessFunction` over a keyed and a broadcast input:
 * keyed state and timers on the keyed side, `applyToKeyedState` on the
 * broadcast side.
 */
export class KeyedBroadcastProcessOperator
  extends BroadcastOperatorBase<KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>> {
  #domain: "event-time" | "processing-time" = "event-time";
  #readOnly: KeyedBroadcastOnTimerContext<Key> = this.#keyedReadOnlyContext();
  #ctx: KeyedBroadcastContext<Key> = {
    ...this.broadcastContext(),
    applyToKeyedState: <D extends KeyedStateDescriptor>(
      descriptor: D,
      fn: KeyedStateFunction<Key, never>,
    ) => this.#applyToKeyedState(descriptor, fn),
  };
  #out = this.collector();

  constructor(
    options: BroadcastOperatorOptions<
      KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>
    >,
  ) {
    super(options);
    if (options.keySelector === undefined) {
      throw new TypeError(
        `The keyed broadcast operator ${this.where()} needs a keyed input 1: current key selector is undefined`,
      );
    }
  }

  #keyedReadOnlyContext(): KeyedBroadcastOnTimerContext<Key> {
    const timed = this.processContext(() => this.#domain);
    return {
      ...this.readOnlyContext(),
      getCurrentKey: timed.getCurrentKey,
      timerService: timed.timerService,
      timeDomain: timed.timeDomain,
    };
  }

  #applyToKeyedState(descriptor: KeyedStateDescriptor, fn: KeyedStateFunction<Key, never>): void {
    const keyed = this.keyed!;
    let state: unknown;
    switch (descriptor.kind) {
      case "value":
        state = keyed.getValueState(descriptor);
        break;
      case "list":
        state = keyed.getListState(descriptor);
        break;
      case "map":
        state = keyed.getMapState(descriptor);
        break;
      case "reducing":
        state = keyed.getReducingState(descriptor);
        break;
      case "aggregating":
        state = keyed.getAggregatingState(descriptor);
        break;
    }
    // A copy of the keys first: fn may clear the state it visits.
    for (const key of [...keyed.keys(descriptor.name)]) {
      this.setKey(key);
      fn(key, state as never);
    }
    this.currentKey = undefined;
  }

  processElement1(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    this.setKeyOf(value, keyGroup, key);
    this.currentTimestamp = timestamp;
    this.fn.processElement(value, this.#readOnly, this.#out);
  }

  processElement2(value: unknown, timestamp: number | undefined): void {
    this.currentKey = undefined; // no key is current on the broadcast side
    this.currentTimestamp = timestamp;
    this.fn.processBroadcastElement(value, this.#ctx, this.#out);
  }

  protected override fireTimer(
    key: Key,
    timestamp: number,
    domain: "event-time" | "processing-time",
  ): void {
    if (!this.fn.onTimer) return;
    this.setKey(key);
    this.#domain = domain;
    this.currentTimestamp = domain === "event-time" ? timestamp : undefined;
    this.fn.onTimer(timestamp, this.#readOnly, this.#out);
  }
}
