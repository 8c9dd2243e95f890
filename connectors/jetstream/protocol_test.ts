import assert from "node:assert/strict";
import {
  checkPrefix,
  decideAbort,
  decideCommit,
  decideEpochBump,
  decideLingering,
  decidePreCommit,
  defaultTransactionalIdPrefix,
  escapeToken,
  msgIdOf,
  ownedSubtasks,
  parseProducerRecord,
  parseTxnId,
  parseTxnRecord,
  producerKey,
  transactionalIdOf,
  TransactionStateError,
  txnIdOf,
  txnKey,
  type TxnRecord,
} from "./protocol.ts";

const KV_KEY = /^[-/_=.a-zA-Z0-9]+$/;

Deno.test("escapeToken keeps letters, digits, _ and -, and escapes every other UTF-8 byte", () => {
  assert.equal(escapeToken("orders_v2-eu"), "orders_v2-eu");
  assert.equal(escapeToken("a.b c"), "a=2Eb=20c");
  assert.equal(escapeToken("x=y"), "x=3Dy");
  assert.equal(escapeToken("é"), "=C3=A9");
  assert.equal(escapeToken(""), "=");
  assert.notEqual(escapeToken("a.b"), escapeToken("a_b"));
});

Deno.test("names built from any stream name and uid are valid KV keys and header values", () => {
  const prefix = defaultTransactionalIdPrefix("Orders/Out 1", "sink.uid*>");
  const txn = txnIdOf(transactionalIdOf(prefix, 3), 12, 40);
  for (const key of [txnKey(txn), producerKey(transactionalIdOf(prefix, 3)), msgIdOf(txn, 9)]) {
    assert.match(key.replace(":", "_"), KV_KEY);
  }
  assert.equal(checkPrefix(prefix), prefix);
  assert.deepEqual(parseTxnId(txn), {
    transactionalId: transactionalIdOf(prefix, 3),
    prefix,
    subtask: 3,
    epoch: 12,
    counter: 40,
  });
});

Deno.test("checkPrefix rejects empty tokens, wildcards and spaces, naming the value", () => {
  for (const bad of ["", "a..b", ".a", "a.", "a.*", "a b", "a.>", "x".repeat(201)]) {
    assert.throws(
      () => checkPrefix(bad),
      (e: Error) => e instanceof TypeError && e.message.includes("current value"),
    );
  }
  assert.equal(checkPrefix("team-a.orders_sink"), "team-a.orders_sink");
});

Deno.test("parseTxnId rejects what is not <prefix>.<subtask>.<epoch>.<counter>", () => {
  for (const bad of ["", "a.1.2", "a.1.2.x", "a b.1.2.3", "1.2.3", "a.1.2.3.", "a.-1.2.3"]) {
    assert.equal(parseTxnId(bad), undefined, bad);
  }
  assert.equal(parseTxnId("a.b.1.2.3")?.prefix, "a.b");
});

Deno.test("ownedSubtasks adds the older ids a scale-down leaves to each subtask", () => {
  assert.deepEqual(ownedSubtasks(0, 2, [0, 1, 2, 3, 4]), [0, 2, 4]);
  assert.deepEqual(ownedSubtasks(1, 2, [0, 1, 2, 3, 4]), [1, 3]);
  assert.deepEqual(ownedSubtasks(1, 4, [0, 1]), [1], "a scale-up owns only its own id");
  assert.deepEqual(ownedSubtasks(0, 1, [3, 1, 1]), [0, 1, 3]);
});

const open: TxnRecord = { state: "open", producer: "p.0", epoch: 2, records: 0 };

Deno.test("commit moves open to committed, repeats as a no-op, and refuses aborted or missing", () => {
  assert.deepEqual(decideCommit(open), { kind: "write", next: { ...open, state: "committed" } });
  assert.deepEqual(decideCommit({ ...open, state: "committed" }), {
    kind: "done",
    outcome: "already-committed",
  });
  assert.deepEqual(decideCommit({ ...open, state: "aborted" }), {
    kind: "refuse",
    reason: "aborted",
  });
  assert.deepEqual(decideCommit(undefined), { kind: "refuse", reason: "missing" });
});

