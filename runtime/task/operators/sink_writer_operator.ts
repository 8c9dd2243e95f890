/**
 * The operator that runs a {@linkcode SinkV2}: its writer and its committer
 * in one subtask (Flink's `SinkWriterOperator` and `CommitterOperator`,
 * chained). The protocol, hook by hook, is the module docs of
 * `runtime/api/sink_v2.ts`; this file is its execution.
 *
 * ## State (operator list state, split redistribution)
 *
 * | name | items |
 * |---|---|
 * | `_pending_committables` | `{ checkpointId, committable }`, every committable not yet committed, in checkpoint order |
 * | `_writer_state` | the writer's `snapshotState(n)` items, as returned |
 *
 * On a rescale both lists are cut into contiguous shares over the new
 * subtasks (`redistributeOperatorState`): every restored committable is
 * committed by exactly one new subtask, and every writer state item reaches
 * exactly one new writer.
 *
 * ## Invariants
 *
 * - A committable leaves the pending list only once the committer's round
 *   that held it decided it committed; a checkpoint taken before that holds
 *   it, so a restore commits it again (commit is idempotent).
 * - `notifyCheckpointComplete(n)` commits every pending committable of
 *   checkpoints `<= n`: a lost or reordered notification is covered by any
 *   later one; an aborted checkpoint's committables wait for the next
 *   completed one.
 * - Restored committables are committed in `open()`, before `createWriter`,
 *   so a writer that aborts lingering transactions never aborts one the
 *   restored checkpoint pre-committed.
 * - Restored data passes `checkCommittable` / `checkWriterState` first; what
 *   they throw (or a malformed pending entry) is a `SinkStateError`, which
 *   fails the job without restarts.
 * - `close()` closes writer and committer (each once, both even if one
 *   throws) and never commits.
 *
 * Commit rounds, their outcomes and retry numbers: `sink_commit.ts`.
 *
 * @module
 */

import type { SinkContext, SinkInitContext, TwoPhaseCommitSink } from "../../api/sink.ts";
import { adaptTwoPhaseCommitSink } from "../../api/two_phase_commit_adapter.ts";
import {
  type Committer,
  SinkStateError,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../api/sink_v2.ts";
import type { ListState } from "../../api/state.ts";
import { ListStateDescriptor } from "../../api/state.ts";
import { delay } from "../../actor/async.ts";
import { SuppressRestartsError } from "../../failure.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import { OrderedCalls } from "./_ordered_calls.ts";
import { instantiate } from "./udf_operator.ts";
import { operatorStateSnapshot } from "./state_participants.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshotResults,
  StreamOperator,
} from "./operator.ts";
import {
  checkCommitRetryOptions,
  type CommitCounters,
  commitPending,
  type CommitRetryOptions,
  DEFAULT_COMMIT_RETRY,
  type PendingCommittable,
} from "./sink_commit.ts";

/** The operator list state holding the pending committables. */
export const PENDING_COMMITTABLES_STATE = "_pending_committables";
/** The operator list state holding the writer state. */
export const WRITER_STATE = "_writer_state";

/**
 * The SinkV2 a subtask runs for `sink`: a SinkV2 as it is (it is a factory
 * of per-subtask writers), a `TwoPhaseCommitSink` as a per-subtask copy
 * (own fields copied shallowly, as the engine copies functions) behind
 * `adaptTwoPhaseCommitSink`. Call once per subtask.
 */
export function subtaskSinkV2(
  sink: SinkV2<unknown, unknown, unknown> | TwoPhaseCommitSink<unknown, unknown>,
): SinkV2<unknown, unknown, unknown> {
  return sink.kind === "v2" ? sink : adaptTwoPhaseCommitSink(instantiate(sink));
}

/** What {@linkcode SinkWriterOperator} is built from. */
export interface SinkWriterOperatorOptions {
  /** The sink's stable uid. */
  readonly uid: string;
  /** The sink's name (logs, errors). */
  readonly name: string;
  /** The sink (not copied: a `SinkV2` is a factory of per-subtask writers). */
  readonly sink: SinkV2<unknown, unknown, unknown>;
  /** The subtask's environment. */
  readonly env: OperatorEnvironment;
  /** Commit retries (default {@linkcode DEFAULT_COMMIT_RETRY}). */
  readonly commitRetry?: CommitRetryOptions;
  /** Waits between commit retries (default a timer); tests pass an instant one. */
  readonly sleep?: (ms: number) => Promise<void>;
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

/** Runs a {@linkcode SinkV2} (protocol in `runtime/api/sink_v2.ts`; see the module docs). */
export class SinkWriterOperator implements StreamOperator {
  /** The sink's uid. */
  readonly uid: string;
  /** The sink's name. */
  readonly name: string;
  readonly #sink: SinkV2<unknown, unknown, unknown>;
  readonly #env: OperatorEnvironment;
  readonly #retry: CommitRetryOptions;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #counters: CommitCounters = {
    totalCommittables: 0,
    successfulCommittables: 0,
    alreadyCommittedCommittables: 0,
    retriedCommittables: 0,
    failedCommittables: 0,
  };
  #store!: DefaultOperatorStateStore;
  #pendingState!: ListState<PendingCommittable>;
  #writerState!: ListState<unknown>;
  #restoredCheckpointId: number | undefined;
  #restoredWriterState: unknown[] = [];
  /** Committables not yet committed, in checkpoint order. */
  #pending: PendingCommittable[] = [];
  #writer: SinkWriter<unknown, unknown, unknown> | undefined;
  #committer: Committer<unknown> | undefined;
  #calls = new OrderedCalls();
  /** The last commit round, so rounds never overlap. */
  #committing: Promise<void> = Promise.resolve();
  #endOfInput = false;
  #closed = false;

