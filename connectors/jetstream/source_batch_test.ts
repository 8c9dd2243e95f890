/**
 * The JetStream source and record batches: every record of a batch is
 * emitted, each with its index; a checkpoint falls only on a message
 * boundary, so a restore neither repeats nor skips records of a batch; a
 * malformed batch fails the job or becomes one dead letter.
 *
 * @module
 */

import assert from "node:assert/strict";
import { headers as natsHeaders } from "../../runtime/actor/nats_deps.ts";
import type { SourceReader } from "../../runtime/api/source.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";
import { deadline } from "../../runtime/actor/async.ts";
import { encodeRecordBatch, RECORD_BATCH_HEADER, RecordBatchError } from "./record_batch.ts";
import {
  JETSTREAM_DEAD_LETTER,
  type JetStreamDeadLetter,
  JetStreamSource,
  type JetStreamSourceOptions,
  type JetStreamSplit,
  type MessageMeta,
} from "./source.ts";
import {
  CONNECTION,
  HandDrivenTransactions,
  publishJson,
  startReader,
  type TestJetStream,
  withJetStream,
} from "./_test_kit.ts";

const encoder = new TextEncoder();

async function publishBatch(t: TestJetStream, subject: string, values: unknown[]): Promise<void> {
  const headers = natsHeaders();
  headers.set(RECORD_BATCH_HEADER, String(values.length));
  const payload = encodeRecordBatch(values.map((v) => encoder.encode(JSON.stringify(v))));
  await t.js.publish(subject, payload, { headers });
}

async function reader<T>(
  options: Partial<JetStreamSourceOptions<T>> & { t: TestJetStream },
  splits?: JetStreamSplit[],
): Promise<SourceReader<T, JetStreamSplit>> {
  const { t, ...rest } = options;
  const src = new JetStreamSource<T>({
    connection: CONNECTION,
    stream: t.stream,
    txnBucket: t.bucket,
    bounded: true,
    ...rest,
  });
  return startReader(src, splits ?? await src.enumerateSplits({ parallelism: 1 }));
}

/** Polls once, waiting (at most 30 s) until something is available. */
async function pollOnce<T>(r: SourceReader<T, JetStreamSplit>, out: RecordingReaderOutput<T>) {
  for (;;) {
    const status = await r.pollNext(out);
    if (status !== "NOTHING_AVAILABLE") return status;
    await deadline(r.isAvailable!(), 30_000, "the reader's next records");
  }
}

async function readAll<T>(r: SourceReader<T, JetStreamSplit>, out: RecordingReaderOutput<T>) {
  while (await pollOnce(r, out) !== "END_OF_INPUT");
}

Deno.test("the source emits every record of a batch, with its index, and plain messages beside them", async () => {
  await withJetStream(async (t) => {
    await publishBatch(t, `${t.stream}.a`, [1, 2, 3]);
    await publishJson(t.js, `${t.stream}.a`, [4]);
    const metas: string[] = [];
    const r = await reader<number>({
      t,
      deserializer: (data: Uint8Array, meta: MessageMeta) => {
        metas.push(`${meta.seq}/${meta.index}`);
        return JSON.parse(new TextDecoder().decode(data));
      },
    });
    const out = new RecordingReaderOutput<number>();
    try {
      await readAll(r, out);
      assert.deepEqual(out.records, [1, 2, 3, 4]);
      assert.deepEqual(metas, ["1/0", "1/1", "1/2", "2/0"]);
    } finally {
      await r.close?.();
    }
  });
});

Deno.test("a checkpoint falls on a message boundary: a restore after a poll smaller than a batch neither repeats nor skips", async () => {
  await withJetStream(async (t) => {
    await publishBatch(t, `${t.stream}.a`, [1, 2, 3, 4, 5]);
    await publishBatch(t, `${t.stream}.a`, [6, 7, 8, 9, 10]);
    const first = await reader<number>({ t, batchSize: 2 });
    const out = new RecordingReaderOutput<number>();
    let snapshot: JetStreamSplit[];
    try {
      await pollOnce(first, out);
      // The whole first batch went out, though batchSize is 2; the offset is its sequence.
      assert.deepEqual(out.records, [1, 2, 3, 4, 5]);
      snapshot = first.snapshotState(1);
      assert.deepEqual(snapshot.map((s) => s.offset), [1]);
    } finally {
      await first.close?.();
    }
    const restored = await reader<number>({ t, batchSize: 2 }, snapshot);
    const after = new RecordingReaderOutput<number>();
    try {
      await readAll(restored, after);
      assert.deepEqual(after.records, [6, 7, 8, 9, 10]);
    } finally {
      await restored.close?.();
    }
  });
});

Deno.test("committed transactional batches are read, aborted ones skipped", async () => {
  await withJetStream(async (t) => {
    const sink = await HandDrivenTransactions.open(t, `${t.stream}.out`);
    try {
      const aborted = await sink.beginTransaction();
      for (const v of [1, 2]) await sink.invoke(aborted, v);
      await sink.preCommit(aborted);
      await sink.abort(aborted);
      const committed = await sink.beginTransaction();
      for (const v of [3, 4, 5]) await sink.invoke(committed, v);
      await sink.preCommit(committed);
      await sink.commit(committed);
    } finally {
      await sink.close();
    }
    const r = await reader<number>({ t });
    const out = new RecordingReaderOutput<number>();
    try {
      await readAll(r, out);
      assert.deepEqual(out.records, [3, 4, 5]);
    } finally {
      await r.close?.();
    }
  });
});

Deno.test("a malformed batch fails the source naming stream, sequence and offset, or becomes one dead letter", async () => {
  await withJetStream(async (t) => {
    const headers = natsHeaders();
    headers.set(RECORD_BATCH_HEADER, "3");
    await t.js.publish(`${t.stream}.bad`, encodeRecordBatch([encoder.encode("1")]), { headers });
    await publishJson(t.js, `${t.stream}.bad`, [2]);
    const failing = await reader<number>({ t });
    try {
      await assert.rejects(
        readAll(failing, new RecordingReaderOutput<number>()),
        (e: unknown) =>
          e instanceof RecordBatchError &&
          e.message.startsWith(`Invalid record batch at sequence 1 of stream ${t.stream}`),
      );
    } finally {
      await failing.close?.();
    }
    const lenient = await reader<number>({ t, onMalformed: "dead-letter" });
    const out = new RecordingReaderOutput<number>();
    try {
      await readAll(lenient, out);
      assert.deepEqual(out.records, [2]);
      assert.equal(out.side.length, 1);
      const [tag, letter] = out.side[0]! as [string, JetStreamDeadLetter];
      assert.equal(tag, JETSTREAM_DEAD_LETTER.id);
      assert.deepEqual([letter.seq, letter.index, letter.data.byteLength], [1, 0, 5]);
      assert.match(letter.error, /cannot hold 3 length prefixes/);
    } finally {
      await lenient.close?.();
    }
  });
});
