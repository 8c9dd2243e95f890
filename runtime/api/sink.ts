/**
 * The sink interfaces connectors implement ({@linkcode Sink} is any of them).
 *
 * - {@linkcode SinkFunction}: writes each record as it comes (at-most-once or
 *   at-least-once, depending on the target). It may add
 *   `CheckpointedFunction` and `CheckpointListener` hooks.
 * - `SinkV2` (`./sink_v2.ts`): a writer and a committer, after Flink's
 *   SinkV2 (FLIP-143/191); the API new sinks implement.
 * - {@linkcode TwoPhaseCommitSink}: exactly-once through two-phase commit,
 *   after Flink's `TwoPhaseCommitSinkFunction`. It runs as a thin adapter
 *   over `SinkV2` (`./two_phase_commit_adapter.ts`), so both share one
 *   operator and one protocol.
 *
 * ## Two-phase commit, exactly when each hook is called
 *
 * 1. `beginTransaction` when the subtask starts, and again right after each
 *    pre-commit.
 * 2. `invoke(txn, value)` for every record, on the mailbox loop.
 * 3. At checkpoint *n*'s barrier, in the synchronous part of the snapshot:
 *    `preCommit(txn)`. The transaction joins the snapshot as pending for *n*,
 *    and a new one begins.
 * 4. When checkpoint *n* completes: `commit(txn)` for every pending
 *    transaction of checkpoints up to *n*, in checkpoint order.
 * 5. On restore from checkpoint *n*: `commit` (again) for the transactions
 *    pending in *n* (they were pre-committed but may not have been committed
 *    before the failure), then `abort` for the transaction that was open
 *    when *n* was taken. So `commit` must be idempotent, and `commit`/`abort`
 *    must accept a transaction restored from its MessagePack encoding.
 * 6. When checkpoint *n* is aborted, its transaction stays pending and is
 *    committed by the next completed checkpoint.
 * 7. Transactions pre-committed for checkpoints after the restored one
 *    (several checkpoints in flight at a crash) are not in the restored
 *    state, so no hook is called for them: they stay invisible. A sink whose
 *    target keeps open transactions should abort the lingering ones of its
 *    `uid` and subtask in `open()` (Kafka's sink does this with its
 *    transactional-id pool).
 *
 * 8. `close` once when the subtask finishes, is cancelled or fails, after
 *    `abort` of the transaction open then.
 *
 * A failure between pre-commit and the completion notification therefore
 * neither loses nor duplicates records. A `commit` that throws fails the
 * attempt, and the restore commits again; when a `SuppressRestartsError` is
 * in its cause chain, the job fails without restarts. Nothing pre-committed
 * is ever dropped. (The mapping onto `SinkV2`: `two_phase_commit_adapter.ts`.)
 *
 * @module
 */

import type { FunctionHooks } from "./functions.ts";
import type { SinkV2 } from "./sink_v2.ts";

/** What a sink gets with each record. */
export interface SinkContext {
  /** The record's event timestamp in ms, if any. */
  readonly timestamp: number | undefined;
}

/** What a sink gets at start. */
export interface SinkInitContext {
  /** This sink subtask's index. */
  readonly subtaskIndex: number;
  /** The sink's parallelism. */
  readonly parallelism: number;
  /** The execution attempt (0 first, +1 per restart); use it for fencing. */
  readonly attempt: number;
  /** The sink's stable uid. */
  readonly uid: string;
  /** The job's id. */
  readonly jobId: string;
}

/** A sink that writes each record as it comes (Flink's `SinkFunction`). */
export interface SinkFunction<T> extends FunctionHooks {
  /** Always `"simple"`. */
  readonly kind: "simple";
  /** Writes one record. Errors fail the job's attempt. */
  invoke(value: T, context: SinkContext): void | Promise<void>;
  /** Called at end of input, before the final checkpoint: flush buffers here. */
  finish?(): void | Promise<void>;
}

/**
 * An exactly-once sink through two-phase commit (see the module docs for the
 * exact protocol). `Txn` is the transaction's handle; it is checkpointed, so
 * it must be MessagePack-encodable (plain data, no class instances).
 */
export interface TwoPhaseCommitSink<T, Txn> {
  /** Always `"two-phase-commit"`. */
  readonly kind: "two-phase-commit";
  /** Called once per subtask before the first transaction begins and before restored transactions are resolved. */
  open?(context: SinkInitContext): void | Promise<void>;
  /**
   * Starts a transaction. Its id must be unique across attempts and across
   * runs: build it from `jobId` (a resumed job gets a new one), `uid`,
   * `subtaskIndex`, `attempt` and a counter.
   */
  beginTransaction(context: SinkInitContext): Txn | Promise<Txn>;
  /** Adds one record to `txn`. */
  invoke(txn: Txn, value: T, context: SinkContext): void | Promise<void>;
  /** Makes `txn` durable but still invisible: after this, commit must be able to succeed. */
  preCommit(txn: Txn): void | Promise<void>;
  /** Makes `txn` visible. Idempotent: it may be called again for a committed transaction. */
  commit(txn: Txn): void | Promise<void>;
  /** Discards `txn`. Idempotent. */
  abort(txn: Txn): void | Promise<void>;
  /**
   * Validates a transaction read back from a checkpoint (pre-committed or
   * open), before `commit`/`abort` see it. Optional: without it, the
   * transaction is passed on as MessagePack gave it back.
   * @throws {SinkStateError} (from `./sink_v2.ts`) naming what is wrong.
   */
  checkTransaction?(raw: unknown): Txn;
  /** Called once when the subtask finishes or is cancelled. */
  close?(): void | Promise<void>;
}

/** Anything `sinkTo` accepts (see {@linkcode checkSink}). */
export type Sink<T> =
  | SinkFunction<T>
  | TwoPhaseCommitSink<T, unknown>
  // deno-lint-ignore no-explicit-any
  | SinkV2<T, any, any>;

/**
 * Checks the shape of a sink given to `sinkTo`, so a sink that could never
 * run is refused when the job is built, not when it restores.
 *
 * @param sink what `sinkTo` got.
 * @param where names the stream, for the message.
 * @returns `sink`.
 * @throws {TypeError} when `kind` is not `"simple"`, `"two-phase-commit"` or
 *   `"v2"`; when a SinkV2 has `createCommitter` but no `checkCommittable`
 *   (its committables could not be read back from a checkpoint), or lacks
 *   `createWriter`.
 */
export function checkSink<T>(sink: Sink<T>, where: string): Sink<T> {
  const kind = (sink as { kind?: unknown } | null)?.kind;
  switch (kind) {
    case "simple":
    case "two-phase-commit":
      return sink;
    case "v2": {
      const v2 = sink as SinkV2<T, unknown, unknown>;
      if (typeof v2.createWriter !== "function") {
        throw new TypeError(
          `Cannot use the SinkV2 of ${where}: 'createWriter' must be a function: current value is ${typeof v2
            .createWriter}`,
        );
      }
      if (v2.createCommitter !== undefined && typeof v2.checkCommittable !== "function") {
        throw new TypeError(
          `Cannot use the SinkV2 of ${where}: it has a committer, so 'checkCommittable' must be a function ` +
            `to read its committables back from a checkpoint: current value is ${typeof v2
              .checkCommittable}`,
        );
      }
      return sink;
    }
    default:
      throw new TypeError(
        `Cannot use the sink of ${where}: 'kind' must be "simple", "two-phase-commit" or "v2": current value is ${
          JSON.stringify(kind)
        }`,
      );
  }
}
