import assert from "node:assert/strict";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { checkSink, type Sink, type SinkInitContext } from "../../runtime/api/sink.ts";
import {
  type CommitRequest,
  SinkStateError,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { CollectingSink, type CollectingTxn } from "./collecting_sink.ts";

const noTimestamp = { timestamp: undefined };

function init(subtaskIndex = 0, attempt = 0, parallelism = 1): SinkInitContext {
  return { subtaskIndex, parallelism, attempt, uid: "sums", jobId: "job-1" };
}

/** What the engine does per subtask: a new object, same prototype, own fields copied. */
function copyForSubtask<S extends object>(sink: S): S {
  return Object.assign(Object.create(Object.getPrototypeOf(sink)), sink);
}

function write<T>(sink: CollectingSink<T>, txn: CollectingTxn<T>, ...values: T[]): void {
  for (const value of values) sink.invoke(txn, value, noTimestamp);
}

Deno.test("CollectingSink keeps records invisible until commit", () => {
  const sink = new CollectingSink<number>();
  sink.open(init());
  const txn = sink.beginTransaction(init());
  write(sink, txn, 1, 2);
  assert.deepEqual(sink.committed(), []);
  sink.preCommit(txn);
  assert.deepEqual(sink.committed(), []);
  assert.deepEqual(sink.preparedTransactions(), ["job-1/sums-0-a0-0"]);
  assert.equal(sink.stats().prepared, 1);
  sink.commit(txn);
  assert.deepEqual(sink.committed(), [1, 2]);
  assert.deepEqual(sink.preparedTransactions(), []);
});

Deno.test("CollectingSink names transactions by uid, subtask, attempt and counter", () => {
  const sink = new CollectingSink<number>();
  const ids = [
    sink.beginTransaction(init(0, 0)).id,
    sink.beginTransaction(init(0, 0)).id,
    sink.beginTransaction(init(1, 0)).id,
    sink.beginTransaction(init(0, 1)).id,
  ];
  assert.deepEqual(ids, [
    "job-1/sums-0-a0-0",
    "job-1/sums-0-a0-1",
    "job-1/sums-1-a0-0",
    "job-1/sums-0-a1-0",
  ]);
});

Deno.test("CollectingSink commits a transaction once however often commit is called", () => {
  const sink = new CollectingSink<string>();
  const txn = sink.beginTransaction(init());
  write(sink, txn, "a");
  sink.preCommit(txn);
  sink.commit(txn);
  sink.commit(txn);
  sink.commit(txn);
  assert.deepEqual(sink.committed(), ["a"]);
  assert.deepEqual(sink.stats(), {
    committed: 1,
    aborted: 0,
    prepared: 0,
    commitCalls: 3,
    duplicateCommits: 2,
  });
});

Deno.test("CollectingSink commits a restored transaction once", async (t) => {
  await t.step("when it was prepared before the failure", () => {
    const sink = new CollectingSink<number>();
    const first = copyForSubtask(sink);
    const txn = first.beginTransaction(init(0, 0));
    write(first, txn, 5, 6);
    first.preCommit(txn);
    const checkpointed = encode(txn);
    // Failure before the completion notification; the restore commits again.
    const restored = copyForSubtask(sink);
    restored.commit(decode(checkpointed) as CollectingTxn<number>);
    restored.commit(decode(checkpointed) as CollectingTxn<number>);
    assert.deepEqual(sink.committed(), [5, 6]);
    assert.equal(sink.stats().duplicateCommits, 1);
  });
  await t.step("when this store never saw it prepared", () => {
    const sink = new CollectingSink<number>();
    const txn = { id: "job-1/sums-1-a3-7", subtask: 1, records: [7, 8] };
    sink.commit(decode(encode(txn)) as CollectingTxn<number>);
    sink.commit(decode(encode(txn)) as CollectingTxn<number>);
    assert.deepEqual(sink.committed(), [7, 8]);
    assert.deepEqual(sink.committedBySubtask(), [[], [7, 8]]);
    assert.deepEqual(sink.committedTransactions(), ["job-1/sums-1-a3-7"]);
  });
});

Deno.test("CollectingSink discards aborted transactions, prepared or not", () => {
  const sink = new CollectingSink<number>();
  const open = sink.beginTransaction(init());
  write(sink, open, 1);
  const prepared = sink.beginTransaction(init());
  write(sink, prepared, 2);
  sink.preCommit(prepared);
  sink.abort(open);
  sink.abort(prepared);
  sink.abort(prepared);
  assert.deepEqual(sink.committed(), []);
  assert.deepEqual(sink.stats(), {
    committed: 0,
    aborted: 2,
    prepared: 0,
    commitCalls: 0,
    duplicateCommits: 0,
  });
  assert.throws(
    () => sink.commit(prepared),
    /cannot commit transaction job-1\/sums-0-a0-1: it was aborted/,
  );
  assert.throws(
    () => sink.preCommit(open),
    /cannot pre-commit transaction job-1\/sums-0-a0-0: it was already aborted/,
  );
});

Deno.test("CollectingSink leaves a committed transaction committed when aborted", () => {
  const sink = new CollectingSink<number>();
  const txn = sink.beginTransaction(init());
  write(sink, txn, 9);
  sink.preCommit(txn);
  sink.commit(txn);
  sink.abort(txn);
  assert.deepEqual(sink.committed(), [9]);
  assert.equal(sink.stats().aborted, 0);
});

Deno.test("CollectingSink shares its store between subtask copies", () => {
  const sink = new CollectingSink<string>();
  const subtasks = [0, 1, 2].map((i) => {
    const copy = copyForSubtask(sink);
    copy.open(init(i, 0, 3));
    return copy;
  });
  const txns = subtasks.map((copy, i) => copy.beginTransaction(init(i, 0, 3)));
  write(subtasks[2]!, txns[2]!, "c1", "c2");
  write(subtasks[0]!, txns[0]!, "a1");
  subtasks.forEach((copy, i) => copy.preCommit(txns[i]!));
  subtasks[2]!.commit(txns[2]!);
  subtasks[0]!.commit(txns[0]!);
  assert.deepEqual(sink.committed(), ["c1", "c2", "a1"]);
  assert.deepEqual(sink.committedBySubtask(), [["a1"], [], ["c1", "c2"]]);
  assert.deepEqual(sink.committedTransactions(), ["job-1/sums-2-a0-0", "job-1/sums-0-a0-0"]);
  assert.deepEqual(sink.preparedTransactions(), ["job-1/sums-1-a0-0"]);
});

Deno.test("CollectingSink reset empties the store for every copy", () => {
  const sink = new CollectingSink<number>();
  const copy = copyForSubtask(sink);
  const txn = copy.beginTransaction(init());
  write(copy, txn, 1);
  copy.preCommit(txn);
  copy.commit(txn);
  sink.reset();
  assert.deepEqual(copy.committed(), []);
  assert.deepEqual(sink.stats(), {
    committed: 0,
    aborted: 0,
    prepared: 0,
    commitCalls: 0,
    duplicateCommits: 0,
  });
  assert.equal(copy.beginTransaction(init()).id, "job-1/sums-0-a0-0");
});

Deno.test("CollectingSink is an exactly-once SinkV2 with a committer", () => {
  const sink: Sink<number> = new CollectingSink<number>();
  assert.equal(sink.kind, "v2");
  assert.equal((sink as CollectingSink<number>).deliveryGuarantee, "exactly-once");
  assert.equal(checkSink(sink, "the test"), sink);
});

function writerContext(
  restoredState: readonly CollectingTxn<number>[] = [],
  attempt = 0,
): WriterInitContext<CollectingTxn<number>> {
  return {
    ...init(0, attempt),
    restoredCheckpointId: restoredState.length === 0 ? undefined : 1,
    restoredState,
    checkpointingMode: "exactly-once",
  };
}

/** A request whose signals are recorded. */
function request(
  committable: CollectingTxn<number>,
  signals: string[],
): CommitRequest<CollectingTxn<number>> {
  return {
    committable,
    checkpointId: 1,
    numberOfRetries: 0,
    signalFailedWithKnownReason: (e) => signals.push(`known: ${e.message}`),
    signalFailedWithUnknownReason: (e) => signals.push(`unknown: ${e.message}`),
    retryLater: () => signals.push("retry"),
    updateAndRetryLater: () => signals.push("update"),
    signalAlreadyCommitted: () => signals.push("already"),
  };
}

Deno.test("CollectingSink's writer pre-commits at prepareCommit and its committer commits once", async () => {
  const sink = new CollectingSink<number>();
  const writer = await sink.createWriter(writerContext());
  await writer.write(1, noTimestamp);
  await writer.write(2, noTimestamp);
  await writer.flush(false);
  const committables = await writer.prepareCommit!(1);
  assert.equal(committables.length, 1);
  assert.deepEqual(sink.committed(), []);
  assert.deepEqual(sink.preparedTransactions(), ["job-1/sums-0-a0-0"]);
  const open = await writer.snapshotState!(1);
  assert.deepEqual(open.map((t) => t.id), ["job-1/sums-0-a0-1"]);
  const committer = sink.createCommitter();
  const signals: string[] = [];
  const restored = decode(encode(committables[0])) as CollectingTxn<number>;
  await committer.commit([request(sink.checkCommittable(restored), signals)]);
  await committer.commit([request(restored, signals)]);
  assert.deepEqual(sink.committed(), [1, 2]);
  assert.deepEqual(signals, ["already"]);
  await writer.close();
  assert.equal(sink.stats().aborted, 1, "close aborts the open transaction");
});

Deno.test("CollectingSink's writer aborts the restored open transaction", async () => {
  const sink = new CollectingSink<number>();
  const first = await sink.createWriter(writerContext());
  await first.write(7, noTimestamp);
  const [open] = await first.snapshotState!(1);
  const second = await sink.createWriter(
    writerContext([sink.checkWriterState(decode(encode(open)))], 1),
  );
  const signals: string[] = [];
  await sink.createCommitter().commit([request(open!, signals)]);
  assert.equal(signals.length, 1);
  assert.match(
    signals[0]!,
    /^known: CollectingSink cannot commit transaction job-1\/sums-0-a0-0: it was aborted/,
  );
  assert.deepEqual(sink.committed(), []);
  await second.close();
});

Deno.test("CollectingSink refuses a checkpointed transaction that is not one, naming the field", () => {
  const sink = new CollectingSink<number>();
  const cases: [unknown, RegExp][] = [
    [7, /it must be an object \{ id, subtask, records \}: current value is 7/],
    [{ id: 1, subtask: 0, records: [] }, /field 'id' must be a string: current value is 1/],
    [
      { id: "t", subtask: -1, records: [] },
      /field 'subtask' of t must be an integer >= 0: current value is -1/,
    ],
    [
      { id: "t", subtask: 0, records: "x" },
      /field 'records' of t must be an array: current value is "x"/,
    ],
  ];
  for (const [raw, message] of cases) {
    assert.throws(() => sink.checkCommittable(raw), (e: unknown) => {
      assert.ok(e instanceof SinkStateError);
      assert.ok(e instanceof SuppressRestartsError, "a corrupt checkpoint is not retried");
      assert.match(e.message, /^Invalid CollectingSink transaction in checkpoint: /);
      assert.match(e.message, message);
      return true;
    });
  }
});
