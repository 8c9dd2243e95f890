/**
 * Fuzz tests of the CollectingSink's checkpointed transaction check: any
 * value read back from a checkpoint (through the MessagePack codec) gives a
 * transaction whose fields have their types, or a SinkStateError naming the
 * field and the value.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { CollectingSink } from "./collecting_sink.ts";

const sink = new CollectingSink<unknown>();

function checkAny(raw: unknown): void {
  for (const check of [sink.checkCommittable, sink.checkWriterState]) {
    let txn;
    try {
      txn = check.call(sink, raw);
    } catch (error) {
      assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
      assert.match(
        error.message,
        /^Invalid CollectingSink transaction in checkpoint: (it must be an object|field '(id|subtask|records)'.* must be .*: current value is )/,
      );
      continue;
    }
    assert.equal(typeof txn.id, "string");
    assert.ok(Number.isSafeInteger(txn.subtask) && txn.subtask >= 0);
    assert.ok(Array.isArray(txn.records));
  }
}

Deno.test("CollectingSink transaction fuzz: any checkpointed value is a transaction or a named SinkStateError", () => {
  const txnLike = fc.record({
    id: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null)),
    subtask: fc.oneof(fc.nat({ max: 4 }), fc.constantFrom(-1, 0.5, NaN, "1")),
    records: fc.oneof(fc.array(fc.anything(), { maxLength: 3 }), fc.anything()),
  }, { requiredKeys: [] });
  fc.assert(
    fc.property(fc.oneof(txnLike, fc.anything()), (value) => {
      checkAny(decode(encode(value)));
    }),
    { numRuns: fuzzRuns() },
  );
});
