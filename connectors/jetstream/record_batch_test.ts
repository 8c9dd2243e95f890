import assert from "node:assert/strict";
import {
  decodeRecordBatch,
  encodeRecordBatch,
  parseBatchCount,
  RecordBatchBuilder,
  RecordBatchError,
} from "./record_batch.ts";

const WHERE = { stream: "orders", seq: 7 };
const text = (records: Uint8Array[]) => records.map((r) => new TextDecoder().decode(r));
const bytes = (s: string) => new TextEncoder().encode(s);

Deno.test("a record batch holds empty and large records in order", () => {
  const big = new Uint8Array(70_000).fill(65);
  const payload = encodeRecordBatch([bytes(""), big, bytes("x")]);
  const records = decodeRecordBatch(payload, "3", WHERE);
  assert.equal(records.length, 3);
  assert.equal(records[0]!.byteLength, 0);
  assert.deepEqual(records[1], big);
  assert.deepEqual(text([records[2]!]), ["x"]);
});

Deno.test("a record batch builder starts an empty batch after finish and grows its buffer", () => {
  const builder = new RecordBatchBuilder(16);
  for (let i = 0; i < 100; i++) builder.add(bytes(`record ${i}`));
  const first = builder.finish();
  assert.equal(builder.count, 0);
  assert.equal(builder.byteLength, 0);
  builder.add(bytes("next"));
  assert.deepEqual(text(decodeRecordBatch(builder.finish(), "1", WHERE)), ["next"]);
  assert.equal(decodeRecordBatch(first, "100", WHERE)[99]!.byteLength, "record 99".length);
  assert.throws(() => builder.finish(), /Cannot finish an empty record batch: current count is 0/);
});

Deno.test("a batch header must be a plain decimal count", () => {
  assert.equal(parseBatchCount("12", WHERE), 12);
  for (const bad of ["0", "-1", "01", " 1", "1.5", "", "abc", "99999999999"]) {
    assert.throws(
      () => parseBatchCount(bad, WHERE),
      (e: unknown) =>
        e instanceof RecordBatchError &&
        e.message.startsWith(
          "Invalid record batch at sequence 7 of stream orders: header Weir-Batch",
        ) &&
        e.message.includes(`current value is ${JSON.stringify(bad)}`),
    );
  }
});

Deno.test("a batch whose count, lengths or size disagree is refused with the offset", () => {
  const payload = encodeRecordBatch([bytes("ab"), bytes("cde")]);
  assert.throws(
    () => decodeRecordBatch(payload, "3", WHERE),
    /record 2 of 3: its length prefix at byte offset 13 runs past/,
  );
  assert.throws(
    () => decodeRecordBatch(payload, "1", WHERE),
    /7 bytes follow the last of its 1 records, at byte offset 6/,
  );
  assert.throws(
    () => decodeRecordBatch(payload.subarray(0, 12), "2", { ...WHERE, subject: "orders.eu" }),
    /^RecordBatchError: Invalid record batch at sequence 7 of stream orders \(subject orders\.eu\): record 1 of 2: its length 3 at byte offset 6 runs past the payload's end \(12 bytes\)/,
  );
  assert.throws(
    () => decodeRecordBatch(new Uint8Array(7), "2", WHERE),
    /cannot hold 2 length prefixes/,
  );
});
