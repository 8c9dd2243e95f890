import assert from "node:assert/strict";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { JetStreamSink, MAX_BATCH_BYTES_LIMIT } from "./sink.ts";
import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { waitUntil } from "../../tests/_wait.ts";
import type { JetStreamTxn } from "./producer.ts";
import {
  type CommitRequest,
  type Committer,
  DeliveryGuaranteeError,
  type SinkWriter,
} from "../../runtime/api/sink_v2.ts";
import { ProducerFencedError, TransactionStateError } from "./protocol.ts";
import { TransactionLog } from "./transactions.ts";
import { readCommitted } from "./reader.ts";
import {
  CONNECTION,
  HandDrivenTransactions,
  initContext,
  readJson,
  type TestJetStream,
  withJetStream,
} from "./_test_kit.ts";

const NO_TIMESTAMP = { timestamp: undefined };

/** A pending committable as the sink operator keeps it. */
interface Pending {
  readonly checkpointId: number;
  readonly committable: JetStreamTxn;
}

/** What a checkpoint holds of a sink subtask: its pending committables. */
interface SinkSnapshot {
  readonly checkpointId: number;
  readonly pending: Pending[];
}

/** How each request of a commit round was signalled. */
type Signal = "committed" | "already-committed" | "known" | "unknown" | "retry";

/** Runs one commit round of `committer` over `pending`, as the sink operator does. */
async function commitRound(
  committer: Committer<JetStreamTxn>,
  pending: readonly Pending[],
): Promise<{ signals: Signal[]; errors: Error[] }> {
  const signals: Signal[] = pending.map(() => "committed");
  const errors: Error[] = [];
  const requests: CommitRequest<JetStreamTxn>[] = pending.map((p, i) => ({
    committable: p.committable,
    checkpointId: p.checkpointId,
    numberOfRetries: 0,
    signalFailedWithKnownReason: (e) => {
      signals[i] = "known";
      errors.push(e);
    },
    signalFailedWithUnknownReason: (e) => {
      signals[i] = "unknown";
      errors.push(e);
    },
    retryLater: () => signals[i] = "retry",
    updateAndRetryLater: () => signals[i] = "retry",
    signalAlreadyCommitted: () => signals[i] = "already-committed",
  }));
  await committer.commit(requests);
  return { signals, errors };
}

/**
 * One attempt of one sink subtask, driven as `SinkWriterOperator` drives a
 * SinkV2 (see `runtime/api/sink_v2.ts`): the committer first, the restored
 * committables committed (after `checkCommittable`), then the writer.
 */
class Attempt {
  readonly sink: JetStreamSink<number>;
  readonly subtask: number;
  readonly parallelism: number;
  readonly attempt: number;
  writer!: SinkWriter<number, JetStreamTxn, never>;
  committer!: Committer<JetStreamTxn>;
  pending: Pending[] = [];
  checkpointId: number;
  readonly restoredCheckpointId: number | undefined;

