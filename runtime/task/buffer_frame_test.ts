import assert from "node:assert/strict";
import { CodecError } from "../actor/codec.ts";
import {
  decodeBufferFrame,
  encodeBufferFrame,
  FRAME_MAGIC,
  isBufferFrame,
} from "./buffer_frame.ts";
import { decodeRecords, encodeRecords } from "./record_codec.ts";
import type { BufferMessage } from "./messages.ts";

const block = encodeRecords([{ key: 1, value: 2.5 }, { key: 2, value: -0 }], [10, null]);

Deno.test("a buffer frame round-trips its header, key groups and records block", async (t) => {
  for (const kg of [undefined, new Uint16Array([5, 127])]) {
    await t.step(kg ? "with key groups" : "without key groups", () => {
      const msg: BufferMessage = kg
        ? { t: "buf", job: "jöb-1", att: 3, edge: 2, src: 1, seq: 2 ** 40, vb: block, kg }
        : { t: "buf", job: "jöb-1", att: 3, edge: 2, src: 1, seq: 7, vb: block };
      const bytes = encodeBufferFrame(msg);
      assert.ok(isBufferFrame(bytes));
      const back = decodeBufferFrame(bytes);
      assert.deepEqual({ ...back, vb: [...back.vb] }, { ...msg, vb: [...block] });
      assert.equal(back.vb.byteOffset % 8, 0, "the records block is 8-byte aligned");
      const records = decodeRecords(back.vb);
      assert.ok(Object.is((records.values[1] as { value: number }).value, -0));
      assert.deepEqual(records.timestamps, [10, null]);
    });
  }
});

Deno.test("a truncated or foreign buffer frame fails with CodecError naming its length", () => {
  const bytes = encodeBufferFrame({
    t: "buf",
    job: "j",
    att: 0,
    edge: 0,
    src: 0,
    seq: 0,
    vb: block,
  });
  assert.throws(() => decodeBufferFrame(bytes.subarray(0, bytes.length - 1)), CodecError);
  assert.throws(() => decodeBufferFrame(bytes.subarray(0, 10)), /of 10 bytes: shorter/);
  const wrong = bytes.slice();
  wrong[1] = 9;
  assert.throws(() => decodeBufferFrame(wrong), /unsupported version 9/);
  assert.equal(FRAME_MAGIC, 0xc1);
  assert.ok(!isBufferFrame(new Uint8Array([0x87])), "a MessagePack map is not a frame");
});
