import assert from "node:assert/strict";
import { type CommitOutcome, CommitRequestImpl } from "../../runtime/task/operators/sink_commit.ts";
import { DeliveryGuaranteeError, type WriterInitContext } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import type { WalCommitId } from "./types.ts";
import type { WalCommittable } from "./wal_committable.ts";
import { WalCommitError, WriteAheadSink } from "./wal_sink.ts";

const committerContext = {
  subtaskIndex: 0,
  parallelism: 1,
  attempt: 0,
  uid: "wal",
  jobId: "job-1",
  restoredCheckpointId: undefined,
};

function writerContext(
  overrides: Partial<WriterInitContext<never>> = {},
): WriterInitContext<never> {
  return {
    ...committerContext,
    restoredState: [],
    checkpointingMode: "exactly-once",
    ...overrides,
  };
}

const key = (id: WalCommitId) =>
  `${id.jobId}/${id.attempt}/${id.subtask}/${id.checkpointId}/${id.part}`;

/** An in-memory target of either atomicity, with a switch to crash between its two writes. */
class MemoryTarget {
  readonly sent: number[] = [];
  readonly recorded = new Set<string>();
  crashAfterSend = false;
  failWith: Error | undefined;

  atomic() {
    return {
      atomicity: "atomic" as const,
      open: () =>
        Promise.resolve({
          sendValuesOnce: (values: readonly number[], id: WalCommitId) => {
            if (this.failWith !== undefined) return Promise.reject(this.failWith);
            if (this.recorded.has(key(id))) return Promise.resolve("already-committed" as const);
            this.sent.push(...values);
            this.recorded.add(key(id));
            return Promise.resolve("sent" as const);
          },
          close: () => Promise.resolve(),
        }),
    };
  }

  separate() {
    return {
      atomicity: "separate" as const,
      open: () =>
        Promise.resolve({
          target: {
            sendValues: (values: readonly number[]) => {
              if (this.failWith !== undefined) return Promise.reject(this.failWith);
              this.sent.push(...values);
              if (this.crashAfterSend) return Promise.reject(new Error("process died"));
              return Promise.resolve();
            },
            close: () => Promise.resolve(),
          },
          committer: {
            isCheckpointCommitted: (id: WalCommitId) => Promise.resolve(this.recorded.has(key(id))),
            commitCheckpoint: (id: WalCommitId) => {
              this.recorded.add(key(id));
              return Promise.resolve();
            },
            close: () => Promise.resolve(),
          },
        }),
    };
  }
}

async function commitAll(
  sink: WriteAheadSink<number>,
  committables: readonly WalCommittable<number>[],
  numberOfRetries = 0,
): Promise<CommitOutcome[]> {
  const committer = await sink.createCommitter(committerContext);
  const requests = committables.map((c) =>
    new CommitRequestImpl({ checkpointId: c.checkpointId, committable: c }, numberOfRetries)
  );
  await committer.commit(requests as never);
  await committer.close();
  return requests.map((r) => r.seal());
}

Deno.test("WriteAheadSink sends nothing before a checkpoint completes, then each record once", async () => {
  const memory = new MemoryTarget();
  const sink = new WriteAheadSink<number>({ target: memory.atomic() });
  assert.equal(sink.deliveryGuarantee, "exactly-once");
  const writer = await sink.createWriter(writerContext());
  for (let i = 0; i < 5; i++) await writer.write(i, { timestamp: undefined });
  await writer.flush(false);
  const first = await writer.prepareCommit!(1);
  assert.deepEqual(memory.sent, []);
  assert.deepEqual(first, [{
    jobId: "job-1",
    attempt: 0,
    subtask: 0,
    checkpointId: 1,
    part: 0,
    values: [0, 1, 2, 3, 4],
  }]);
  assert.deepEqual(await writer.prepareCommit!(2), [], "an empty interval has no committable");
  await writer.write(5, { timestamp: undefined });
  const third = await writer.prepareCommit!(3);
  assert.deepEqual((await commitAll(sink, [...first, ...third])).map((o) => o.kind), [
    "committed",
    "committed",
  ]);
  assert.deepEqual(memory.sent, [0, 1, 2, 3, 4, 5]);
  await writer.close();
});

Deno.test("WriteAheadSink skips a batch replayed after a restore, with either atomicity", async () => {
  for (const kind of ["atomic", "separate"] as const) {
    const memory = new MemoryTarget();
    const sink = new WriteAheadSink<number>({
      target: kind === "atomic" ? memory.atomic() : memory.separate(),
    });
    const writer = await sink.createWriter(writerContext());
    await writer.write(7, { timestamp: undefined });
    const committables = await writer.prepareCommit!(4);
    assert.deepEqual((await commitAll(sink, committables)).map((o) => o.kind), ["committed"]);
    // The restore commits the checkpoint's committables again.
    const restored = committables.map((c) => sink.checkCommittable(structuredClone(c)));
    assert.deepEqual((await commitAll(sink, restored)).map((o) => o.kind), ["already-committed"]);
    assert.deepEqual(memory.sent, [7], kind);
  }
});

