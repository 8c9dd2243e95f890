/**
 * Breaker regressions for the issue-9 sinks (JetStream transactional and
 * plain writers): each test failed before its fix.
 *
 * @module
 */

import assert from "node:assert/strict";
import { JetStreamSink } from "../connectors/jetstream/sink.ts";
import { CONNECTION, initContext, withJetStream } from "../connectors/jetstream/_test_kit.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { PlainWriter } from "../connectors/jetstream/plain_writer.ts";
import { TransactionalProducer } from "../connectors/jetstream/producer.ts";
import { TransactionLog } from "../connectors/jetstream/transactions.ts";
import { MAX_BATCH_BYTES_LIMIT } from "../connectors/jetstream/sink.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi, kvApi } from "../runtime/actor/nats_deps.ts";
import type { DeliveryGuarantee } from "../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../runtime/failure.ts";

const NO_TIMESTAMP = { timestamp: undefined };

/** "an exactly-once sink", "an at-least-once sink", "a sink with guarantee none". */
function sinkName(guarantee: DeliveryGuarantee): string {
  return guarantee === "none" ? "a sink with guarantee none" : `an ${guarantee} sink`;
}

/** A record of `bytes` bytes whose first 4 bytes are `id` (big-endian), the rest `id & 0xff`. */
function bigRecord(id: number, bytes: number): Uint8Array {
  const record = new Uint8Array(bytes).fill(id & 0xff);
  new DataView(record.buffer).setUint32(0, id);
  return record;
}

/** Record sizes near the server's max_payload (1 MiB): each fits alone in a message, two never do. */
const SIZES = [
  100 * 1024,
  1000 * 1024,
  900 * 1024,
  120 * 1024,
  1000 * 1024,
  600 * 1024,
  600 * 1024,
];

for (const guarantee of ["exactly-once", "at-least-once"] as DeliveryGuarantee[]) {
  Deno.test(`${sinkName(guarantee)} publishes records near max_payload, which fit one per message, without exceeding max_payload in a batch`, async () => {
    await withJetStream(async (t) => {
      const sink = new JetStreamSink<{ id: number; bytes: number }>({
        connection: CONNECTION,
        stream: t.stream,
        subject: `${t.stream}.big`,
        txnBucket: t.bucket,
        deliveryGuarantee: guarantee,
        serializer: (r) => bigRecord(r.id, r.bytes),
      });
      const ctx = { ...initContext(0, 1), restoredCheckpointId: undefined };
      const committer = await sink.createCommitter?.(ctx);
      const writer = await sink.createWriter({
        ...ctx,
        restoredState: [],
        checkpointingMode: guarantee,
      });
      try {
        for (const [id, bytes] of SIZES.entries()) await writer.write({ id, bytes }, NO_TIMESTAMP);
        await writer.flush(false);
        const committables = await writer.prepareCommit?.(1) ?? [];
        if (committer) {
          const errors: Error[] = [];
          await committer.commit(committables.map((committable) => ({
            committable,
            checkpointId: 1,
            numberOfRetries: 0,
            signalFailedWithKnownReason: (e) => errors.push(e),
            signalFailedWithUnknownReason: (e) => errors.push(e),
            retryLater: () => errors.push(new Error("retry later")),
            updateAndRetryLater: () => errors.push(new Error("retry later")),
            signalAlreadyCommitted: () => {},
          })));
          assert.deepEqual(errors, []);
        }
      } finally {
        await writer.close();
        await committer?.close();
      }
      const read: [number, number][] = [];
      for await (
        const r of readCommitted({
          connection: CONNECTION,
          stream: t.stream,
          bounded: true,
          txnBucket: t.bucket,
        })
      ) {
        const id = new DataView(r.data.buffer, r.data.byteOffset).getUint32(0);
        assert.ok(r.data.every((b, i) => i < 4 || b === (id & 0xff)), `record ${id} intact`);
        read.push([id, r.data.byteLength]);
      }
      assert.deepEqual(read, [...SIZES.entries()]);
    });
  });
}

/** 24 records of 500 KiB with batches of up to 960 KiB: every second record cuts the batch before it. */
const HALF_MIB_RECORDS = 24;

