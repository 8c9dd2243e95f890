/**
 * Fuzz tests of the record batch decoder (`record_batch.ts`): every
 * payload and header gives the records or a {@linkcode RecordBatchError}
 * naming the stream and sequence; encoded batches decode to what went in.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import {
  decodeRecordBatch,
  encodeRecordBatch,
  RECORD_LENGTH_BYTES,
  RecordBatchError,
} from "./record_batch.ts";

const WHERE = { stream: "fuzzed", seq: 42, subject: "fuzzed.a" };

function checkDecodes(payload: Uint8Array, header: string): void {
  let records: Uint8Array[];
  try {
    records = decodeRecordBatch(payload, header, WHERE);
  } catch (error) {
    assert.ok(error instanceof RecordBatchError, `not a RecordBatchError: ${error}`);
    assert.match(
      error.message,
      /^Invalid record batch at sequence 42 of stream fuzzed \(subject fuzzed\.a\): /,
    );
    return;
  }
  // A value: exactly the header's count, covering the payload exactly.
  assert.equal(String(records.length), header);
  const covered = records.reduce((n, r) => n + RECORD_LENGTH_BYTES + r.byteLength, 0);
  assert.equal(covered, payload.byteLength);
}

Deno.test("record batch decoder fuzz: any payload and header give records or a RecordBatchError naming where", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 64 }),
      fc.oneof(fc.string({ maxLength: 12 }), fc.nat({ max: 20 }).map(String)),
      (payload, header) => checkDecodes(payload, header),
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("record batch decoder fuzz: a valid batch with flipped, cut or extended bytes gives records or a RecordBatchError", () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 20 }), { minLength: 1, maxLength: 8 }),
      fc.nat(),
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom("flip", "cut", "extend", "count+1", "count-1"),
      (records, at, byte, damage) => {
        const payload = encodeRecordBatch(records);
        let header = String(records.length);
        let damaged = payload;
        const i = at % payload.byteLength;
        if (damage === "flip") {
          damaged = payload.slice();
          damaged[i] = byte;
        } else if (damage === "cut") damaged = payload.subarray(0, i);
        else if (damage === "extend") damaged = new Uint8Array([...payload, byte]);
        else if (damage === "count+1") header = String(records.length + 1);
        else header = String(records.length - 1);
        checkDecodes(damaged, header);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("record batch fuzz: every encoded batch decodes to its records", () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 50 }),
      (records) => {
        const decoded = decodeRecordBatch(
          encodeRecordBatch(records),
          String(records.length),
          WHERE,
        );
        assert.deepEqual(decoded.map((r) => [...r]), records.map((r) => [...r]));
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