  private constructor(
    t: TestJetStream,
    options: { subtask: number; parallelism: number; attempt: number; restore?: SinkSnapshot },
  ) {
    this.subtask = options.subtask;
    this.parallelism = options.parallelism;
    this.attempt = options.attempt;
    this.restoredCheckpointId = options.restore?.checkpointId;
    this.checkpointId = options.restore?.checkpointId ?? 0;
    this.sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: (n) => `${t.stream}.${n % 2 === 0 ? "even" : "odd"}`,
      txnBucket: t.bucket,
      transactionalIdPrefix: "out",
    });
  }

  static async start(
    t: TestJetStream,
    options: { subtask?: number; parallelism?: number; attempt?: number; restore?: SinkSnapshot } =
      {},
  ): Promise<Attempt> {
    const a = new Attempt(t, {
      subtask: options.subtask ?? 0,
      parallelism: options.parallelism ?? 1,
      attempt: options.attempt ?? (options.restore ? 1 : 0),
      ...(options.restore ? { restore: options.restore } : {}),
    });
    const ctx = { ...initContext(a.subtask, a.parallelism, a.attempt) };
    a.committer = await a.sink.createCommitter!({
      ...ctx,
      restoredCheckpointId: a.restoredCheckpointId,
    });
    if (options.restore && options.restore.pending.length > 0) {
      const restored = options.restore.pending.map((p) => ({
        checkpointId: p.checkpointId,
        committable: a.sink.checkCommittable(p.committable),
      }));
      const round = await commitRound(a.committer, restored);
      if (round.errors.length > 0) throw round.errors[0];
    }
    a.writer = await a.sink.createWriter({
      ...ctx,
      restoredCheckpointId: a.restoredCheckpointId,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    return a;
  }

  async write(values: number[]): Promise<void> {
    for (const v of values) await this.writer.write(v, NO_TIMESTAMP);
  }

  /** The barrier: flush, prepareCommit, snapshot (a MessagePack round trip). */
  async checkpoint(): Promise<SinkSnapshot> {
    const n = ++this.checkpointId;
    await this.writer.flush(false);
    for (const committable of await this.writer.prepareCommit!(n)) {
      this.pending.push({ checkpointId: n, committable });
    }
    return decode(encode({ checkpointId: n, pending: this.pending })) as SinkSnapshot;
  }

  /** The checkpoint completed: commit every pending committable; they must commit. */
  async complete(): Promise<Signal[]> {
    const round = await commitRound(this.committer, this.pending);
    if (round.errors.length > 0) throw round.errors[0];
    this.pending = [];
    return round.signals;
  }

  /** A crash, or the end: writer and committer close, nothing is committed or aborted. */
  async close(): Promise<void> {
    await this.writer?.close();
    await this.committer?.close();
  }
}

/**
 * The committed values, ascending: the sink batches per subject (even and
 * odd here), so records of different subjects may reach the stream in
 * another order than written (see `protocol.ts`, "Record batches").
 */
async function readSorted(stream: string, options: Parameters<typeof readJson>[1] = {}) {
  return ((await readJson(stream, options)) as number[]).sort((a, b) => a - b);
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

Deno.test("records stay invisible to read-committed readers until their transaction commits", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    try {
      await a.write([1, 2, 3]);
      await a.checkpoint();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), []);
      assert.deepEqual(
        await readSorted(t.stream, { txnBucket: t.bucket, isolation: "read_uncommitted" }),
        [1, 2, 3],
      );
      assert.deepEqual(await a.complete(), ["committed"]);
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [1, 2, 3]);
    } finally {
      await a.close();
    }
  });
});

Deno.test("a transaction's records go in one batch per subject, with Weir-Txn, Weir-Batch and a Nats-Msg-Id of <txnId>:<n>", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    let txn = "";
    try {
      await a.write([4, 5, 6, 7, 8]);
      const snapshot = await a.checkpoint();
      txn = snapshot.pending[0]!.committable.id;
      assert.deepEqual(
        { ...snapshot.pending[0]!.committable, id: "" },
        {
          id: "",
          transactionalId: "out.0",
          epoch: 0,
          records: 5,
          messages: 2,
          firstSeq: 1,
          lastSeq: 2,
        },
      );
      await a.complete();
    } finally {
      await a.close();
    }
    const seen: string[] = [];
    for await (
      const r of readCommitted({
        connection: CONNECTION,
        stream: t.stream,
        txnBucket: t.bucket,
        bounded: true,
      })
    ) {
      const h = (name: string) => r.headers?.get(name) ?? "";
      seen.push(
        `${r.seq}/${r.index} ${r.subject.slice(t.stream.length)} ${h("Weir-Txn") === txn} ` +
          `${h("Weir-Batch")} ${h("Nats-Msg-Id").slice(txn.length)} ${
            new TextDecoder().decode(r.data)
          }`,
      );
    }
    assert.deepEqual(seen, [
      "1/0 .even true 3 :0 4",
      "1/1 .even true 3 :0 6",
      "1/2 .even true 3 :0 8",
      "2/0 .odd true 2 :1 5",
      "2/1 .odd true 2 :1 7",
    ]);
  });
});

