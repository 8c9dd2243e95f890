/**
 * Fuzz tests of the JetStream sink's committable check: any value read
 * back from a checkpoint gives a committable whose fields agree, or a
 * SinkStateError naming the field and the value.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { checkJetStreamCommittable } from "./committable.ts";
import { parseTxnId } from "./protocol.ts";

function checkAny(raw: unknown): void {
  let txn;
  try {
    txn = checkJetStreamCommittable(raw);
  } catch (error) {
    assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
    assert.match(error.message, /^Invalid JetStream sink committable in checkpoint: \S/);
    return;
  }
  const parts = parseTxnId(txn.id)!;
  assert.equal(txn.transactionalId, parts.transactionalId);
  assert.equal(txn.epoch, parts.epoch);
  assert.ok(txn.messages <= txn.records);
  assert.ok(txn.messages === 0 ? txn.lastSeq === 0 : txn.firstSeq <= txn.lastSeq);
}

const count = fc.oneof(
  fc.nat({ max: 20 }),
  fc.constantFrom(-1, 0.5, Number.MAX_SAFE_INTEGER + 2, NaN),
  fc.string({ maxLength: 3 }),
);
const txnLike = fc.record({
  id: fc.oneof(
    fc.constantFrom("out.0.1.2", "a=2Fb.c.3.0.9", "x.1.2", "out.0.1.2.", ""),
    fc.string({ maxLength: 12 }),
  ),
  transactionalId: fc.constantFrom("out.0", "a=2Fb.c.3", "x", 7),
  epoch: count,
  records: count,
  messages: count,
  firstSeq: count,
  lastSeq: count,
}, { requiredKeys: [] });

Deno.test("JetStream committable fuzz: any value gives a consistent committable or a SinkStateError", () => {
  fc.assert(
    fc.property(fc.oneof(txnLike, fc.anything()), (raw) => checkAny(raw)),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("JetStream committable fuzz: valid committables survive a MessagePack round trip unchanged", () => {
  fc.assert(
    fc.property(
      fc.nat({ max: 1000 }),
      fc.nat({ max: 50 }),
      fc.nat({ max: 1000 }),
      fc.nat({ max: 10_000 }),
      fc.nat({ max: 100 }),
      (epoch, counter, first, records, gaps) => {
        const messages = Math.min(records, 1 + (first % 7));
        const txn = {
          id: `out.3.${epoch}.${counter}`,
          transactionalId: "out.3",
          epoch,
          records,
          messages: records === 0 ? 0 : messages,
          firstSeq: records === 0 ? 0 : first + 1,
          lastSeq: records === 0 ? 0 : first + messages + gaps,
        };
        assert.deepEqual(checkJetStreamCommittable(decode(encode(txn))), txn);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
