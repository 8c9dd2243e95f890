/**
 * A sink job in miniature for the exactly-once sink conformance suite: a
 * replayable source (a record list and an offset), one sink vertex of real
 * `SinkWriterOperator`s at some parallelism, and a coordinator that takes
 * checkpoints, decides which complete, and delivers (or drops, or reorders)
 * their notifications. An *incarnation* is one execution attempt; a crash
 * abandons it (its operators are closed, as a process end releases
 * connections, never committing) and a restore starts the next one from a
 * checkpoint, at any parallelism, replaying the source from the offset that
 * checkpoint recorded.
 *
 * Snapshots go through the real MessagePack codec and the real operator
 * state redistribution (`redistributeOperatorState`), as a restore would
 * read them from checkpoint storage. Checkpoint ids keep growing across
 * incarnations, as the coordinator's do. Internal to the test kit.
 *
 * @module
 */

import { decode, encode } from "../../runtime/actor/codec.ts";
import type { TwoPhaseCommitSink } from "../../runtime/api/sink.ts";
import type { Committer, SinkV2 } from "../../runtime/api/sink_v2.ts";
import {
  computeKeyGroupRangeForOperatorIndex,
  DEFAULT_MAX_PARALLELISM,
} from "../../runtime/state/key_group.ts";
import {
  type OperatorStateSnapshot,
  redistributeOperatorState,
} from "../../runtime/state/operator_state.ts";
import type { OperatorEnvironment } from "../../runtime/task/operators/operator.ts";
import { operatorRestore, takeSnapshot } from "../../runtime/task/operators/_snapshot_kit.ts";
import {
  SinkWriterOperator,
  subtaskSinkV2,
} from "../../runtime/task/operators/sink_writer_operator.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";

/** A checkpoint the miniature coordinator took. */
export interface TakenCheckpoint {
  /** Its id. */
  readonly id: number;
  /** How many source records were written before its barrier. */
  readonly offset: number;
  /** The parallelism of the incarnation that took it. */
  readonly parallelism: number;
  /** Each subtask's operator state (as its sink-committables blob held it), MessagePack-encoded. */
  readonly snapshots: readonly Uint8Array[];
}

/** Wraps a subtask's committer (to crash inside a commit). */
export type CommitterWrapper = (
  committer: Committer<unknown>,
  subtaskIndex: number,
) => Committer<unknown>;

/** How an incarnation starts. */
export interface IncarnationOptions<T> {
  /** The sink (from the fixture), shared by the incarnation's subtasks as the engine shares it. */
  // deno-lint-ignore no-explicit-any
  readonly sink: SinkV2<T, any, any> | TwoPhaseCommitSink<T, any>;
  /** The number of sink subtasks. */
  readonly parallelism: number;
  /** The checkpoint to restore, if any. */
  readonly restore?: TakenCheckpoint;
  /** Wraps each subtask's committer. */
  readonly wrapCommitter?: CommitterWrapper;
}

function withCommitterWrapper(
  sink: SinkV2<unknown, unknown, unknown>,
  wrap: CommitterWrapper | undefined,
  subtaskIndex: number,
): SinkV2<unknown, unknown, unknown> {
  const createCommitter = sink.createCommitter;
  if (wrap === undefined || createCommitter === undefined) return sink;
  return {
    kind: "v2",
    deliveryGuarantee: sink.deliveryGuarantee,
    createWriter: (context) => sink.createWriter(context),
    createCommitter: async (context) =>
      wrap(await createCommitter.call(sink, context), subtaskIndex),
    checkCommittable: (raw) => sink.checkCommittable!(raw),
    ...(sink.checkWriterState === undefined
      ? {}
      : { checkWriterState: (raw: unknown) => sink.checkWriterState!(raw) }),
  };
}

/** Commit retries are not what the suite tests: none, so a retry request fails loudly at once. */
const NO_RETRIES = { maxRetries: 3, initialBackoffMs: 0, maxBackoffMs: 0 };

/**
 * One execution attempt of the sink vertex. Records go to subtask
 * `id % parallelism`; every step awaits the operators' queued writes.
 */
