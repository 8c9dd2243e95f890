/**
 * Sink operators: {@linkcode SimpleSinkOperator} for `SinkFunction`s and
 * {@linkcode TwoPhaseCommitSinkOperator}, which runs the two-phase-commit
 * protocol documented in `runtime/api/sink.ts` (after Flink's
 * `TwoPhaseCommitSinkFunction`).
 *
 * Asynchronous writes are queued in record order and awaited at buffer
 * boundaries and before every snapshot (`quiesce`).
 *
 * @module
 */

import type {
  SinkContext,
  SinkFunction,
  SinkInitContext,
  TwoPhaseCommitSink,
} from "../../api/sink.ts";
import { type ListState, ListStateDescriptor } from "../../api/state.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshot,
  StreamOperator,
} from "./operator.ts";
import { instantiate, UdfOperator } from "./udf_operator.ts";

/** Runs calls in order; synchronous calls stay synchronous while nothing is pending. */
class OrderedCalls {
  #tail: Promise<void> | undefined;
  #error: unknown;
  #failed = false;

  /** True while an asynchronous call is pending (or failed): new calls must queue behind it. */
  get busy(): boolean {
    return this.#tail !== undefined || this.#failed;
  }

  run(call: () => void | Promise<void>): void {
    if (this.#failed) return;
    if (this.#tail) {
      this.#tail = this.#tail.then(call).catch(this.#fail);
      return;
    }
    this.settle(call());
  }

  /** Takes the result of a call made directly while not {@linkcode OrderedCalls.busy}. */
  settle(result: void | Promise<void>): void {
    if (result && typeof (result as Promise<void>).then === "function") {
      this.#tail = (result as Promise<void>).catch(this.#fail);
    }
  }

  #fail = (error: unknown): void => {
    if (!this.#failed) {
      this.#failed = true;
      this.#error = error;
    }
  };