Deno.test("a transactional producer keeps its acknowledgement window when records near half of max_payload cut every batch", async () => {
  await withJetStream(async (t) => {
    const nc = await connectNats(CONNECTION);
    const log = await TransactionLog.open(nc, t.bucket, { create: true });
    const producer = await TransactionalProducer.init({
      nc,
      log,
      stream: t.stream,
      prefix: "window",
      subtask: 0,
      parallelism: 1,
      jobId: "breaker-sinks",
      attempt: 0,
      maxInFlight: 2,
      maxBatchBytes: MAX_BATCH_BYTES_LIMIT,
    });
    try {
      const txn = await producer.begin();
      let waits = 0;
      for (let id = 0; id < HALF_MIB_RECORDS; id++) {
        const pending = producer.send(txn, `${t.stream}.w`, bigRecord(id, 500 * 1024));
        if (pending !== undefined) {
          waits++;
          await pending;
        }
      }
      await producer.preCommit(txn);
      assert.equal(txn.messages, HALF_MIB_RECORDS, "one record per message");
      assert.ok(waits > 0, "send must wait while 2 messages await their acknowledgement");
    } finally {
      await producer.close();
      await nc.close();
    }
  });
});

Deno.test("an at-least-once plain writer keeps its acknowledgement window when records near half of max_payload cut every batch", async () => {
  await withJetStream(async (t) => {
    const nc = await connectNats(CONNECTION);
    const writer = new PlainWriter<number>({
      nc,
      guarantee: "at-least-once",
      stream: t.stream,
      subject: `${t.stream}.w`,
      serializer: (id) => bigRecord(id, 500 * 1024),
      maxBatchBytes: MAX_BATCH_BYTES_LIMIT,
      lingerMs: 60_000,
      maxInFlight: 2,
      writerId: "breaker-window",
    });
    let waits = 0;
    try {
      for (let id = 0; id < HALF_MIB_RECORDS; id++) {
        const pending = writer.write(id, NO_TIMESTAMP);
        if (pending !== undefined) {
          waits++;
          await pending;
        }
      }
      await writer.flush(false);
    } finally {
      await writer.close();
    }
    assert.ok(waits > 0, "write must wait while 2 messages await their acknowledgement");
    const ids: number[] = [];
    for await (
      const r of readCommitted({ connection: CONNECTION, stream: t.stream, bounded: true })
    ) ids.push(new DataView(r.data.buffer, r.data.byteOffset).getUint32(0));
    assert.deepEqual(ids, Array.from({ length: HALF_MIB_RECORDS }, (_, i) => i));
  });
});