Deno.test("WriteAheadSink with a separate target sends a batch twice after a crash between send and record (at-least-once)", async () => {
  const memory = new MemoryTarget();
  const sink = new WriteAheadSink<number>({ target: memory.separate() });
  assert.equal(sink.deliveryGuarantee, "at-least-once");
  const writer = await sink.createWriter(writerContext());
  await writer.write(1, { timestamp: undefined });
  await writer.write(2, { timestamp: undefined });
  const committables = await writer.prepareCommit!(1);
  memory.crashAfterSend = true;
  assert.deepEqual((await commitAll(sink, committables)).map((o) => o.kind), ["retry"]);
  memory.crashAfterSend = false;
  assert.deepEqual((await commitAll(sink, committables, 1)).map((o) => o.kind), ["committed"]);
  assert.deepEqual(memory.sent, [1, 2, 1, 2]);
});

Deno.test("WriteAheadSink refuses exactly-once for a target that is not atomic", () => {
  const memory = new MemoryTarget();
  assert.throws(
    () =>
      new WriteAheadSink<number>({ target: memory.separate(), deliveryGuarantee: "exactly-once" }),
    (e: unknown) =>
      e instanceof DeliveryGuaranteeError &&
      e.message ===
        'WriteAheadSink with a non-atomic target (atomicity "separate") cannot give deliveryGuarantee "exactly-once": it supports "at-least-once"',
  );
  assert.throws(
    () => new WriteAheadSink<number>({ target: memory.atomic(), deliveryGuarantee: "none" }),
    DeliveryGuaranteeError,
  );
  assert.equal(
    new WriteAheadSink<number>({ target: memory.atomic(), deliveryGuarantee: "at-least-once" })
      .deliveryGuarantee,
    "at-least-once",
  );
});

Deno.test("WriteAheadSink's writer runs without checkpointing (a bounded job's final checkpoint commits it) and declares it commits only at checkpoints", async () => {
  const sink = new WriteAheadSink<number>({ target: new MemoryTarget().atomic() });
  assert.equal(sink.commitsOnlyAtCheckpoints, true);
  const writer = await sink.createWriter(writerContext({ checkpointingMode: "none" }));
  await writer.write(1, { timestamp: undefined });
  assert.deepEqual(
    (await writer.prepareCommit!(1)).map((c) => c.values),
    [[1]],
  );
  await writer.close();
});

Deno.test("WriteAheadSink splits a checkpoint's values into parts of maxValuesPerCommittable", async () => {
  const memory = new MemoryTarget();
  const sink = new WriteAheadSink<number>({ target: memory.atomic(), maxValuesPerCommittable: 3 });
  const writer = await sink.createWriter(writerContext({ subtaskIndex: 2, attempt: 5 }));
  for (let i = 0; i < 8; i++) await writer.write(i, { timestamp: undefined });
  const committables = await writer.prepareCommit!(9);
  assert.deepEqual(
    committables.map((c) => [c.subtask, c.attempt, c.checkpointId, c.part, c.values]),
    [[2, 5, 9, 0, [0, 1, 2]], [2, 5, 9, 1, [3, 4, 5]], [2, 5, 9, 2, [6, 7]]],
  );
  await commitAll(sink, committables);
  assert.deepEqual(memory.sent, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.throws(
    () => new WriteAheadSink<number>({ target: memory.atomic(), maxValuesPerCommittable: 0 }),
    /'maxValuesPerCommittable' must be an integer >= 1: current value is 0/,
  );
});

Deno.test("WriteAheadSink fails the job for a rejected batch and retries any other error", async () => {
  const memory = new MemoryTarget();
  const sink = new WriteAheadSink<number>({ target: memory.atomic() });
  const committable: WalCommittable<number> = {
    jobId: "job-1",
    attempt: 0,
    subtask: 0,
    checkpointId: 3,
    part: 0,
    values: [1],
  };
  memory.failWith = new SuppressRestartsError("column 'x' does not exist");
  const [known] = await commitAll(sink, [committable]);
  assert.equal(known?.kind, "failed-known");
  assert.ok(known?.kind === "failed-known" && known.error instanceof WalCommitError);
  assert.match(
    (known as { error: Error }).error.message,
    /^WriteAheadSink wal#0 of job job-1: cannot send batch job job-1 attempt 0 subtask 0 checkpoint 3 part 0 \(1 values, try 1\): column 'x' does not exist$/,
  );
  memory.failWith = new Error("connection reset");
  assert.deepEqual((await commitAll(sink, [committable])).map((o) => o.kind), ["retry"]);
  assert.deepEqual(memory.sent, []);
});