  async quiesce(): Promise<void> {
    while (this.#tail) {
      const tail = this.#tail;
      await tail;
      if (this.#tail === tail) this.#tail = undefined;
    }
    if (this.#failed) throw this.#error;
  }
}

/** Calls `invoke` per record (at-least-once at best; see the sink's docs). */
export class SimpleSinkOperator extends UdfOperator<SinkFunction<unknown>> {
  #calls = new OrderedCalls();
  processElement(value: unknown, timestamp: number | undefined, keyGroup?: number): void {
    if (this.keySelector) this.setKey(this.keySelector(value), keyGroup);
    const fn = this.fn;
    const context: SinkContext = { timestamp };
    // The common case, a synchronous sink, allocates no closure.
    if (!this.#calls.busy) this.#calls.settle(fn.invoke(value, context));
    else this.#calls.run(() => fn.invoke(value, context));
  }
  override quiesce(): Promise<void> {
    return this.#calls.quiesce();
  }
  override async endInput(): Promise<void> {
    await this.quiesce();
    await this.fn.finish?.();
  }
  override async snapshotState(checkpointId: number, timestamp: number): Promise<OperatorSnapshot> {
    await this.quiesce();
    return await super.snapshotState(checkpointId, timestamp);
  }
  override processWatermark(): void {}
}

/** A transaction pending commit, as checkpointed. */
interface PendingTransaction {
  readonly checkpointId: number;
  readonly txn: unknown;
}

/** Runs a {@linkcode TwoPhaseCommitSink} (protocol in `runtime/api/sink.ts`). */
export class TwoPhaseCommitSinkOperator implements StreamOperator {
  readonly uid: string;
  readonly name: string;
  readonly #sink: TwoPhaseCommitSink<unknown, unknown>;
  readonly #env: OperatorEnvironment;
  #context!: SinkInitContext;
  #store!: DefaultOperatorStateStore;
  #pendingState!: ListState<PendingTransaction>;
  #currentState!: ListState<unknown>;
  #restoredPending: PendingTransaction[] = [];
  #restoredCurrent: unknown[] = [];
  #pending: PendingTransaction[] = [];
  #current: unknown;
  #calls = new OrderedCalls();
  #closed = false;

  constructor(options: {
    uid: string;
    name: string;
    sink: TwoPhaseCommitSink<unknown, unknown>;
    env: OperatorEnvironment;
  }) {
    this.uid = options.uid;
    this.name = options.name;
    this.#sink = instantiate(options.sink);
    this.#env = options.env;
  }

  #where(): string {
    return `sink '${this.name}' (uid ${this.uid}) subtask ${this.#env.subtaskIndex} attempt ${this.#env.attempt}`;
  }

  initializeState(restore: OperatorRestore | undefined): Promise<void> {
    this.#store = new DefaultOperatorStateStore(restore?.operator);
    this.#pendingState = this.#store.getListState(
      new ListStateDescriptor<PendingTransaction>("_pending_transactions"),
    );
    this.#currentState = this.#store.getListState(
      new ListStateDescriptor<unknown>("_open_transaction"),
    );
    if (restore) {
      this.#restoredPending = [...this.#pendingState.get()].sort((a, b) =>
        a.checkpointId - b.checkpointId
      );
      this.#restoredCurrent = [...this.#currentState.get()];
    }
    return Promise.resolve();
  }

  async open(): Promise<void> {
    const env = this.#env;
    this.#context = {
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
      attempt: env.attempt,
      uid: this.uid,
      jobId: env.jobId,
    };
    await this.#sink.open?.(this.#context);
    // Recovery: what the restored checkpoint pre-committed is committed (again),
    // and the transaction that was open when it was taken is aborted.
    for (const pending of this.#restoredPending) {
      try {
        await this.#sink.commit(pending.txn);
      } catch (error) {
        throw new Error(
          `Cannot commit transaction of checkpoint ${pending.checkpointId} on recovery in ${this.#where()}; ` +
            `pre-committed data must not be dropped, so the job fails`,
          { cause: error },
        );
      }
    }
    for (const txn of this.#restoredCurrent) await this.#sink.abort(txn);
    this.#restoredPending = [];
    this.#restoredCurrent = [];
    this.#current = await this.#sink.beginTransaction(this.#context);
  }

  processElement(value: unknown, timestamp: number | undefined): void {
    const sink = this.#sink;
    const txn = this.#current;
    const context: SinkContext = { timestamp };
    if (!this.#calls.busy) this.#calls.settle(sink.invoke(txn, value, context));
    else this.#calls.run(() => sink.invoke(txn, value, context));
  }

  processWatermark(): void {}
  onProcessingTime(): void {}

  quiesce(): Promise<void> {
    return this.#calls.quiesce();
  }

  async endInput(): Promise<void> {
    await this.quiesce();
  }

  async snapshotState(checkpointId: number): Promise<OperatorSnapshot> {
    await this.quiesce();
    await this.#sink.preCommit(this.#current);
    this.#pending.push({ checkpointId, txn: this.#current });
    this.#current = await this.#sink.beginTransaction(this.#context);
    this.#pendingState.update(this.#pending);
    this.#currentState.update([this.#current]);
    return { operator: this.#store.snapshot() };
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    while (this.#pending.length > 0 && this.#pending[0]!.checkpointId <= checkpointId) {
      const pending = this.#pending[0]!;
      try {
        await this.#sink.commit(pending.txn);
      } catch (error) {
        throw new Error(
          `Cannot commit transaction of checkpoint ${pending.checkpointId} in ${this.#where()}; ` +
            `pre-committed data must not be dropped, so the job fails`,
          { cause: error },
        );
      }
      this.#pending.shift();
    }
  }

  notifyCheckpointAborted(): Promise<void> {
    // The aborted checkpoint's transaction stays pending; the next completed one commits it.
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Only the open transaction is aborted: pending ones belong to checkpoints
    // that a restore may still commit.
    try {
      if (this.#current !== undefined) await this.#sink.abort(this.#current);
    } finally {
      await this.#sink.close?.();
    }
  }
}