Deno.test("abort moves open to aborted, never touches a committed one, and writes a missing one aborted", () => {
  const txn = { producer: "p.0", epoch: 2 };
  assert.deepEqual(decideAbort(open, txn), { kind: "write", next: { ...open, state: "aborted" } });
  assert.deepEqual(decideAbort({ ...open, state: "aborted" }, txn), {
    kind: "done",
    outcome: "already-aborted",
  });
  assert.deepEqual(decideAbort({ ...open, state: "committed" }, txn), {
    kind: "done",
    outcome: "already-committed",
  });
  assert.deepEqual(decideAbort(undefined, txn), {
    kind: "write",
    next: { state: "aborted", producer: "p.0", epoch: 2, records: 0 },
  });
});

Deno.test("pre-commit records the counts and sequences, and is refused unless open", () => {
  assert.deepEqual(
    decidePreCommit(open, { records: 3000, messages: 3, firstSeq: 10, lastSeq: 14 }),
    {
      kind: "write",
      next: { ...open, records: 3000, messages: 3, firstSeq: 10, lastSeq: 14, preCommitted: true },
    },
  );
  assert.deepEqual(decidePreCommit(open, { records: 0, messages: 0, firstSeq: 0, lastSeq: 0 }), {
    kind: "write",
    next: { ...open, records: 0, preCommitted: true },
  });
  assert.deepEqual(
    decidePreCommit({ ...open, state: "aborted" }, {
      records: 1,
      messages: 1,
      firstSeq: 1,
      lastSeq: 1,
    }),
    {
      kind: "refuse",
      reason: "aborted",
    },
  );
  assert.deepEqual(
    decidePreCommit(undefined, { records: 1, messages: 1, firstSeq: 1, lastSeq: 1 }),
    {
      kind: "refuse",
      reason: "missing",
    },
  );
});

Deno.test("a lingering transaction is aborted at once unless pre-committed, which waits for the restored commits", () => {
  assert.deepEqual(decideLingering(open, false), {
    kind: "write",
    next: { ...open, state: "aborted" },
  });
  const preCommitted = { ...open, preCommitted: true };
  assert.deepEqual(decideLingering(preCommitted, false), { kind: "done", outcome: "left-open" });
  assert.deepEqual(decideLingering(preCommitted, true), {
    kind: "write",
    next: { ...preCommitted, state: "aborted" },
  });
  assert.deepEqual(decideLingering({ ...open, state: "committed" }, true), {
    kind: "done",
    outcome: "already-committed",
  });
});

Deno.test("records that are not valid JSON records are refused, naming the key and bucket", () => {
  assert.deepEqual(parseTxnRecord(JSON.stringify(open), "p.0.2.0", "b"), open);
  assert.throws(
    () => parseTxnRecord("{", "p.0.2.0", "b"),
    (e: Error) =>
      e instanceof TransactionStateError && /txn\.p\.0\.2\.0 of bucket b/.test(e.message),
  );
  assert.throws(() => parseTxnRecord('{"state":"done"}', "p.0.2.0", "b"), TransactionStateError);
  assert.deepEqual(
    parseProducerRecord('{"epoch":3,"parallelism":2,"settledEpoch":1}', "p.0", "b"),
    {
      epoch: 3,
      parallelism: 2,
      settledEpoch: 1,
    },
  );
  assert.throws(
    () => parseProducerRecord('{"epoch":-1}', "p.0", "b"),
    /producer\.p\.0 of bucket b/,
  );
});

Deno.test("decideEpochBump fences a late sink of an older attempt of the same job, not a resumed job", () => {
  const record = { epoch: 3, parallelism: 2, settledEpoch: 3, owner: { jobId: "j-1", attempt: 2 } };
  assert.equal(decideEpochBump(undefined, "j-1", 0), "bump");
  assert.equal(decideEpochBump(record, "j-1", 2), "bump"); // the same attempt restarting its subtask
  assert.equal(decideEpochBump(record, "j-1", 3), "bump"); // a newer attempt
  assert.equal(decideEpochBump(record, "j-1", 1), "fenced"); // a zombie of attempt 1 starting late
  assert.equal(decideEpochBump(record, "j-2", 0), "bump"); // a resumed run has a new job id
  const { owner: _, ...legacy } = record;
  assert.equal(decideEpochBump(legacy, "j-1", 0), "bump");
});