/** One fresh exactly-once run of a JSON sink into `t`: writes `values`, pre-commits and commits them. */
async function runOnce(
  t: { stream: string; bucket: string },
  values: readonly number[],
): Promise<readonly Error[]> {
  const sink = new JetStreamSink<number>({
    connection: CONNECTION,
    stream: t.stream,
    subject: `${t.stream}.n`,
    txnBucket: t.bucket,
    transactionalIdPrefix: "rerun",
  });
  const ctx = { ...initContext(0, 1), restoredCheckpointId: undefined };
  const committer = await sink.createCommitter!(ctx);
  const errors: Error[] = [];
  try {
    const writer = await sink.createWriter({
      ...ctx,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    try {
      for (const v of values) await writer.write(v, NO_TIMESTAMP);
      await writer.flush(false);
      const committables = await writer.prepareCommit!(1);
      await committer.commit(committables.map((committable) => ({
        committable,
        checkpointId: 1,
        numberOfRetries: 0,
        signalFailedWithKnownReason: (e) => errors.push(e),
        signalFailedWithUnknownReason: (e) => errors.push(e),
        retryLater: () => errors.push(new Error("retry later")),
        updateAndRetryLater: () => errors.push(new Error("retry later")),
        signalAlreadyCommitted: () => errors.push(new Error("already committed")),
      })));
    } finally {
      await writer.close();
    }
  } catch (error) {
    errors.push(error as Error);
  } finally {
    await committer.close();
  }
  return errors;
}

Deno.test("a rerun whose transaction log was deleted within the duplicate window never commits the earlier run's messages as its own", async () => {
  await withJetStream(async (t) => {
    assert.deepEqual(await runOnce(t, [1, 2, 3]), []);
    const jsm = await jetstreamApi.jetstreamManager(t.nc);
    await jsm.streams.delete(`KV_${t.bucket}`);
    const errors = await runOnce(t, [4, 5, 6]);
    const read: number[] = [];
    for await (
      const r of readCommitted({
        connection: CONNECTION,
        stream: t.stream,
        bounded: true,
        txnBucket: t.bucket,
        isolation: "read_uncommitted",
      })
    ) read.push(JSON.parse(new TextDecoder().decode(r.data)));
    // Either the rerun's records are stored, or the rerun fails naming the reused message ids.
    if (errors.length === 0) assert.deepEqual(read, [1, 2, 3, 4, 5, 6]);
    else {
      assert.match(
        errors[0]!.message,
        /already stores a message with Nats-Msg-Id .* deleted or expired/,
      );
    }
  });
});

for (const gone of ["bucket", "key"] as const) {
  Deno.test(`a read-committed read of records whose transaction state is gone (its ${gone} deleted) fails naming stream, sequence and transaction`, async () => {
    await withJetStream(async (t) => {
      assert.deepEqual(await runOnce(t, [1, 2, 3]), []);
      if (gone === "bucket") {
        await (await jetstreamApi.jetstreamManager(t.nc)).streams.delete(`KV_${t.bucket}`);
      } else {
        const kv = await new kvApi.Kvm(t.nc).open(t.bucket);
        // The committed transaction is the first; the second is the one begun after it (aborted at close).
        await kv.purge("txn.rerun.0.0.0");
      }
      const read: number[] = [];
      await assert.rejects(
        async () => {
          for await (
            const r of readCommitted({
              connection: CONNECTION,
              stream: t.stream,
              bounded: true,
              txnBucket: t.bucket,
            })
          ) read.push(JSON.parse(new TextDecoder().decode(r.data)));
        },
        (error: Error) => {
          assert.match(error.message, /transaction rerun\.0\.\d+\.0 of sequence 1 in stream/);
          assert.match(error.message, new RegExp(t.stream));
          return true;
        },
      );
      assert.deepEqual(read, []);
    });
  });
}

for (const guarantee of ["exactly-once", "at-least-once", "none"] as DeliveryGuarantee[]) {
  Deno.test(`${sinkName(guarantee)} fails without restarts, naming subject, stream and sizes, for a record larger than max_payload`, async () => {
    await withJetStream(async (t) => {
      const sink = new JetStreamSink<{ id: number; bytes: number }>({
        connection: CONNECTION,
        stream: t.stream,
        subject: `${t.stream}.huge`,
        txnBucket: t.bucket,
        deliveryGuarantee: guarantee,
        serializer: (r) => bigRecord(r.id, r.bytes),
      });
      const ctx = { ...initContext(0, 1), restoredCheckpointId: undefined };
      const writer = await sink.createWriter({
        ...ctx,
        restoredState: [],
        checkpointingMode: guarantee,
      });
      try {
        await assert.rejects(
          async () => {
            await writer.write({ id: 1, bytes: 10 }, NO_TIMESTAMP);
            await writer.write({ id: 2, bytes: 1100 * 1024 }, NO_TIMESTAMP);
            await writer.flush(false);
          },
          (error: Error) => {
            let e: unknown = error;
            while (e instanceof Error && !(e instanceof SuppressRestartsError)) e = e.cause;
            assert.ok(e instanceof SuppressRestartsError, `${error.stack}`);
            assert.match(
              e.message,
              new RegExp(
                `record of ${
                  1100 * 1024
                } bytes for subject ${t.stream}\\.huge of stream ${t.stream} .*max_payload is 1048576`,
              ),
            );
            return true;
          },
        );
      } finally {
        await writer.close();
      }
    });
  });
}

Deno.test("an exactly-once sink refuses a target stream whose duplicate_window is shorter than its publish retries, once; at-least-once accepts it", async () => {
  await withJetStream(async (t) => {
    const open = (guarantee: DeliveryGuarantee) =>
      new JetStreamSink<number>({
        connection: CONNECTION,
        stream: t.stream,
        subject: `${t.stream}.n`,
        txnBucket: t.bucket,
        deliveryGuarantee: guarantee,
      }).createWriter({
        ...initContext(0, 1),
        restoredCheckpointId: undefined,
        restoredState: [],
        checkpointingMode: guarantee,
      });
    await assert.rejects(
      () => open("exactly-once"),
      (error: Error) => {
        assert.ok(error instanceof SuppressRestartsError, `${error.stack}`);
        assert.match(
          error.message,
          new RegExp(
            `duplicate_window of stream ${t.stream} must be at least 15000 ms .*current value is 1000 ms`,
          ),
        );
        return true;
      },
    );
    await (await open("at-least-once")).close();
  }, { duplicate_window: 1_000_000_000 });
});