Deno.test("a batch is published once it reaches maxBatchBytes, so one transaction spans many messages", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: `${t.stream}.n`,
      txnBucket: t.bucket,
      maxBatchBytes: 100,
    });
    const ctx = { ...initContext(0, 1), restoredCheckpointId: undefined };
    const committer = await sink.createCommitter!(ctx);
    const writer = await sink.createWriter({
      ...ctx,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    try {
      const values = range(0, 1000);
      for (const v of values) await writer.write(v, NO_TIMESTAMP);
      await writer.flush(false);
      const [txn] = await writer.prepareCommit!(1);
      // A batch is cut as soon as its payload (4-byte prefix + JSON digits per record) reaches 100 bytes.
      let expected = 0;
      let bytes = 0;
      for (const v of values) {
        bytes += 4 + String(v).length;
        if (bytes >= 100) [expected, bytes] = [expected + 1, 0];
      }
      if (bytes > 0) expected++;
      assert.ok(expected > 50, `${expected} messages`);
      assert.deepEqual(
        [txn!.records, txn!.messages, txn!.firstSeq, txn!.lastSeq],
        [1000, expected, 1, expected],
      );
      assert.deepEqual(
        (await commitRound(committer, [{ checkpointId: 1, committable: txn! }])).signals,
        [
          "committed",
        ],
      );
      assert.deepEqual(await readJson(t.stream, { txnBucket: t.bucket }), values);
    } finally {
      await writer.close();
      await committer.close();
    }
  });
});

Deno.test("a commit of an aborted transaction fails with a known reason; a commit twice signals already committed", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    try {
      await a.write([1, 2]);
      await a.checkpoint();
      const aborted = a.pending[0]!;
      const log = await txnLog(t);
      await log.abort(aborted.committable.id, "out.0", 0);
      const round = await commitRound(a.committer, [aborted]);
      assert.deepEqual(round.signals, ["known"]);
      assert.ok(round.errors[0] instanceof TransactionStateError, String(round.errors[0]));
      assert.match(round.errors[0]!.message, /it is aborted; its 2 pre-committed records \(stream/);
      a.pending = [];
      await a.write([3]);
      await a.checkpoint();
      const committed = a.pending[0]!;
      assert.deepEqual(await a.complete(), ["committed"]);
      assert.deepEqual((await commitRound(a.committer, [committed])).signals, [
        "already-committed",
      ]);
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
    } finally {
      await a.close();
    }
  });
});

Deno.test("a zombie of an older attempt cannot pre-commit, and its pre-committed transaction is aborted after the new attempt's first commit", async () => {
  await withJetStream(async (t) => {
    const zombie = await Attempt.start(t);
    await zombie.write([1]);
    await zombie.checkpoint(); // pre-committed for a checkpoint that never completes
    await zombie.write([2]);
    const owner = await Attempt.start(t, { attempt: 1 });
    try {
      const isFenced = (e: unknown) =>
        e instanceof ProducerFencedError && e.epoch === 0 && e.currentEpoch === 1;
      await assert.rejects(zombie.checkpoint(), isFenced);
      await owner.write([3]);
      await owner.checkpoint();
      await owner.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
      const log = await txnLog(t);
      assert.equal((await log.getTxn(zombie.pending[0]!.committable.id))?.value.state, "aborted");
    } finally {
      await zombie.close();
      await owner.close();
    }
  });
});

Deno.test("open transactions of an older epoch are aborted at the next start, so readers do not stall", async () => {
  await withJetStream(async (t) => {
    // A crash without close: its transaction stays open, published, never pre-committed.
    const crashed = await HandDrivenTransactions.open(t, `${t.stream}.odd`, "out");
    const open = await crashed.beginTransaction();
    await crashed.invoke(open, 1);
    await crashed.flush();
    await crashed.close();
    assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [], "it blocks readers");
    const next = await Attempt.start(t, { attempt: 1 });
    try {
      await next.write([3]);
      await next.checkpoint();
      await next.complete();
      // Bounded reads stop at a transaction still open: [3] proves the crashed one was aborted.
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
    } finally {
      await next.close();
    }
  });
});

