import assert from "node:assert/strict";
import { SuppressRestartsError } from "../failure.ts";
import { StreamExecutionEnvironment } from "./environment.ts";
import { checkSink, type SinkInitContext, type TwoPhaseCommitSink } from "./sink.ts";
import { type CommitRequest, SinkStateError, type SinkV2 } from "./sink_v2.ts";
import { adaptTwoPhaseCommitSink } from "./two_phase_commit_adapter.ts";

interface Txn {
  readonly id: number;
}

/** A two-phase-commit sink that logs every call. */
function loggingSink(log: string[], failCommit?: (txn: Txn) => Error | undefined) {
  let next = 0;
  const sink: TwoPhaseCommitSink<string, Txn> = {
    kind: "two-phase-commit",
    open: (c: SinkInitContext) => void log.push(`open ${c.subtaskIndex}`),
    beginTransaction: () => {
      const txn = { id: next++ };
      log.push(`begin ${txn.id}`);
      return txn;
    },
    invoke: (txn, value) => void log.push(`invoke ${txn.id} ${value}`),
    preCommit: (txn) => void log.push(`preCommit ${txn.id}`),
    commit: (txn) => {
      const error = failCommit?.(txn);
      if (error) throw error;
      log.push(`commit ${txn.id}`);
    },
    abort: (txn) => void log.push(`abort ${txn.id}`),
    close: () => void log.push("close"),
  };
  return sink;
}

const CONTEXT = { subtaskIndex: 0, parallelism: 1, attempt: 0, uid: "out", jobId: "job" };

function request(txn: Txn, checkpointId: number, signals: string[]): CommitRequest<Txn> {
  return {
    committable: txn,
    checkpointId,
    numberOfRetries: 0,
    signalFailedWithKnownReason: (e) => signals.push(`${txn.id} known: ${e.message}`),
    signalFailedWithUnknownReason: (e) => signals.push(`${txn.id} unknown: ${e.message}`),
    retryLater: () => signals.push(`${txn.id} retry`),
    updateAndRetryLater: () => signals.push(`${txn.id} update`),
    signalAlreadyCommitted: () => signals.push(`${txn.id} already`),
  };
}

Deno.test("adaptTwoPhaseCommitSink maps the two-phase protocol onto a writer and a committer", async () => {
  const log: string[] = [];
  const v2 = adaptTwoPhaseCommitSink(loggingSink(log));
  assert.equal(v2.kind, "v2");
  assert.equal(v2.deliveryGuarantee, "exactly-once");
  const committer = await v2.createCommitter!({ ...CONTEXT, restoredCheckpointId: 4 });
  const signals: string[] = [];
  await committer.commit([request({ id: 90 }, 3, signals), request({ id: 91 }, 4, signals)]);
  const writer = await v2.createWriter({
    ...CONTEXT,
    restoredCheckpointId: 4,
    restoredState: [{ id: 92 }],
    checkpointingMode: "exactly-once",
  });
  await writer.write("a", { timestamp: undefined });
  assert.deepEqual(await writer.prepareCommit!(5), [{ id: 0 }]);
  assert.deepEqual(await writer.snapshotState!(5), [{ id: 1 }]);
  await writer.write("b", { timestamp: undefined });
  await writer.close();
  assert.deepEqual(log, [
    "open 0",
    "commit 90",
    "commit 91",
    "abort 92",
    "begin 0",
    "invoke 0 a",
    "preCommit 0",
    "begin 1",
    "invoke 1 b",
    "abort 1",
  ]);
  await committer.close();
  assert.equal(log.at(-1), "close", "the sink closes once, after the writer and the committer");
  assert.equal(log.filter((l) => l === "close").length, 1);
  assert.deepEqual(signals, []);
});

Deno.test("adaptTwoPhaseCommitSink signals a SuppressRestartsError from commit as a known reason and stops the round", async () => {
  const log: string[] = [];
  const v2 = adaptTwoPhaseCommitSink(
    loggingSink(
      log,
      (t) =>
        t.id === 1 ? new Error("gone", { cause: new SuppressRestartsError("purged") }) : undefined,
    ),
  );
  const committer = await v2.createCommitter!({ ...CONTEXT, restoredCheckpointId: undefined });
  const signals: string[] = [];
  await committer.commit([0, 1, 2].map((id) => request({ id }, id + 1, signals)));
  assert.deepEqual(
    log,
    ["open 0", "commit 0"],
    "the transaction after the failed one is not committed",
  );
  assert.deepEqual(signals, [
    "1 known: gone",
    "2 known: not committed: the commit of a transaction of checkpoint 2 failed before it (gone)",
  ]);
  await committer.close();
});

Deno.test("adaptTwoPhaseCommitSink signals any other commit error as an unknown reason", async () => {
  const log: string[] = [];
  const v2 = adaptTwoPhaseCommitSink(loggingSink(log, () => new Error("timeout")));
  const committer = await v2.createCommitter!({ ...CONTEXT, restoredCheckpointId: undefined });
  const signals: string[] = [];
  await committer.commit([request({ id: 7 }, 1, signals)]);
  assert.deepEqual(signals, ["7 unknown: timeout"]);
  await committer.close();
});

Deno.test("adaptTwoPhaseCommitSink reads restored transactions through checkTransaction, or refuses a missing one", () => {
  const plain = adaptTwoPhaseCommitSink(loggingSink([]));
  assert.deepEqual(plain.checkCommittable!({ id: 3 }), { id: 3 });
  assert.throws(
    () => plain.checkWriterState!(null),
    (e: unknown) =>
      e instanceof SinkStateError && e instanceof SuppressRestartsError &&
      e.message ===
        "Invalid open two-phase-commit transaction in checkpoint: a two-phase-commit transaction must be present: current value is null",
  );
  const checked = adaptTwoPhaseCommitSink({
    ...loggingSink([]),
    checkTransaction: (raw: unknown): Txn => {
      if (typeof (raw as Txn)?.id !== "number") {
        throw new SinkStateError("test transaction", "field 'id' must be a number");
      }
      return raw as Txn;
    },
  });
  assert.throws(
    () => checked.checkCommittable!({ id: "x" }),
    /^SinkStateError: Invalid test transaction/,
  );
});

Deno.test("sinkTo refuses a SinkV2 with a committer but no checkCommittable, and a sink of unknown kind", () => {
  const env = new StreamExecutionEnvironment();
  const noCheck = {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    createWriter: () => ({ write() {}, flush() {}, close() {} }),
    createCommitter: () => ({ commit() {}, close() {} }),
  } as unknown as SinkV2<number, string, never>;
  assert.throws(
    () => env.fromCollection([1]).uid("src").sinkTo(noCheck),
    (e: unknown) =>
      e instanceof TypeError &&
      /^Cannot use the SinkV2 of the sink after node\(s\) \d+: it has a committer, so 'checkCommittable' must be a function to read its committables back from a checkpoint: current value is undefined$/
        .test(e.message),
  );
  assert.throws(
    () => checkSink({ kind: "two-phase" } as never, "a test"),
    /^TypeError: Cannot use the sink of a test: 'kind' must be "simple", "two-phase-commit" or "v2": current value is "two-phase"$/,
  );
});
