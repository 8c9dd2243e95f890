import assert from "node:assert/strict";
import { decideRetention, type RetentionFacts } from "./retention.ts";

const extent = { txnId: "p.0.1.4", messages: 3, firstSeq: 10, lastSeq: 12 };
const stream = { firstSeq: 1, lastSeq: 20, numDeleted: 0 };
const ours = { first: "p.0.1.4", last: "p.0.1.4" };

function decide(facts: Partial<RetentionFacts>) {
  return decideRetention({ extent, stream, ...facts });
}

Deno.test("a transaction without messages is retained without reading anything", () => {
  assert.deepEqual(decide({ extent: { ...extent, messages: 0, firstSeq: 0, lastSeq: 0 } }), {
    kind: "retained",
  });
});

Deno.test("sequences before the stream's first sequence are reported lost, with the range", () => {
  assert.deepEqual(decide({ stream: { ...stream, firstSeq: 12 } }), {
    kind: "lost",
    missing: "sequences 10..11 of its 10..12 are gone: the stream's first sequence is 12 " +
      "(retention by age, count or bytes, or a purge)",
  });
  assert.equal(decide({ stream: { ...stream, firstSeq: 21 } }).kind, "lost");
  assert.equal(decide({ stream: { ...stream, lastSeq: 11 } }).kind, "lost");
});

Deno.test("the boundary messages are read next, and must belong to the transaction", () => {
  assert.deepEqual(decide({}), { kind: "read-boundaries" });
  assert.deepEqual(decide({ boundaries: { first: "p.0.1.4", last: undefined } }), {
    kind: "read-boundaries",
  });
  assert.deepEqual(decide({ boundaries: { first: null, last: "p.0.1.4" } }), {
    kind: "lost",
    missing: "its message at sequence 10 (of 10..12) is gone",
  });
  assert.deepEqual(decide({ boundaries: { first: "p.0.1.4", last: "" } }), {
    kind: "lost",
    missing: "sequence 12 (of 10..12) holds a message of no transaction, not of this one",
  });
  assert.match(
    JSON.stringify(decide({ boundaries: { first: "q.0.0.0", last: "p.0.1.4" } })),
    /holds a message of transaction q\.0\.0\.0/,
  );
});

Deno.test("without deleted messages in the stream the boundaries suffice; otherwise the deleted list decides", () => {
  assert.deepEqual(decide({ boundaries: ours }), { kind: "retained" });
  const holes = { stream: { ...stream, numDeleted: 2 }, boundaries: ours };
  assert.deepEqual(decide(holes), { kind: "read-deleted" });
  assert.deepEqual(decide({ ...holes, deletedInRange: [] }), { kind: "retained" });
  // Contiguous (3 messages in 10..12): a deleted sequence in the range is its own.
  assert.deepEqual(decide({ ...holes, deletedInRange: [11] }), {
    kind: "lost",
    missing: "sequences 11 of its 10..12 were deleted",
  });
  // Two messages: the boundaries are every message.
  assert.deepEqual(
    decide({ ...holes, extent: { ...extent, messages: 2 }, deletedInRange: [11] }),
    { kind: "retained" },
  );
});

Deno.test("interleaved with other messages, a deleted sequence in the range needs a count", () => {
  const spread = { ...extent, lastSeq: 15 };
  const facts = {
    extent: spread,
    stream: { ...stream, numDeleted: 1 },
    boundaries: ours,
    deletedInRange: [13],
  };
  assert.deepEqual(decide(facts), { kind: "scan" });
  assert.deepEqual(decide({ ...facts, counted: 3 }), { kind: "retained" });
  assert.deepEqual(decide({ ...facts, counted: 2 }), {
    kind: "lost",
    missing: "1 of its 3 messages in 10..15 are gone (deleted sequences in the range: 13)",
  });
});