  /**
   * Creates the operator.
   * @throws {RangeError} for invalid `commitRetry` options.
   */
  constructor(options: SinkWriterOperatorOptions) {
    this.uid = options.uid;
    this.name = options.name;
    this.#sink = options.sink;
    this.#env = options.env;
    this.#retry = checkCommitRetryOptions(options.commitRetry ?? DEFAULT_COMMIT_RETRY);
    this.#sleep = options.sleep ?? ((ms) => delay(ms));
  }

  #where(checkpointId?: number): string {
    const env = this.#env;
    return `sink '${this.name}' (uid ${this.uid}) subtask ${env.subtaskIndex}/${env.parallelism} attempt ${env.attempt}` +
      (checkpointId === undefined ? "" : ` checkpoint ${checkpointId}`);
  }

  /** The committables not yet committed (copies of the entries), in checkpoint order. */
  pendingCommittables(): readonly PendingCommittable[] {
    return this.#pending.slice();
  }

  /** Reads and validates the restored pending committables and writer state. */
  initializeState(restore: OperatorRestore | undefined): Promise<void> {
    this.#store = new DefaultOperatorStateStore(restore?.operator);
    this.#pendingState = this.#store.getListState(
      new ListStateDescriptor<PendingCommittable>(PENDING_COMMITTABLES_STATE),
    );
    this.#writerState = this.#store.getListState(new ListStateDescriptor<unknown>(WRITER_STATE));
    if (restore === undefined) return Promise.resolve();
    this.#restoredCheckpointId = restore.checkpointId;
    const where = this.#where(restore.checkpointId);
    this.#pending = this.#pendingState.get()
      .map((raw, i) => this.#checkPending(raw, i, where))
      .sort((a, b) => a.checkpointId - b.checkpointId);
    const states = this.#writerState.get();
    if (states.length > 0) {
      const check = this.#sink.checkWriterState;
      if (check === undefined) {
        throw new SinkStateError(
          `writer state of ${where}`,
          `the checkpoint holds ${states.length} writer state item(s) but the sink has no checkWriterState to read them`,
        );
      }
      this.#restoredWriterState = states.map((raw, i) =>
        this.#checked(() => check.call(this.#sink, raw), `writer state item ${i}`, where)
      );
    }
    return Promise.resolve();
  }

  #checkPending(raw: unknown, index: number, where: string): PendingCommittable {
    const what = `pending committable ${index} of ${where}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new SinkStateError(
        what,
        `entry must be an object { checkpointId, committable }: current value is ${describe(raw)}`,
      );
    }
    const { checkpointId, committable } = raw as Record<string, unknown>;
    if (!Number.isSafeInteger(checkpointId) || (checkpointId as number) < 0) {
      throw new SinkStateError(
        what,
        `field 'checkpointId' must be an integer >= 0: current value is ${describe(checkpointId)}`,
      );
    }
    const check = this.#sink.checkCommittable;
    if (check === undefined || this.#sink.createCommitter === undefined) {
      throw new SinkStateError(
        what,
        "the checkpoint holds committables but the sink has no committer and checkCommittable to commit them",
      );
    }
    return {
      checkpointId: checkpointId as number,
      committable: this.#checked(() => check.call(this.#sink, committable), "committable", where),
    };
  }

  #checked<R>(read: () => R, what: string, where: string): R {
    try {
      return read();
    } catch (error) {
      if (error instanceof SinkStateError) throw error;
      throw new SinkStateError(
        `${what} of ${where}`,
        error instanceof Error ? error.message : String(error),
        { cause: error },
      );
    }
  }

  /** Creates the committer, commits the restored committables, then creates the writer. */
  async open(): Promise<void> {
    const env = this.#env;
    const base: SinkInitContext = {
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
      attempt: env.attempt,
      uid: this.uid,
      jobId: env.jobId,
    };
    const sink = this.#sink;
    if (sink.createCommitter !== undefined) {
      this.#committer = await sink.createCommitter({
        ...base,
        restoredCheckpointId: this.#restoredCheckpointId,
      });
    }
    if (this.#pending.length > 0) await this.#commitUpTo(Infinity, "at restore");
    const context: WriterInitContext<unknown> = {
      ...base,
      restoredCheckpointId: this.#restoredCheckpointId,
      restoredState: this.#restoredWriterState,
      checkpointingMode: env.checkpointingMode,
    };
    this.#writer = await sink.createWriter(context);
    this.#restoredWriterState = [];
    if (typeof this.#writer.snapshotState === "function" && sink.checkWriterState === undefined) {
      throw new SuppressRestartsError(
        `The writer of ${this.#where()} snapshots state but the sink has no checkWriterState: ` +
          `a restore could not read it back, so the job does not start`,
      );
    }
  }

  /** Writes one record through the writer, in order with pending asynchronous writes. */
  processElement(value: unknown, timestamp: number | undefined): void {
    const writer = this.#writer!;
    const context: SinkContext = { timestamp };
    if (!this.#calls.busy) this.#calls.settle(writer.write(value, context));
    else this.#calls.run(() => writer.write(value, context));
  }

  /** Sinks ignore watermarks. */
  processWatermark(): void {}
  /** Sinks have no timers. */
  onProcessingTime(): void {}

  /** Resolves when queued writes are done; rejects with the first write error. */
  quiesce(): Promise<void> {
    return this.#calls.quiesce();
  }

  /** End of bounded input: `flush(true)`; the final checkpoint pre-commits and commits. */
  async endInput(): Promise<void> {
    await this.quiesce();
    this.#endOfInput = true;
    await this.#writer!.flush(true);
  }

  /**
   * Checkpoint `checkpointId`'s barrier: `flush(false)` (not after end of
   * input), `prepareCommit`, `snapshotState`; the committables join the
   * pending list, which goes into the snapshot with the writer state.
   * @throws {Error} when the writer returns committables and the sink has no committer.
   */
  async snapshotState(checkpointId: number, _timestamp?: number): Promise<OperatorSnapshotResults> {
    await this.quiesce();
    const writer = this.#writer!;
    if (!this.#endOfInput) await writer.flush(false);
    if (writer.prepareCommit !== undefined) {
      const committables = await writer.prepareCommit(checkpointId);
      if (committables.length > 0 && this.#committer === undefined) {
        throw new SuppressRestartsError(
          `The writer of ${
            this.#where(checkpointId)
          } returned ${committables.length} committable(s) ` +
            `but the sink has no committer: they could never become visible`,
        );
      }
      for (const committable of committables) this.#pending.push({ checkpointId, committable });
    }
    this.#pendingState.update(this.#pending);
    this.#writerState.update(
      writer.snapshotState !== undefined ? await writer.snapshotState(checkpointId) : [],
    );
    return [operatorStateSnapshot("sink-committables", this.uid, this.#store.snapshot())];
  }

  /**
   * Commits every pending committable of checkpoints `<= checkpointId`.
   * Rounds run one after the other even if notifications overlap.
   */
  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    const round = this.#committing.then(() => {
      if (this.#pending.length === 0 || this.#pending[0]!.checkpointId > checkpointId) return;
      return this.#commitUpTo(checkpointId, "");
    });
    // A failed round fails the attempt through the promise returned here; the chain goes on.
    this.#committing = round.catch(() => {});
    return round;
  }

  async #commitUpTo(checkpointId: number, phase: string): Promise<void> {
    let count = 0;
    while (count < this.#pending.length && this.#pending[count]!.checkpointId <= checkpointId) {
      count++;
    }
    if (count === 0) return;
    const batch = this.#pending.slice(0, count);
    const last = batch[batch.length - 1]!.checkpointId;
    await commitPending(batch, {
      committer: this.#committer!,
      retry: this.#retry,
      where: `${this.#where(last)}${phase === "" ? "" : ` ${phase}`}`,
      counters: this.#counters,
      sleep: this.#sleep,
    });
    // Committables pre-committed meanwhile were appended; only the batch leaves.
    this.#pending.splice(0, count);
  }

  /** An aborted checkpoint's committables stay pending for the next completed one. */
  notifyCheckpointAborted(_checkpointId?: number): Promise<void> {
    return Promise.resolve();
  }

  /** Commit counters (Flink's `SinkCommitterMetricGroup` names), plus `pendingCommittables`. */
  metrics(): Readonly<Record<string, number>> {
    return { ...this.#counters, pendingCommittables: this.#pending.length };
  }

  /** Closes the writer and the committer (never commits); the first error is rethrown. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    let failure: { error: unknown } | undefined;
    for (const closable of [this.#writer, this.#committer]) {
      if (closable === undefined) continue;
      try {
        await closable.close();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== undefined) throw failure.error;
  }
}
