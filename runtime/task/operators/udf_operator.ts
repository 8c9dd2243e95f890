/**
 * The base of operators that run user functions: per-subtask function
 * copies, the runtime context, keyed state (when the input is keyed), timers,
 * operator state and the checkpoint hooks (`CheckpointedFunction`,
 * `CheckpointListener`, `RichFunction`).
 *
 * @module
 */

import type {
  Collector,
  FunctionHooks,
  OnTimerContext,
  RuntimeContext,
  TimerService,
} from "../../api/functions.ts";
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
import type { KeySelector } from "../../graph/stream_graph.ts";
import type { KeyedStateBackend } from "../../state/keyed_state_backend.ts";
import { createKeyedStateBackend } from "../../state/state_backend_factory.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import { InternalTimerService } from "../../state/timer_service.ts";
import { assignToKeyGroup, type Key } from "../../state/key_group.ts";
import { MIN_WATERMARK, type WatermarkStatus } from "../../time/watermark.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshotResults,
  Output,
  StreamOperator,
} from "./operator.ts";
import type { SnapshotType } from "../../checkpoint/snapshot_contract.ts";
import { operatorStateSnapshot, timersSnapshot, watermarkSnapshot } from "./state_participants.ts";
import { SuppressRestartsError } from "../../failure.ts";

/**
 * A per-subtask copy of a function object: same prototype, own fields
 * copied shallowly. Plain functions are returned as they are.
 */
export function instantiate<F>(fn: F): F {
  if (typeof fn !== "object" || fn === null) return fn;
  const copy = Object.create(Object.getPrototypeOf(fn));
  return Object.assign(copy, fn) as F;
}

/** The user-code error of an operator, naming the operator and subtask. */
export class UserFunctionError extends Error {
  /** The error class name. */
  override name = "UserFunctionError";
}

/** Base of operators running a user function `fn` (a per-subtask copy). */
export abstract class UdfOperator<F> implements StreamOperator {
  readonly uid: string;
  readonly name: string;
  /** The per-subtask copy of the user function. */
  protected readonly fn: F;
  protected readonly env: OperatorEnvironment;
  protected readonly output: Output;
  protected readonly keySelector: KeySelector | undefined;
  protected keyed: KeyedStateBackend | undefined;
  protected timers: InternalTimerService<Key> | undefined;
  protected operatorState: DefaultOperatorStateStore | undefined;
  protected currentWatermark: number = MIN_WATERMARK;
  /** Timestamp of the record (or timer) being processed. */
  protected currentTimestamp: number | undefined;
  /** The key of the record (or timer) being processed. */
  protected currentKey: Key | undefined;
  #closed = false;
  #restoredCheckpointId: number | undefined;

  constructor(options: {
    uid: string;
    name: string;
    fn: F;
    env: OperatorEnvironment;
    output: Output;
    keySelector: KeySelector | undefined;
  }) {
    this.uid = options.uid;
    this.name = options.name;
    this.fn = instantiate(options.fn);
    this.env = options.env;
    this.output = options.output;
    this.keySelector = options.keySelector;
  }

  /** The function's hooks, if it is an object. */
  protected get hooks(): FunctionHooks | undefined {
    const fn = this.fn as unknown;
    return typeof fn === "object" && fn !== null ? fn as FunctionHooks : undefined;
  }

  /** Where in the job this operator runs, for messages. */
  protected where(): string {
    return `operator '${this.name}' (uid ${this.uid}) subtask ${this.env.subtaskIndex}/${this.env.parallelism} of job '${this.env.jobName}'`;
  }

  async initializeState(restore: OperatorRestore | undefined): Promise<void> {
    if (this.keySelector) {
      this.keyed = await createKeyedStateBackend(this.env.stateBackend, {
        keyGroupRange: this.env.keyGroupRange,
        maxParallelism: this.env.maxParallelism,
        clock: () => this.env.clock.now(),
        // Event-time TTL (beyond Flink) runs on this operator's watermark.
        eventTimeClock: () => this.currentWatermark,
        name: `${this.env.jobName}-${this.uid}-${this.env.subtaskIndex}`,
      });
      const maxParallelism = this.env.maxParallelism;
      this.timers = new InternalTimerService<Key>({
        keyGroupOf: (key) => assignToKeyGroup(key, maxParallelism),
      });
      if (restore) {
        try {
          await this.keyed.restore(restore.keyedHandles, restore.read);
        } catch (error) {
          // A keyed blob that is missing, damaged or unreadable by this
          // backend: restarting from the same checkpoint cannot repair it
          // (as for the rest of the restore, see subtask_setup.ts).
          throw new SuppressRestartsError(
            `Cannot restore the keyed state of ${this.where()} from checkpoint ${restore.checkpointId}: ${
              error instanceof Error ? error.message : String(error)
            }`,
            { cause: error },
          );
        }
        this.timers.restore(restore.timers, this.env.keyGroupRange);
        const next = this.timers.nextProcessingTime();
        if (next !== undefined) this.env.requestWakeup(next);
      }
    }
    this.operatorState = new DefaultOperatorStateStore(restore?.operator);
    // The watermark floor (beyond Flink): what was late before the restore stays late.
    if (restore?.watermark !== undefined && restore.watermark > this.currentWatermark) {
      this.currentWatermark = restore.watermark;
    }
    this.#restoredCheckpointId = restore?.checkpointId;
    await this.hooks?.initializeState?.({
      isRestored: restore !== undefined,
      restoredCheckpointId: restore?.checkpointId,
      operatorStateStore: this.operatorState,
    });
  }