Deno.test("a pre-committed transaction of an older epoch is aborted once the new attempt's first checkpoint completes", async () => {
  await withJetStream(async (t) => {
    const crashed = await Attempt.start(t);
    await crashed.write([1]);
    await crashed.checkpoint(); // pre-committed for a checkpoint that never completes
    await crashed.close();
    const lingering = crashed.pending[0]!.committable;
    const next = await Attempt.start(t, { attempt: 1 });
    const log = await txnLog(t);
    try {
      assert.equal((await log.getTxn(lingering.id))?.value.state, "open");
      await next.write([2]);
      await next.checkpoint();
      await next.complete();
      assert.equal((await log.getTxn(lingering.id))?.value.state, "aborted");
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [2]);
      const producer = (await log.getProducer("out.0"))!.value;
      assert.equal(producer.settledEpoch, producer.epoch, "the older epochs are settled");
    } finally {
      await next.close();
    }
  });
});

async function txnLog(t: TestJetStream): Promise<TransactionLog> {
  return await TransactionLog.open(t.nc, t.bucket, { create: false });
}

/** The crash points of the sink's two-phase commit. */
const CRASHES = [
  "after publishing, before pre-commit",
  "after pre-commit, before the checkpoint completes",
  "after pre-commit, the checkpoint completed, before commit",
  "after commit's KV write, before the sink knew",
] as const;

Deno.test("a crash at every step of the two-phase commit recovers without loss or duplicate", async (t) => {
  for (const crash of CRASHES) {
    await t.step(crash, async () => {
      await withJetStream(async (js) => {
        // Attempt 0: checkpoint 1 covers 0..4 and completes; 5..9 go into the next transaction.
        const first = await Attempt.start(js);
        await first.write(range(0, 5));
        await first.checkpoint();
        await first.complete();
        let restored: SinkSnapshot = await first.checkpoint().then(async (s) => {
          await first.complete();
          return s;
        });
        await first.write(range(5, 10));
        let replayFrom = 5;
        if (crash !== CRASHES[0]) {
          const snapshot = await first.checkpoint(); // checkpoint 3: pending [5..9]
          if (crash !== CRASHES[1]) {
            restored = snapshot; // checkpoint 3 completed
            replayFrom = 10;
          }
          if (crash === CRASHES[3]) await commitRound(first.committer, first.pending);
        } else {
          await first.writer.flush(false);
        }
        await first.close();
        // Attempt 1 restores and replays what followed the restored checkpoint.
        const second = await Attempt.start(js, { restore: restored });
        try {
          await second.write(range(replayFrom, 12));
          await second.checkpoint();
          await second.complete();
          assert.deepEqual(await readSorted(js.stream, { txnBucket: js.bucket }), range(0, 12));
        } finally {
          await second.close();
        }
      });
    });
  }
});

Deno.test("after a scale-down, a subtask owns the removed subtasks' ids and aborts their lingering transactions", async () => {
  await withJetStream(async (t) => {
    const left = await Attempt.start(t, { subtask: 0, parallelism: 2 });
    const right = await Attempt.start(t, { subtask: 1, parallelism: 2 });
    await left.write([0]);
    await right.write([1]);
    await left.writer.flush(false);
    await right.writer.flush(false);
    const rightTxn = (right.writer as unknown as { transactionId: string }).transactionId;
    await left.close();
    await right.close();
    const only = await Attempt.start(t, { subtask: 0, parallelism: 1, attempt: 1 });
    const log = await txnLog(t);
    try {
      await only.write([2]);
      await only.checkpoint();
      await only.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [2]);
      assert.equal((await log.getTxn(rightTxn))?.value.state, "aborted");
      const fenced = (await log.getProducer("out.1"))!.value;
      assert.equal(fenced.epoch, 1, "the removed subtask's id got a new epoch");
    } finally {
      await only.close();
    }
  });
});

