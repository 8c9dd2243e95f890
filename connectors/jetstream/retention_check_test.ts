/**
 * A commit never hides loss: a transaction whose messages left the stream
 * (purge, max_msgs retention, deleted messages) fails its commit, also the
 * commit at restore, with a TransactionLostError (no restarts) naming the
 * stream, the sequences and the transaction.
 *
 * @module
 */

import assert from "node:assert/strict";
import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { type JetStreamTxn, TransactionalProducer } from "./producer.ts";
import { TransactionLostError } from "./retention_check.ts";
import { commitTransaction } from "./committer.ts";
import { TransactionLog } from "./transactions.ts";
import { readJson, type TestJetStream, withJetStream } from "./_test_kit.ts";

const encoder = new TextEncoder();

/** A producer of subtask 0 of 1; `maxBatchBytes: 1` puts every record in its own message. */
async function producer(t: TestJetStream, attempt = 0): Promise<TransactionalProducer> {
  return await TransactionalProducer.init({
    nc: t.nc,
    log: await TransactionLog.open(t.nc, t.bucket, { create: true }),
    stream: t.stream,
    prefix: "loss",
    subtask: 0,
    parallelism: 1,
    jobId: "retention-test",
    attempt,
    maxInFlight: 100,
    maxBatchBytes: 1,
  });
}

/** Begins a transaction, sends `values` (one message each), pre-commits. */
async function preCommitted(p: TransactionalProducer, t: TestJetStream, values: number[]) {
  const txn = await p.begin();
  for (const v of values) await p.send(txn, `${t.stream}.out`, encoder.encode(String(v)));
  await p.preCommit(txn);
  return txn;
}

/** Commits `txn` as the committer does (retention check, then open → committed). */
async function commit(t: TestJetStream, txn: JetStreamTxn): Promise<void> {
  await commitTransaction({
    log: await TransactionLog.open(t.nc, t.bucket, { create: false }),
    jsm: await jetstreamApi.jetstreamManager(t.nc),
    js: t.js,
    stream: t.stream,
  }, txn);
}

function lost(t: TestJetStream, txn: JetStreamTxn, missing: string) {
  return (e: unknown) =>
    e instanceof TransactionLostError && e instanceof SuppressRestartsError &&
    e.message ===
      `Cannot commit transaction ${txn.id} of stream ${t.stream}: ${missing}; ` +
        `its ${txn.records} pre-committed records cannot all become visible`;
}

Deno.test("a commit after the stream was purged fails without restarts, naming stream, sequences and transaction", async () => {
  await withJetStream(async (t) => {
    const p = await producer(t);
    try {
      const txn = await preCommitted(p, t, [1, 2, 3]);
      await (await jetstreamApi.jetstreamManager(t.nc)).streams.purge(t.stream);
      await assert.rejects(
        commit(t, txn),
        lost(
          t,
          txn,
          "sequences 1..3 of its 1..3 are gone: the stream's first sequence is 4 " +
            "(retention by age, count or bytes, or a purge)",
        ),
      );
    } finally {
      await p.close();
    }
  });
});

Deno.test("a commit whose first messages max_msgs retention removed fails, and so does the commit at restore", async () => {
  await withJetStream(async (t) => {
    const first = await producer(t);
    const txn = await preCommitted(first, t, [1, 2, 3, 4, 5]);
    await first.close(); // a crash after pre-commit: the restore commits it
    const next = await producer(t, 1);
    try {
      await assert.rejects(
        commit(t, txn),
        lost(
          t,
          txn,
          "sequences 1..2 of its 1..5 are gone: the stream's first sequence is 3 " +
            "(retention by age, count or bytes, or a purge)",
        ),
      );
    } finally {
      await next.close();
    }
  }, { max_msgs: 3 });
});

Deno.test("a deleted message inside a transaction fails its commit; another writer's deleted message does not", async () => {
  await withJetStream(async (t) => {
    const jsm = await jetstreamApi.jetstreamManager(t.nc);
    const p = await producer(t);
    try {
      // Contiguous: sequences 1..3 are the transaction's; 2 is deleted.
      const contiguous = await preCommitted(p, t, [1, 2, 3]);
      await jsm.streams.deleteMessage(t.stream, 2);
      await assert.rejects(
        commit(t, contiguous),
        lost(t, contiguous, "sequences 2 of its 1..3 were deleted"),
      );
      await p.abort(contiguous);
      // Interleaved with plain messages: 4 (txn), 5 (plain), 6 (txn), 7 (plain), 8 (txn).
      const txn = await p.begin();
      for (const v of [10, 11, 12]) {
        await p.send(txn, `${t.stream}.out`, encoder.encode(String(v)));
        await p.flush();
        if (v < 12) await t.js.publish(`${t.stream}.plain`, encoder.encode(`"plain ${v}"`));
      }
      await p.preCommit(txn);
      assert.deepEqual([txn.firstSeq, txn.lastSeq, txn.messages], [4, 8, 3]);
      await jsm.streams.deleteMessage(t.stream, 5); // another writer's message
      await commit(t, txn);
      assert.deepEqual(await readJson(t.stream, { txnBucket: t.bucket, fromSequence: 4 }), [
        10,
        11,
        "plain 11",
        12,
      ]);
      const later = await p.begin();
      for (const v of [20, 21, 22]) {
        await p.send(later, `${t.stream}.out`, encoder.encode(String(v)));
        await p.flush();
        await t.js.publish(`${t.stream}.plain`, encoder.encode(`"plain ${v}"`));
      }
      await p.preCommit(later); // 9, 11, 13 are its messages
      await jsm.streams.deleteMessage(t.stream, 11);
      await assert.rejects(
        commit(t, later),
        lost(
          t,
          later,
          "1 of its 3 messages in 9..13 are gone (deleted sequences in the range: 11)",
        ),
      );
    } finally {
      await p.close();
    }
  });
});