  /** Whether this subtask was restored, and from which checkpoint. */
  protected get restoredCheckpointId(): number | undefined {
    return this.#restoredCheckpointId;
  }

  async open(): Promise<void> {
    await this.hooks?.open?.(this.runtimeContext());
  }

  abstract processElement(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
  ): void;

  /** Sets the current key (and its key group, when known) for keyed state and timers. */
  protected setKey(key: Key, keyGroup?: number): void {
    this.currentKey = key;
    this.keyed!.setCurrentKey(key, keyGroup);
  }

  /**
   * Sets the current key of a keyed operator's record: the key the producer
   * handed over with it (an in-thread keyBy edge, see `buffer_dispatch.ts`),
   * else the operator's key selector applied to `value`.
   */
  protected setKeyOf(value: unknown, keyGroup?: number, key?: unknown): void {
    this.setKey(key === undefined ? this.keySelector!(value) : key as Key, keyGroup);
  }

  processWatermark(watermark: number): void {
    if (watermark <= this.currentWatermark) return;
    this.currentWatermark = watermark;
    if (this.timers) {
      // Poll one at a time: a timer registered by onTimer at or before the
      // watermark fires in this same advance, as in Flink.
      for (
        let t = this.timers.pollEventTimeTimer(watermark);
        t;
        t = this.timers.pollEventTimeTimer(watermark)
      ) {
        this.fireTimer(t.key, t.timestamp, "event-time", t.namespace);
      }
    }
    this.output.emitWatermark(watermark);
  }

  /** Forwards a watermark status change (Flink's default for one-input operators). */
  processWatermarkStatus(status: WatermarkStatus): void {
    this.output.emitWatermarkStatus(status);
  }

  onProcessingTime(nowMs: number): void {
    if (!this.timers) return;
    for (
      let t = this.timers.pollProcessingTimeTimer(nowMs);
      t;
      t = this.timers.pollProcessingTimeTimer(nowMs)
    ) {
      this.fireTimer(t.key, t.timestamp, "processing-time", t.namespace);
    }
    const next = this.timers.nextProcessingTime();
    if (next !== undefined) this.env.requestWakeup(next);
  }

  /**
   * Calls the function's timer hook; operators with timers override it.
   * `namespace` is the timer's (a window's, for window operators; `""` otherwise).
   */
  protected fireTimer(
    _key: Key,
    _timestamp: number,
    _domain: "event-time" | "processing-time",
    _namespace: string,
  ): void {}

  quiesce(): Promise<void> {
    return Promise.resolve();
  }

  async endInput(): Promise<void> {}

  /**
   * Runs the function's `snapshotState` hook, then captures the
   * participants: keyed state (its backend's snapshot), timers, operator
   * state and the watermark floor ({@linkcode watermarkFloor}).
   */
  async snapshotState(
    checkpointId: number,
    timestamp: number,
    type: SnapshotType,
  ): Promise<OperatorSnapshotResults> {
    await this.hooks?.snapshotState?.({ checkpointId, checkpointTimestamp: timestamp });
    const results: OperatorSnapshotResults = [];
    if (this.keyed) results.push(this.keyed.snapshot(checkpointId, type, this.uid));
    if (this.timers) {
      results.push(timersSnapshot(this.uid, this.timers.snapshot(), this.env.keyGroupRange));
    }
    if (this.operatorState) {
      results.push(operatorStateSnapshot("operator", this.uid, this.operatorState.snapshot()));
    }
    results.push(watermarkSnapshot(this.uid, this.watermarkFloor()));
    return results;
  }

  /**
   * The watermark kept as this operator's floor after a restore (ms), or
   * `undefined` for none: by default the current input watermark.
   */
  protected watermarkFloor(): number | undefined {
    return this.currentWatermark > MIN_WATERMARK ? this.currentWatermark : undefined;
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await this.hooks?.notifyCheckpointComplete?.(checkpointId);
  }

