import assert from "node:assert/strict";
import { headers as natsHeaders } from "../../runtime/actor/nats_deps.ts";
import { encodeRecordBatch, RECORD_BATCH_HEADER, RecordBatchError } from "./record_batch.ts";
import { printableValue, readCommitted, runReadCommand } from "./reader.ts";
import {
  CONNECTION,
  HandDrivenTransactions,
  initContext,
  publishJson,
  readJson,
  type TestJetStream,
  withJetStream,
} from "./_test_kit.ts";

const NO_TIMESTAMP = { timestamp: undefined };

/** Hand-driven transactions on the test stream, writing to `<stream>.out`. */
async function openSink(t: TestJetStream): Promise<HandDrivenTransactions> {
  return await HandDrivenTransactions.open(t, `${t.stream}.out`);
}

Deno.test("runReadCommand prints JSON lines, every record by default and only committed ones with committed", async () => {
  await withJetStream(async (t) => {
    const sink = await openSink(t);
    try {
      await publishJson(t.js, `${t.stream}.plain`, [{ n: 1 }]);
      const open = await sink.beginTransaction(initContext(0, 1));
      await sink.invoke(open, "pending", NO_TIMESTAMP);
      await sink.preCommit(open);
      await t.js.publish(`${t.stream}.plain`, new TextEncoder().encode("not json"));
      const lines: string[] = [];
      const options = { nats: CONNECTION.servers, stream: t.stream, txnBucket: t.bucket };
      assert.equal(await runReadCommand(options, (line) => void lines.push(line)), 3);
      assert.deepEqual(lines, [
        `{"seq":1,"subject":"${t.stream}.plain","value":{"n":1}}`,
        `{"seq":2,"index":0,"subject":"${t.stream}.out","value":"pending"}`,
        `{"seq":3,"subject":"${t.stream}.plain","value":"not json"}`,
      ]);
      lines.length = 0;
      // Read committed stops at the open transaction: the last stable offset.
      assert.equal(
        await runReadCommand({ ...options, committed: true }, (l) => void lines.push(l)),
        1,
      );
      assert.deepEqual(lines, [`{"seq":1,"subject":"${t.stream}.plain","value":{"n":1}}`]);
      await sink.commit(open);
      lines.length = 0;
      assert.equal(
        await runReadCommand({ ...options, committed: true, from: 2 }, (l) => void lines.push(l)),
        2,
      );
      assert.deepEqual(lines.map((l) => JSON.parse(l).seq), [2, 3]);
    } finally {
      await sink.close();
    }
  });
});

Deno.test("an unbounded read-committed reader delivers a transaction's records when it commits", async () => {
  await withJetStream(async (t) => {
    const sink = await openSink(t);
    const ctx = initContext(0, 1);
    const records = readCommitted({
      connection: CONNECTION,
      stream: t.stream,
      txnBucket: t.bucket,
    });
    try {
      const txn = await sink.beginTransaction(ctx);
      await sink.invoke(txn, "a", NO_TIMESTAMP);
      await sink.invoke(txn, "b", NO_TIMESTAMP);
      await sink.preCommit(txn);
      await publishJson(t.js, `${t.stream}.plain`, ["c"]);
      const first = records.next();
      await sink.commit(txn);
      const values = [await first, await records.next(), await records.next()].map((r) =>
        r.done ? undefined : JSON.parse(new TextDecoder().decode(r.value.data))
      );
      assert.deepEqual(values, ["a", "b", "c"]);
    } finally {
      await records.return(undefined);
      await sink.close();
    }
  });
});

Deno.test("a record whose transaction has no state fails the read, naming the key and the bucket", async () => {
  await withJetStream(async (t) => {
    await openSink(t).then((s) => s.close()); // creates the bucket
    const h = natsHeaders();
    h.set("Weir-Txn", "ghost.0.0.0");
    await t.js.publish(`${t.stream}.x`, new TextEncoder().encode("1"), { headers: h });
    await assert.rejects(
      readJson(t.stream, { txnBucket: t.bucket }),
      (e: Error) =>
        e.message.includes("txn.ghost.0.0.0") && e.message.includes(t.bucket) &&
        e.message.includes("sequence 1"),
    );
    assert.deepEqual(
      await readJson(t.stream, { txnBucket: t.bucket, isolation: "read_uncommitted" }),
      [1],
    );
  });
});

