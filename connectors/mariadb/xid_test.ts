import assert from "node:assert/strict";
import {
  decideLingeringRollbacks,
  defaultXidPrefix,
  formatXid,
  newWriterId,
  parseXid,
  tryParseXid,
  WEIR_XID_FORMAT_ID,
  type Xid,
  XidFormatError,
  xidFromRecoverRow,
  xidSql,
} from "./xid.ts";

const parts = { prefix: "bills", owner: 2, base: 41, writerId: "k3j9x0q2ab", sequence: 7 };

Deno.test("formatXid writes weir:<prefix>:<owner>:<base> and <writerId>.<sequence> under format id WEIR", () => {
  assert.deepEqual(formatXid(parts), {
    gtrid: "weir:bills:2:41",
    bqual: "k3j9x0q2ab.7",
    formatId: 0x57454952,
  });
  assert.equal(WEIR_XID_FORMAT_ID, 1464158546);
});

Deno.test("parseXid reads back what formatXid wrote, for the longest prefix and largest numbers", () => {
  const longest = {
    prefix: "a".repeat(32),
    owner: 32767,
    base: Number.MAX_SAFE_INTEGER,
    writerId: newWriterId(),
    sequence: Number.MAX_SAFE_INTEGER,
  };
  const xid = formatXid(longest);
  assert.ok(xid.gtrid.length <= 64 && xid.bqual.length <= 64);
  assert.deepEqual(parseXid(xid), longest);
  assert.deepEqual(parseXid(formatXid(parts)), parts);
});

Deno.test("parseXid refuses foreign xids naming the part and its value", () => {
  const good = formatXid(parts);
  const cases: [Xid, RegExp][] = [
    [{ ...good, formatId: 1 }, /formatID .* must be 1464158546: current value is 1/],
    [{ ...good, gtrid: "other:bills:2:41" }, /gtrid .* must be weir:<prefix>:<owner>:<base>/],
    [
      { ...good, gtrid: "weir:bills:02:41" },
      /owner .* must be a decimal integer: current value is "02"/,
    ],
    [
      { ...good, gtrid: "weir:bills:40000:41" },
      /owner .* must be at most 32767: current value is 40000/,
    ],
    [{ ...good, gtrid: "weir:b!lls:2:41" }, /prefix .* current value is "b!lls"/],
    [{ ...good, bqual: "short.7" }, /bqual .* current value is "short.7"/],
    [{ ...good, bqual: "k3j9x0q2ab.0" }, /sequence .* must be positive: current value is 0/],
  ];
  for (const [xid, message] of cases) {
    assert.throws(
      () => parseXid(xid),
      (e: unknown) => e instanceof XidFormatError && message.test(e.message),
    );
    assert.equal(tryParseXid(xid), undefined);
  }
});

Deno.test("formatXid refuses parts out of range naming the value", () => {
  assert.throws(
    () => formatXid({ ...parts, owner: -1 }),
    /owner must be an integer in \[0, 32767\]: current value is -1/,
  );
  assert.throws(
    () => formatXid({ ...parts, base: 1.5 }),
    /base checkpoint .* current value is 1.5/,
  );
  assert.throws(
    () => formatXid({ ...parts, sequence: 0 }),
    /sequence must be a positive integer: current value is 0/,
  );
  assert.throws(() => formatXid({ ...parts, prefix: "" }), /xidPrefix must be 1 to 32 characters/);
});

Deno.test("defaultXidPrefix keeps a clean uid and hashes one that is long or has other characters", () => {
  assert.equal(defaultXidPrefix("bills-sink"), "bills-sink");
  const odd = defaultXidPrefix("Sink: bills/by account (v2)");
  assert.match(odd, /^Sink__bills_by_account_-[0-9a-f]{8}$/);
  assert.equal(defaultXidPrefix("Sink: bills/by account (v2)"), odd);
  assert.notEqual(defaultXidPrefix("Sink: bills/by account (v3)"), odd);
  assert.ok(defaultXidPrefix("x".repeat(200)).length <= 32);
});

Deno.test("xidSql spells gtrid and bqual as hex literals", () => {
  assert.equal(
    xidSql({ gtrid: "weir:a:0:0", bqual: "b'", formatId: WEIR_XID_FORMAT_ID }),
    "X'776569723a613a303a30',X'6227',1464158546",
  );
});

Deno.test("xidFromRecoverRow splits data by the gtrid and bqual lengths and refuses short data", () => {
  const data = new TextEncoder().encode("weir:p:0:3abcdefghij.1");
  assert.deepEqual(
    xidFromRecoverRow({ formatID: 1464158546n, gtrid_length: 10n, bqual_length: 12n, data }),
    { formatId: WEIR_XID_FORMAT_ID, gtrid: "weir:p:0:3", bqual: "abcdefghij.1" },
  );
  assert.throws(
    () => xidFromRecoverRow({ formatID: 1, gtrid_length: 10, bqual_length: 30, data }),
    /XA RECOVER row must have formatID, gtrid_length, bqual_length and data of that length/,
  );
});

function xid(prefix: string, owner: number, base: number, sequence = 1): Xid {
  return formatXid({ prefix, owner, base, writerId: "abcdefghij", sequence });
}

Deno.test("a restoring writer rolls back its owner share's xids started at or after the restored checkpoint only", () => {
  const recovered = [
    xid("p", 0, 4), // prepared at or before checkpoint 5: may be a restored committable
    xid("p", 0, 5), // started after barrier 5: lingering
    xid("p", 0, 9),
    xid("p", 1, 7), // another owner
    xid("q", 0, 9), // another prefix
    { gtrid: "foreign", bqual: "", formatId: 1 },
  ];
  assert.deepEqual(
    decideLingeringRollbacks({
      recovered,
      prefix: "p",
      subtaskIndex: 0,
      parallelism: 2,
      restoredCheckpointId: 5,
    }),
    [recovered[1], recovered[2]],
  );
  assert.deepEqual(
    decideLingeringRollbacks({
      recovered,
      prefix: "p",
      subtaskIndex: 1,
      parallelism: 2,
      restoredCheckpointId: 5,
    }),
    [recovered[3]],
  );
});

Deno.test("on a fresh start a writer rolls back every xid of its prefix and owner share", () => {
  const recovered = [xid("p", 0, 0), xid("p", 1, 3), xid("p", 2, 8), xid("p", 3, 1)];
  assert.deepEqual(
    decideLingeringRollbacks({
      recovered,
      prefix: "p",
      subtaskIndex: 0,
      parallelism: 2,
      restoredCheckpointId: undefined,
    }),
    [recovered[0], recovered[2]],
  );
});

Deno.test("every old owner's lingering xids go to exactly one new subtask at any parallelism", () => {
  const recovered = Array.from({ length: 7 }, (_, owner) => xid("p", owner, 10));
  for (const parallelism of [1, 2, 3, 5, 8]) {
    const taken = new Map<string, number>();
    for (let subtask = 0; subtask < parallelism; subtask++) {
      for (
        const x of decideLingeringRollbacks({
          recovered,
          prefix: "p",
          subtaskIndex: subtask,
          parallelism,
          restoredCheckpointId: 10,
        })
      ) {
        taken.set(x.gtrid, (taken.get(x.gtrid) ?? 0) + 1);
      }
    }
    assert.equal(taken.size, 7, `parallelism ${parallelism}`);
    assert.ok([...taken.values()].every((n) => n === 1));
  }
});
