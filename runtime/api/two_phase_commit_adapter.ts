/**
 * Runs a {@linkcode TwoPhaseCommitSink} as a {@linkcode SinkV2}, so both go
 * through one sink operator (Flink's `TwoPhaseCommitSinkFunction` mapped onto
 * the writer/committer split, as FLIP-143 describes for the Kafka sink).
 *
 * | SinkV2 hook | TwoPhaseCommitSink calls |
 * |---|---|
 * | `createCommitter` | `open` (once per subtask) |
 * | `createWriter` | `open` (if not yet), `abort` for each restored open transaction, `beginTransaction` |
 * | `write` | `invoke(txn, value)` |
 * | `prepareCommit(n)` | `preCommit(txn)`, then `beginTransaction`; returns `[txn]` |
 * | `snapshotState(n)` | `[txn]` (the transaction open after the barrier) |
 * | `commit(requests)` | `commit(txn)` per request, in checkpoint order |
 * | writer `close` | `abort(txn)` for the open transaction, then `close` |
 *
 * `open` runs before the restored transactions are committed, as in the
 * two-phase protocol of `sink.ts`; `close` runs once, after both the writer
 * and the committer closed (or after whichever of them was created).
 *
 * A `commit` that throws a {@linkcode SuppressRestartsError} (anywhere in its
 * cause chain) is a known reason: the job fails without restarts. Any other
 * throw is an unknown reason: the attempt fails and the restore commits
 * again. The first failure stops the round: the later transactions are not
 * committed (visibility stays in checkpoint order) and are signalled as
 * failed with the same reason.
 *
 * Restored transactions pass the sink's `checkTransaction` when it has one;
 * without it the adapter only refuses a missing (`undefined`/`null`)
 * transaction, and the sink's `commit`/`abort` must accept what MessagePack
 * gives back.
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";
import type { SinkInitContext, TwoPhaseCommitSink } from "./sink.ts";
import {
  type CommitRequest,
  type Committer,
  SinkStateError,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "./sink_v2.ts";

function isKnownReason(error: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e = error; e instanceof Error && !seen.has(e); e = e.cause) {
    if (e instanceof SuppressRestartsError) return true;
    seen.add(e);
  }
  return false;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** The open/close bookkeeping one subtask's writer and committer share. */
class Lifecycle<T, Txn> {
  readonly sink: TwoPhaseCommitSink<T, Txn>;
  #opened: Promise<void> | undefined;
  #users = 0;
  #closed = false;

  constructor(sink: TwoPhaseCommitSink<T, Txn>) {
    this.sink = sink;
  }

  async open(context: SinkInitContext): Promise<void> {
    this.#users++;
    this.#opened ??= Promise.resolve(this.sink.open?.(context));
    await this.#opened;
  }

  async release(): Promise<void> {
    if (--this.#users > 0 || this.#closed) return;
    this.#closed = true;
    await this.sink.close?.();
  }
}

function initContext(context: SinkInitContext): SinkInitContext {
  return {
    subtaskIndex: context.subtaskIndex,
    parallelism: context.parallelism,
    attempt: context.attempt,
    uid: context.uid,
    jobId: context.jobId,
  };
}

class TwoPhaseCommitWriter<T, Txn> implements SinkWriter<T, Txn, Txn> {
  readonly #life: Lifecycle<T, Txn>;
  readonly #context: SinkInitContext;
  #txn: Txn;
  #closed = false;

  constructor(life: Lifecycle<T, Txn>, context: SinkInitContext, txn: Txn) {
    this.#life = life;
    this.#context = context;
    this.#txn = txn;
  }

  write(value: T, context: { readonly timestamp: number | undefined }): void | Promise<void> {
    return this.#life.sink.invoke(this.#txn, value, context);
  }

  flush(): void {}

  async prepareCommit(): Promise<readonly Txn[]> {
    const sink = this.#life.sink;
    const prepared = this.#txn;
    await sink.preCommit(prepared);
    this.#txn = await sink.beginTransaction(this.#context);
    return [prepared];
  }

  snapshotState(): readonly Txn[] {
    return [this.#txn];
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#life.sink.abort(this.#txn);
    } finally {
      await this.#life.release();
    }
  }
}

class TwoPhaseCommitCommitter<T, Txn> implements Committer<Txn> {
  readonly #life: Lifecycle<T, Txn>;
  #closed = false;

  constructor(life: Lifecycle<T, Txn>) {
    this.#life = life;
  }

  async commit(requests: readonly CommitRequest<Txn>[]): Promise<void> {
    const sink = this.#life.sink;
    let failure: { error: Error; known: boolean; checkpointId: number } | undefined;
    for (const request of requests) {
      if (failure !== undefined) {
        const error = new Error(
          `not committed: the commit of a transaction of checkpoint ${failure.checkpointId} failed before it ` +
            `(${failure.error.message})`,
          { cause: failure.error },
        );
        if (failure.known) request.signalFailedWithKnownReason(error);
        else request.signalFailedWithUnknownReason(error);
        continue;
      }
      try {
        await sink.commit(request.committable);
      } catch (thrown) {
        const error = asError(thrown);
        failure = { error, known: isKnownReason(error), checkpointId: request.checkpointId };
        if (failure.known) request.signalFailedWithKnownReason(error);
        else request.signalFailedWithUnknownReason(error);
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#life.release();
  }
}

/**
 * The {@linkcode SinkV2} that runs `sink` (see the module docs for the
 * mapping). Make one per subtask: it holds the subtask's open/close state.
 *
 * @param sink the two-phase-commit sink (a per-subtask copy).
 * @returns a SinkV2 whose committables and writer states are `Txn`s.
 */
export function adaptTwoPhaseCommitSink<T, Txn>(
  sink: TwoPhaseCommitSink<T, Txn>,
): SinkV2<T, Txn, Txn> {
  const life = new Lifecycle(sink);
  const checkTransaction = (what: string) => (raw: unknown): Txn => {
    if (sink.checkTransaction !== undefined) return sink.checkTransaction(raw);
    if (raw === undefined || raw === null) {
      throw new SinkStateError(
        what,
        `a two-phase-commit transaction must be present: current value is ${raw}`,
      );
    }
    return raw as Txn;
  };
  return {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    async createCommitter(context) {
      await life.open(initContext(context));
      return new TwoPhaseCommitCommitter(life);
    },
    async createWriter(context: WriterInitContext<Txn>) {
      const init = initContext(context);
      await life.open(init);
      try {
        for (const txn of context.restoredState) await sink.abort(txn);
        return new TwoPhaseCommitWriter(life, init, await sink.beginTransaction(init));
      } catch (error) {
        await life.release();
        throw error;
      }
    },
    checkCommittable: checkTransaction("pre-committed two-phase-commit transaction"),
    checkWriterState: checkTransaction("open two-phase-commit transaction"),
  };
}
