import assert from "node:assert/strict";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { JetStreamSink } from "./sink.ts";
import type { JetStreamTxn } from "./producer.ts";
import { ProducerFencedError, TransactionStateError } from "./protocol.ts";
import { TransactionLog } from "./transactions.ts";
import { readCommitted } from "./reader.ts";
import {
  CONNECTION,
  initContext,
  readJson,
  type TestJetStream,
  withJetStream,
} from "./_test_kit.ts";

const NO_TIMESTAMP = { timestamp: undefined };

/** What a checkpoint holds of a sink subtask: its pending transactions and its open one. */
interface SinkSnapshot {
  readonly pending: JetStreamTxn[];
  readonly current: JetStreamTxn;
}

/**
 * One attempt of one sink subtask, driven as `TwoPhaseCommitSinkOperator`
 * drives it (see `runtime/api/sink.ts`): open, commit the restored pending
 * transactions, abort the restored open one, begin.
 */
class Attempt {
  readonly sink: JetStreamSink<number>;
  readonly subtask: number;
  readonly parallelism: number;
  current!: JetStreamTxn;
  pending: JetStreamTxn[] = [];

  private constructor(t: TestJetStream, subtask: number, parallelism: number, prefix?: string) {
    this.subtask = subtask;
    this.parallelism = parallelism;
    this.sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: (n) => `${t.stream}.${n % 2 === 0 ? "even" : "odd"}`,
      txnBucket: t.bucket,
      ...(prefix === undefined ? {} : { transactionalIdPrefix: prefix }),
    });
  }

  static async start(
    t: TestJetStream,
    options: { subtask?: number; parallelism?: number; restore?: SinkSnapshot; prefix?: string } =
      {},
  ): Promise<Attempt> {
    const a = new Attempt(t, options.subtask ?? 0, options.parallelism ?? 1, options.prefix);
    const ctx = initContext(a.subtask, a.parallelism);
    await a.sink.open(ctx);
    for (const txn of options.restore?.pending ?? []) await a.sink.commit(txn);
    if (options.restore) await a.sink.abort(options.restore.current);
    a.current = await a.sink.beginTransaction(ctx);
    return a;
  }

  async write(values: number[]): Promise<void> {
    for (const v of values) await this.sink.invoke(this.current, v, NO_TIMESTAMP);
  }

  /** The barrier: pre-commit, begin the next transaction, snapshot (a MessagePack round trip). */
  async checkpoint(): Promise<SinkSnapshot> {
    await this.sink.preCommit(this.current);
    this.pending.push(this.current);
    this.current = await this.sink.beginTransaction(initContext(this.subtask, this.parallelism));
    return decode(encode({ pending: this.pending, current: this.current })) as SinkSnapshot;
  }

  /** The checkpoint completed: commit every pending transaction. */
  async complete(): Promise<void> {
    while (this.pending.length > 0) {
      await this.sink.commit(this.pending[0]!);
      this.pending.shift();
    }
  }

  /** A crash: the connection goes, nothing is aborted. */
  async crash(): Promise<void> {
    await this.sink.close();
  }

  /** A normal end: the open transaction is aborted, then the sink closes. */
  async finish(): Promise<void> {
    await this.sink.abort(this.current);
    await this.sink.close();
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
      await a.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [1, 2, 3]);
    } finally {
      await a.finish();
    }
  });
});

Deno.test("a record carries its transaction in Weir-Txn and a Nats-Msg-Id of <txnId>:<n>", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    const txn = a.current.id;
    try {
      await a.write([4, 5]);
      await a.checkpoint();
      await a.complete();
    } finally {
      await a.finish();
    }
    const seen: string[][] = [];
    for await (
      const r of readCommitted({
        connection: CONNECTION,
        stream: t.stream,
        txnBucket: t.bucket,
        bounded: true,
      })
    ) {
      seen.push([r.subject, r.headers?.get("Weir-Txn") ?? "", r.headers?.get("Nats-Msg-Id") ?? ""]);
    }
    assert.deepEqual(seen, [
      [`${t.stream}.even`, txn, `${txn}:0`],
      [`${t.stream}.odd`, txn, `${txn}:1`],
    ]);
  });
});

Deno.test("aborted records are never visible and do not hold back later commits", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    try {
      await a.write([1, 2]);
      const aborted = a.current;
      await a.sink.abort(aborted);
      await a.sink.abort(aborted); // idempotent
      a.current = await a.sink.beginTransaction(initContext(0, 1));
      await a.write([3]);
      await a.checkpoint();
      await a.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
      await assert.rejects(a.sink.commit(aborted), TransactionStateError);
    } finally {
      await a.finish();
    }
  });
});

Deno.test("commit is idempotent: committing twice shows the records once", async () => {
  await withJetStream(async (t) => {
    const a = await Attempt.start(t);
    try {
      await a.write([7, 8]);
      const txn = a.current;
      await a.checkpoint();
      await a.sink.commit(txn);
      await a.sink.commit(txn);
      await a.sink.abort(txn); // a committed transaction stays committed
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [7, 8]);
    } finally {
      await a.finish();
    }
  });
});