export class Incarnation<T extends { readonly id: number }> {
  /** The operators, by subtask (only those whose `open` was reached). */
  readonly operators: SinkWriterOperator[] = [];
  /** The parallelism. */
  readonly parallelism: number;
  #closed = false;

  private constructor(parallelism: number) {
    this.parallelism = parallelism;
  }

  /**
   * Starts an incarnation: restores and opens every subtask (which commits
   * the restored committables). When a subtask fails to open, the
   * incarnation is abandoned (closed) and the error rethrown.
   */
  static async start<T extends { readonly id: number }>(
    job: { readonly jobId: string; readonly uid: string },
    attempt: number,
    options: IncarnationOptions<T>,
  ): Promise<Incarnation<T>> {
    const { parallelism, restore } = options;
    const incarnation = new Incarnation<T>(parallelism);
    const old = restore?.snapshots.map((bytes) => decode(bytes) as OperatorStateSnapshot);
    try {
      for (let i = 0; i < parallelism; i++) {
        const env: OperatorEnvironment = {
          jobId: job.jobId,
          jobName: "exactly-once sink conformance",
          vertexId: "v1",
          subtaskIndex: i,
          parallelism,
          maxParallelism: DEFAULT_MAX_PARALLELISM,
          keyGroupRange: computeKeyGroupRangeForOperatorIndex(
            DEFAULT_MAX_PARALLELISM,
            parallelism,
            i,
          ),
          attempt,
          clock: new ManualClock(),
          requestWakeup: () => {},
          checkpointingMode: "exactly-once",
        };
        const sink = withCommitterWrapper(
          subtaskSinkV2(options.sink as Parameters<typeof subtaskSinkV2>[0]),
          options.wrapCommitter,
          i,
        );
        const operator = new SinkWriterOperator({
          uid: job.uid,
          name: "conformance sink",
          sink,
          env,
          commitRetry: NO_RETRIES,
          sleep: () => Promise.resolve(),
        });
        incarnation.operators.push(operator);
        await operator.initializeState(
          restore === undefined ? undefined : operatorRestore(
            redistributeOperatorState(old!, parallelism, i),
            { checkpointId: restore.id },
          ),
        );
        await operator.open();
      }
    } catch (error) {
      await incarnation.crash();
      throw error;
    }
    return incarnation;
  }

  /** Writes `records`, each to subtask `id % parallelism`, and awaits the writes. */
  async write(records: readonly T[]): Promise<void> {
    for (const record of records) {
      this.operators[record.id % this.parallelism]!.processElement(record, undefined);
    }
    for (const operator of this.operators) await operator.quiesce();
  }

  /** Every subtask's part of checkpoint `id`'s barrier (pre-commit), encoded as stored. */
  async snapshot(id: number): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    for (const operator of this.operators) {
      const taken = await takeSnapshot(await operator.snapshotState(id, 0), id);
      out.push(encode(taken.operator ?? {}));
    }
    return out;
  }

  /** Delivers checkpoint `id`'s completion to the given subtasks (default all), in the order given. */
  async notifyComplete(id: number, subtasks?: readonly number[]): Promise<void> {
    for (const i of subtasks ?? this.operators.map((_, i) => i)) {
      await this.operators[i]!.notifyCheckpointComplete(id);
    }
  }

  /** Delivers checkpoint `id`'s abort to every subtask. */
  async notifyAborted(id: number): Promise<void> {
    for (const operator of this.operators) await operator.notifyCheckpointAborted(id);
  }

  /** End of bounded input on every subtask. */
  async endInput(): Promise<void> {
    for (const operator of this.operators) await operator.endInput();
  }

  /**
   * Abandons the incarnation as a crash would: closes every operator
   * (writers and committers release resources; nothing commits).
   * @throws {AggregateError} when a close fails (a sink bug: close must not fail on a crash).
   */
  async crash(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const errors: unknown[] = [];
    for (const operator of this.operators) {
      try {
        await operator.close();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) {
      throw new AggregateError(
        errors,
        `Closing an abandoned incarnation failed on ${errors.length} subtask(s)`,
      );
    }
  }

  /** Closes the operators at the end of a run (the same calls as a crash: close never commits). */
  finish(): Promise<void> {
    return this.crash();
  }
}