Deno.test("a subject that the target stream does not store fails the attempt, naming subject and stream", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: "weir-test-nowhere.x",
      txnBucket: t.bucket,
      maxInFlight: 1,
    });
    const writer = await sink.createWriter({
      ...initContext(0, 1),
      restoredCheckpointId: undefined,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    try {
      await assert.rejects(
        (async () => {
          await writer.write(1, NO_TIMESTAMP);
          await writer.flush(false);
        })(),
        (e: Error) =>
          e.message.includes("subject weir-test-nowhere.x of stream") &&
          e.message.includes(t.stream) && e.message.includes("no stream stores the subject"),
      );
    } finally {
      await writer.close();
    }
  });
});

Deno.test("a sink refuses a missing target stream when its writer starts, naming it", async () => {
  const sink = new JetStreamSink<number>({
    connection: CONNECTION,
    stream: "weir-test-no-such-stream",
    subject: "x",
  });
  await assert.rejects(
    sink.createWriter({
      ...initContext(0, 1),
      restoredCheckpointId: undefined,
      restoredState: [],
      checkpointingMode: "exactly-once",
    }),
    (e: Error) => e.message.includes("weir-test-no-such-stream"),
  );
});

Deno.test("a sink refuses an unknown delivery guarantee and out-of-range sizes, naming the value", () => {
  const base = { connection: CONNECTION, stream: "s", subject: "s.x" };
  assert.throws(
    () => new JetStreamSink({ ...base, deliveryGuarantee: "twice" as never }),
    (e: unknown) =>
      e instanceof DeliveryGuaranteeError && /current value is "twice"/.test(e.message),
  );
  assert.throws(
    () => new JetStreamSink({ ...base, maxBatchBytes: 2 * 1024 * 1024 }),
    /'maxBatchBytes' must be an integer from 1 to 983040: current value is 2097152/,
  );
  assert.throws(
    () => new JetStreamSink({ ...base, lingerMs: -1 }),
    /'lingerMs'.*current value is -1/,
  );
  assert.equal(new JetStreamSink({ ...base, deliveryGuarantee: "none" }).deliveryGuarantee, "none");
});

Deno.test("records of many subjects keep their order per subject, and open batches past 8 MiB in all go out before the barrier", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<{ s: number; n: number; pad: string }>({
      connection: CONNECTION,
      stream: t.stream,
      subject: (r) => `${t.stream}.s${r.s}`,
      txnBucket: t.bucket,
      maxBatchBytes: MAX_BATCH_BYTES_LIMIT,
    });
    const ctx = { ...initContext(0, 1), restoredCheckpointId: undefined };
    const committer = await sink.createCommitter!(ctx);
    const writer = await sink.createWriter({
      ...ctx,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    const jsm = await jetstreamApi.jetstreamManager(t.nc);
    try {
      const pad = "x".repeat(1000);
      // 200 subjects x 45 records of ~1 KB: ~9 MiB, no subject near maxBatchBytes.
      for (let n = 0; n < 45; n++) {
        for (let s = 0; s < 200; s++) await writer.write({ s, n, pad }, NO_TIMESTAMP);
      }
      await waitUntil(async () => (await jsm.streams.info(t.stream)).state.messages > 0, {
        timeoutMs: 30_000,
        missing: () => "a message published before the barrier",
      });
      await writer.flush(false);
      const committables = await writer.prepareCommit!(1);
      const round = await commitRound(
        committer,
        committables.map((committable) => ({ checkpointId: 1, committable })),
      );
      assert.deepEqual(round.signals, ["committed"]);
      const bySubject = new Map<number, number[]>();
      for (
        const r of (await readJson(t.stream, { txnBucket: t.bucket })) as { s: number; n: number }[]
      ) {
        bySubject.set(r.s, [...(bySubject.get(r.s) ?? []), r.n]);
      }
      assert.equal(bySubject.size, 200);
      for (const [s, ns] of bySubject) assert.deepEqual(ns, range(0, 45), `subject s${s}`);
    } finally {
      await writer.close();
      await committer.close();
    }
  });
});
