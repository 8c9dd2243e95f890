/**
 * Fuzz tests of PostgresPreparedSink's restored-data decoder: the
 * committable check (`checkPostgresCommittable`, the sink's
 * `checkCommittable`) and the gid parser behind it. Any input gives a value
 * or a `SinkStateError` naming what was wrong, with the value; committables
 * the writer makes pass unchanged; `parseGid` never throws and inverts
 * `formatGid`.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { checkPostgresCommittable } from "./committable.ts";
import { formatGid, type GidParts, parseGid } from "./gid.ts";

const PREFIX = "sink.a";
const HEAD = /^Invalid PostgreSQL prepared-transaction committable in checkpoint: /;

function checkGives(raw: unknown): void {
  let committable;
  try {
    committable = checkPostgresCommittable(raw, PREFIX);
  } catch (error) {
    assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
    assert.match(error.message, HEAD);
    assert.match(
      error.message,
      /it must be an object|field '(gid|rows)'|field ".*" is unknown/,
    );
    assert.match(error.message, /current value|only 'gid' and 'rows'/);
    return;
  }
  assert.ok(Number.isSafeInteger(committable.rows) && committable.rows >= 1);
  const parsed = parseGid(committable.gid);
  assert.equal(parsed.kind, "weir");
  if (parsed.kind === "weir") {
    assert.equal(parsed.parts.gidPrefix, PREFIX);
    assert.equal(formatGid(parsed.parts), committable.gid);
  }
}

const parts: fc.Arbitrary<GidParts> = fc.record({
  gidPrefix: fc.oneof(fc.constant(PREFIX), fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/)),
  ownerSubtask: fc.integer({ min: 0, max: 9_999_999_999 }),
  checkpointId: fc.integer({ min: 1, max: 9_999_999_999 }),
  token: fc.stringMatching(/^[0-9a-f]{16}$/),
});

/** A valid gid with up to three characters replaced, inserted or deleted. */
const damagedGid = fc.tuple(
  parts.map(formatGid),
  fc.array(fc.tuple(fc.nat(), fc.nat({ max: 2 }), fc.string({ maxLength: 2 })), { maxLength: 3 }),
).map(([gid, edits]) => {
  let s = gid;
  for (const [at, kind, text] of edits) {
    const i = at % (s.length + 1);
    s = kind === 0
      ? s.slice(0, i) + text + s.slice(i + 1)
      : kind === 1
      ? s.slice(0, i) + text + s.slice(i)
      : s.slice(0, i) + s.slice(i + 1);
  }
  return s;
});

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 5 }),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.bigInt({ min: -5n, max: 5n }),
  fc.uint8Array({ maxLength: 4 }),
  damagedGid,
);

Deno.test("checkCommittable fuzz: any decoded value gives a committable or an error naming the field", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        anyValue,
        fc.array(anyValue, { maxLength: 3 }),
        fc.record({ gid: fc.oneof(anyValue, damagedGid), rows: anyValue }),
        fc.record({ gid: damagedGid, rows: fc.integer({ min: 1, max: 100 }) }),
        fc.dictionary(fc.string({ maxLength: 5 }), anyValue, { maxKeys: 4 }),
      ),
      (raw) => checkGives(raw),
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("checkCommittable fuzz: committables the writer makes pass unchanged, other prefixes are refused", () => {
  fc.assert(
    fc.property(parts, fc.integer({ min: 1, max: 1_000_000 }), (p, rows) => {
      const committable = { gid: formatGid(p), rows };
      if (p.gidPrefix === PREFIX) {
        assert.deepEqual(checkPostgresCommittable(committable, PREFIX), committable);
      } else {
        assert.throws(
          () => checkPostgresCommittable(committable, PREFIX),
          /field 'gid' must have this sink's gidPrefix 'sink\.a': current value is/,
        );
      }
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("parseGid fuzz: any string parses or says what is wrong, and a parsed gid formats back to itself", () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 130 }), damagedGid), (gid) => {
      const parsed = parseGid(gid);
      if (parsed.kind === "weir") assert.equal(formatGid(parsed.parts), gid);
      else assert.match(parsed.problem, /(field \d .*must be|must have 5).*current value/);
    }),
    { numRuns: fuzzRuns() },
  );
});
