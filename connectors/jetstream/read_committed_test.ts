import assert from "node:assert/strict";
import { ReadCommittedBuffer, type Step } from "./read_committed.ts";
import { TransactionStateError } from "./protocol.ts";

interface Rec {
  readonly seq: number;
  readonly txn: string | undefined;
}

const A = "p.0.0.0";
const B = "p.1.0.0";

/** Drains the buffer: the sequences delivered, then what stopped it. */
function drain(buffer: ReadCommittedBuffer<Rec>): { delivered: number[]; stop: Step<Rec> } {
  const delivered: number[] = [];
  for (;;) {
    const step = buffer.next();
    if (step.kind === "deliver") delivered.push(step.record.seq);
    else if (step.kind !== "skip") return { delivered, stop: step };
  }
}

function feed(buffer: ReadCommittedBuffer<Rec>, records: [number, string | undefined][]): string[] {
  const lookups: string[] = [];
  for (const [seq, txn] of records) {
    const lookup = buffer.push({ seq, txn });
    if (lookup !== undefined) lookups.push(lookup);
  }
  return lookups;
}

Deno.test("a record of an open transaction blocks every later record", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  feed(buffer, [[1, undefined], [2, A], [3, undefined], [4, B]]);
  buffer.setState(A, "open");
  buffer.setState(B, "committed");
  const { delivered, stop } = drain(buffer);
  assert.deepEqual(delivered, [1]);
  assert.deepEqual(stop, { kind: "blocked", txn: A, state: "open" });
  assert.equal(buffer.size, 3);
});

Deno.test("a record whose transaction state is unknown blocks, and asks for one lookup", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  const lookups = feed(buffer, [[1, A], [2, A], [3, undefined]]);
  assert.deepEqual(lookups, [A]);
  assert.deepEqual(buffer.next(), { kind: "blocked", txn: A, state: "unknown" });
  assert.equal(buffer.stateOf(A), "unknown");
});

Deno.test("a commit releases the blocked records in stream order", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  feed(buffer, [[1, A], [2, undefined], [3, A], [5, undefined]]);
  buffer.setState(A, "open");
  assert.deepEqual(drain(buffer).delivered, []);
  assert.equal(buffer.setState(A, "committed"), true);
  const { delivered, stop } = drain(buffer);
  assert.deepEqual(delivered, [1, 2, 3, 5]);
  assert.deepEqual(stop, { kind: "empty" });
});

Deno.test("records of an aborted transaction are skipped, the others delivered", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  feed(buffer, [[1, A], [2, undefined], [3, A], [4, undefined]]);
  buffer.setState(A, "aborted");
  const skipped: number[] = [];
  const delivered: number[] = [];
  for (let step = buffer.next(); step.kind !== "empty"; step = buffer.next()) {
    assert.ok(step.kind === "deliver" || step.kind === "skip", `unexpected ${step.kind}`);
    (step.kind === "skip" ? skipped : delivered).push(step.record.seq);
  }
  assert.deepEqual(skipped, [1, 3]);
  assert.deepEqual(delivered, [2, 4]);
});

Deno.test("non-transactional records are delivered at once, in order", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  assert.deepEqual(feed(buffer, [[3, undefined], [7, undefined], [8, undefined]]), []);
  assert.deepEqual(drain(buffer).delivered, [3, 7, 8]);
});

Deno.test("interleaved transactions of two producers are delivered as each is decided", async (t) => {
  const records: [number, string | undefined][] = [
    [1, A],
    [2, B],
    [3, A],
    [4, B],
    [5, undefined],
    [6, B],
  ];
  await t.step("the later transaction's commit waits behind the earlier open one", () => {
    const buffer = new ReadCommittedBuffer<Rec>();
    feed(buffer, records);
    buffer.setState(A, "open");
    buffer.setState(B, "committed");
    assert.deepEqual(drain(buffer).delivered, []);
    buffer.setState(A, "committed");
    assert.deepEqual(drain(buffer).delivered, [1, 2, 3, 4, 5, 6]);
  });
  await t.step("an abort of one skips only its records", () => {
    const buffer = new ReadCommittedBuffer<Rec>();
    feed(buffer, records);
    buffer.setState(A, "committed");
    assert.deepEqual(drain(buffer).delivered, [1]);
    buffer.setState(B, "aborted");
    assert.deepEqual(drain(buffer).delivered, [3, 5]);
  });
});

Deno.test("a stale open after a decision is ignored; the other decision is a protocol violation", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  feed(buffer, [[1, A], [2, A]]);
  buffer.setState(A, "committed");
  assert.equal(buffer.setState(A, "open"), false);
  assert.equal(buffer.stateOf(A), "committed");
  assert.throws(() => buffer.setState(A, "aborted"), TransactionStateError);
});

Deno.test("states of transactions the buffer never saw are ignored", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  assert.equal(buffer.setState(A, "committed"), false);
  assert.equal(buffer.stateOf(A), undefined);
  assert.deepEqual(feed(buffer, [[1, A]]), [A], "its first record still asks for a lookup");
});

Deno.test("read_uncommitted delivers every record, open or aborted, without lookups", () => {
  const buffer = new ReadCommittedBuffer<Rec>({ isolation: "read_uncommitted" });
  assert.deepEqual(feed(buffer, [[1, A], [2, B], [3, undefined]]), []);
  assert.deepEqual(drain(buffer).delivered, [1, 2, 3]);
});

Deno.test("records must be pushed in increasing sequence order", () => {
  const buffer = new ReadCommittedBuffer<Rec>();
  buffer.push({ seq: 5, txn: undefined });
  assert.throws(() => buffer.push({ seq: 5, txn: undefined }), RangeError);
  assert.throws(() => buffer.push({ seq: 4, txn: undefined }), RangeError);
  assert.equal(buffer.lastPushedSeq, 5);
});

Deno.test("decided transactions beyond the remembered count are forgotten and looked up again", () => {
  const buffer = new ReadCommittedBuffer<Rec>({ remembered: 2 });
  const ids = ["p.0.0.1", "p.0.0.2", "p.0.0.3"];
  let seq = 0;
  for (const id of ids) {
    buffer.push({ seq: ++seq, txn: id });
    buffer.setState(id, "committed");
  }
  assert.deepEqual(drain(buffer).delivered, [1, 2, 3]);
  assert.equal(buffer.stateOf(ids[0]!), undefined, "the oldest is forgotten");
  assert.equal(buffer.stateOf(ids[2]!), "committed");
  assert.equal(buffer.push({ seq: ++seq, txn: ids[0] }), ids[0]);
  assert.equal(buffer.push({ seq: ++seq, txn: ids[2] }), undefined);
});

Deno.test("a transaction with queued records is never forgotten", () => {
  const buffer = new ReadCommittedBuffer<Rec>({ remembered: 0 });
  feed(buffer, [[1, A], [2, B]]);
  buffer.setState(B, "committed");
  buffer.setState(A, "open");
  assert.equal(buffer.stateOf(B), "committed");
  buffer.setState(A, "committed");
  assert.deepEqual(drain(buffer).delivered, [1, 2]);
  assert.equal(buffer.stateOf(A), undefined);
  assert.equal(buffer.stateOf(B), undefined);
});