  async notifyCheckpointAborted(checkpointId: number): Promise<void> {
    await this.hooks?.notifyCheckpointAborted?.(checkpointId);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.hooks?.close?.();
    } finally {
      await this.keyed?.dispose(); // the SQLite backend deletes its database
    }
  }

  /** The runtime context handed to `open`. */
  protected runtimeContext(): RuntimeContext {
    const needKeyed = (what: string) => {
      if (!this.keyed) {
        throw new Error(
          `${what} needs a keyed stream: apply ${this.where()} after keyBy()`,
        );
      }
      return this.keyed;
    };
    const env = this.env;
    return {
      jobName: env.jobName,
      operatorName: this.name,
      uid: this.uid,
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
      maxParallelism: env.maxParallelism,
      attempt: env.attempt,
      getState: <T>(d: ValueStateDescriptor<T>): ValueState<T> =>
        needKeyed("Keyed ValueState").getValueState(d),
      getListState: <T>(d: ListStateDescriptor<T>): ListState<T> =>
        needKeyed("Keyed ListState").getListState(d),
      getMapState: <UK, UV>(d: MapStateDescriptor<UK, UV>): MapState<UK, UV> =>
        needKeyed("Keyed MapState").getMapState(d),
      getReducingState: <T>(d: ReducingStateDescriptor<T>): ReducingState<T> =>
        needKeyed("Keyed ReducingState").getReducingState(d),
      getAggregatingState: <IN, ACC, OUT>(
        d: AggregatingStateDescriptor<IN, ACC, OUT>,
      ): AggregatingState<IN, OUT> => needKeyed("Keyed AggregatingState").getAggregatingState(d),
    };
  }

  /** A timer service bound to the current key. */
  protected timerService(): TimerService {
    const timers = () => {
      if (!this.timers || this.currentKey === undefined) {
        throw new Error(`Timers need a keyed stream: ${this.where()} is not keyed`);
      }
      return this.timers;
    };
    return {
      currentProcessingTime: () => this.env.clock.now(),
      currentWatermark: () => this.currentWatermark,
      registerProcessingTimeTimer: (time: number) => {
        timers().registerProcessingTimeTimer(this.currentKey!, time);
        this.env.requestWakeup(time);
      },
      registerEventTimeTimer: (time: number) => {
        timers().registerEventTimeTimer(this.currentKey!, time);
      },
      deleteProcessingTimeTimer: (time: number) => {
        timers().deleteProcessingTimeTimer(this.currentKey!, time);
      },
      deleteEventTimeTimer: (time: number) => {
        timers().deleteEventTimeTimer(this.currentKey!, time);
      },
    };
  }

  /**
   * The context object of process functions: one reusable object per
   * operator, reading the current record's timestamp and key.
   */
  protected processContext(domain?: () => "event-time" | "processing-time"): OnTimerContext<Key> {
    const timerService = this.timerService();
    return {
      timestamp: () => this.currentTimestamp,
      output: <X>(tag: OutputTag<X>, value: X) => {
        this.output.collectSide(tag.id, value, this.currentTimestamp);
      },
      timerService: () => timerService,
      getCurrentKey: () => {
        if (this.currentKey === undefined) {
          throw new Error(`getCurrentKey() needs a keyed stream: ${this.where()} is not keyed`);
        }
        return this.currentKey;
      },
      timeDomain: () => domain ? domain() : "event-time",
    };
  }

  /** A collector emitting with the current timestamp. */
  protected collector(): Collector<unknown> {
    return {
      collect: (value: unknown) => {
        this.output.collect(value, this.currentTimestamp);
      },
    };
  }
}

/**
 * Base of one-input operators that handle each record the same way once
 * it is keyed (Flink's `OneInputStreamOperator` over
 * `AbstractUdfStreamOperator`): on a keyed input `processElement` sets the
 * record's current key (the key handed over with it, else the key
 * selector's), then calls {@linkcode OneInputUdfOperator.processRecord}.
 * On an unkeyed input no key is set, so keyed state and timers fail with
 * their "needs a keyed stream" errors.
 *
 * @typeParam F the user function.
 */
export abstract class OneInputUdfOperator<F> extends UdfOperator<F> {
  /** Keys the record when the input is keyed, then processes it. */
  processElement(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void {
    if (this.keySelector) this.setKeyOf(value, keyGroup, key);
    this.processRecord(value, timestamp);
  }

  /**
   * Processes one record, its key already set on a keyed input.
   * @param value the record.
   * @param timestamp its timestamp, ms, or `undefined` for none.
   */
  protected abstract processRecord(value: unknown, timestamp: number | undefined): void;
}