Deno.test("a filtered read delivers only the subject's records", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1]);
    await publishJson(t.js, `${t.stream}.b`, [2]);
    await publishJson(t.js, `${t.stream}.a`, [3]);
    assert.deepEqual(await readJson(t.stream, { filterSubject: `${t.stream}.a` }), [1, 3]);
    assert.deepEqual(await readJson(t.stream, { fromSequence: 4 }), []);
  });
});

Deno.test("reading a missing stream fails, naming it", async () => {
  await assert.rejects(readJson("weir-test-no-such-stream"), /weir-test-no-such-stream/);
});

Deno.test("printableValue parses JSON, else gives the text", () => {
  const bytes = (s: string) => new TextEncoder().encode(s);
  assert.deepEqual(printableValue(bytes('{"a":[1]}')), { a: [1] });
  assert.equal(printableValue(bytes("plain")), "plain");
  assert.equal(printableValue(new Uint8Array([0x61, 0xff])), "a\ufffd");
});

Deno.test("runReadCommand unpacks a record batch into one line per record, with its index", async () => {
  await withJetStream(async (t) => {
    const headers = natsHeaders();
    headers.set(RECORD_BATCH_HEADER, "3");
    const encoder = new TextEncoder();
    const payload = encodeRecordBatch(
      [{ n: 1 }, "two", { n: 3 }].map((v) => encoder.encode(JSON.stringify(v))),
    );
    await t.js.publish(`${t.stream}.batch`, payload, { headers });
    await publishJson(t.js, `${t.stream}.plain`, [{ n: 4 }]);
    const lines: string[] = [];
    const options = { nats: CONNECTION.servers, stream: t.stream, txnBucket: t.bucket };
    assert.equal(await runReadCommand(options, (line) => void lines.push(line)), 4);
    assert.deepEqual(lines, [
      `{"seq":1,"index":0,"subject":"${t.stream}.batch","value":{"n":1}}`,
      `{"seq":1,"index":1,"subject":"${t.stream}.batch","value":"two"}`,
      `{"seq":1,"index":2,"subject":"${t.stream}.batch","value":{"n":3}}`,
      `{"seq":2,"subject":"${t.stream}.plain","value":{"n":4}}`,
    ]);
  });
});

Deno.test("a malformed record batch fails the read, naming the stream, sequence and byte offset", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.plain`, [1]);
    const headers = natsHeaders();
    headers.set(RECORD_BATCH_HEADER, "2");
    await t.js.publish(`${t.stream}.bad`, encodeRecordBatch([new Uint8Array(10)]), { headers });
    const lines: string[] = [];
    await assert.rejects(
      runReadCommand({ nats: CONNECTION.servers, stream: t.stream }, (l) => void lines.push(l)),
      (e: unknown) =>
        e instanceof RecordBatchError &&
        e.message ===
          `Invalid record batch at sequence 2 of stream ${t.stream} (subject ${t.stream}.bad): ` +
            `record 1 of 2: its length prefix at byte offset 14 runs past the payload's end (14 bytes)`,
    );
    assert.deepEqual(lines, [`{"seq":1,"subject":"${t.stream}.plain","value":1}`]);
  });
});

Deno.test("a read of more batch payload than the feed buffers (16 MiB) pauses and resumes without losing a record", async () => {
  await withJetStream(async (t) => {
    const record = new Uint8Array(1000);
    const perMessage = 900;
    const messages = 24; // ~21 MiB in all
    for (let m = 0; m < messages; m++) {
      const headers = natsHeaders();
      headers.set(RECORD_BATCH_HEADER, String(perMessage));
      const records = Array.from({ length: perMessage }, (_, i) => {
        const r = record.slice();
        new DataView(r.buffer).setUint32(0, m * perMessage + i);
        return r;
      });
      await t.js.publish(`${t.stream}.big`, encodeRecordBatch(records), { headers });
    }
    let expected = 0;
    for await (
      const r of readCommitted({ connection: CONNECTION, stream: t.stream, bounded: true })
    ) {
      const n = new DataView(r.data.buffer, r.data.byteOffset).getUint32(0);
      if (n !== expected) assert.fail(`record ${expected} expected, ${n} read (sequence ${r.seq})`);
      expected++;
    }
    assert.equal(expected, messages * perMessage);
  });
});