Deno.test("a zombie of an older epoch can neither begin, pre-commit nor commit", async () => {
  await withJetStream(async (t) => {
    const zombie = await Attempt.start(t);
    await zombie.write([1]);
    await zombie.checkpoint(); // its pending transaction: pre-committed, not committed
    await zombie.write([2]);
    const owner = await Attempt.start(t); // the next attempt: a newer epoch
    try {
      const isFenced = (e: unknown) =>
        e instanceof ProducerFencedError && e.epoch === 0 && e.currentEpoch === 1;
      await assert.rejects(zombie.sink.beginTransaction(initContext(0, 1)), isFenced);
      await assert.rejects(zombie.sink.preCommit(zombie.current), isFenced);
      await assert.rejects(zombie.sink.commit(zombie.pending[0]!), isFenced);
      await owner.write([3]);
      await owner.checkpoint();
      await owner.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
    } finally {
      await zombie.crash();
      await owner.finish();
    }
  });
});

Deno.test("open transactions of an older epoch are aborted at the next start, so readers do not stall", async () => {
  await withJetStream(async (t) => {
    const crashed = await Attempt.start(t);
    await crashed.write([1, 2]);
    await crashed.crash(); // its transaction stays open, with records
    const next = await Attempt.start(t);
    try {
      await next.write([3]);
      await next.checkpoint();
      await next.complete();
      // Bounded reads stop at a transaction still open: [3] proves the crashed one was aborted.
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [3]);
    } finally {
      await next.finish();
    }
  });
});

Deno.test("a pre-committed transaction of an older epoch is aborted once the new attempt's first checkpoint completes", async () => {
  await withJetStream(async (t) => {
    const crashed = await Attempt.start(t);
    await crashed.write([1]);
    await crashed.checkpoint(); // pre-committed for a checkpoint that never completes
    await crashed.crash();
    const lingering = crashed.pending[0]!;
    const next = await Attempt.start(t);
    const log = await txnLog(t);
    try {
      assert.equal((await log.getTxn(lingering.id))?.value.state, "open");
      await next.write([2]);
      await next.checkpoint();
      await next.complete();
      assert.equal((await log.getTxn(lingering.id))?.value.state, "aborted");
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [2]);
      const producer = (await log.getProducer(next.current.transactionalId))!.value;
      assert.equal(producer.settledEpoch, producer.epoch, "the older epochs are settled");
    } finally {
      await next.finish();
    }
  });
});

async function txnLog(t: TestJetStream): Promise<TransactionLog> {
  return await TransactionLog.open(t.nc, t.bucket, { create: false });
}

/** The three crash points of the sink's two-phase commit. */
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
        let restored = await first.checkpoint().then(async (s) => {
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
          if (crash === CRASHES[3]) await first.sink.commit(first.pending[0]!);
        }
        await first.crash();
        // Attempt 1 restores and replays what followed the restored checkpoint.
        const second = await Attempt.start(js, { restore: restored });
        try {
          await second.write(range(replayFrom, 12));
          await second.checkpoint();
          await second.complete();
          assert.deepEqual(await readSorted(js.stream, { txnBucket: js.bucket }), range(0, 12));
        } finally {
          await second.finish();
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
    await left.crash();
    await right.crash();
    const only = await Attempt.start(t, { subtask: 0, parallelism: 1 });
    const log = await txnLog(t);
    try {
      await only.write([2]);
      await only.checkpoint();
      await only.complete();
      assert.deepEqual(await readSorted(t.stream, { txnBucket: t.bucket }), [2]);
      assert.equal((await log.getTxn(right.current.id))?.value.state, "aborted");
      const fenced = (await log.getProducer(right.current.transactionalId))!.value;
      assert.equal(fenced.epoch, 1, "the removed subtask's id got a new epoch");
    } finally {
      await only.finish();
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
    const ctx = initContext(0, 1);
    await sink.open(ctx);
    try {
      const txn = await sink.beginTransaction(ctx);
      await assert.rejects(
        (async () => {
          await sink.invoke(txn, 1, NO_TIMESTAMP);
          await sink.preCommit(txn);
        })(),
        (e: Error) =>
          e.message.includes("subject weir-test-nowhere.x of stream") &&
          e.message.includes(t.stream) && e.message.includes("no stream stores the subject"),
      );
      await sink.abort(txn);
    } finally {
      await sink.close();
    }
  });
});

Deno.test("a sink refuses a missing target stream in open, naming it", async () => {
  const sink = new JetStreamSink<number>({
    connection: CONNECTION,
    stream: "weir-test-no-such-stream",
    subject: "x",
  });
  await assert.rejects(
    sink.open(initContext(0, 1)),
    (e: Error) => e.message.includes("weir-test-no-such-stream"),
  );
  await sink.close();
});
