/**
 * Fuzz tests of the MariaDB XA sink's restored-data decoders: the
 * committable check (`checkXaCommittable`, the sink's `checkCommittable`),
 * the xid parser behind it and the `XA RECOVER` row reader. Any input gives
 * a value or an error naming what was wrong, with the value; committables
 * the writer makes pass unchanged.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { checkXaCommittable, type XaCommittable } from "./xa_committable.ts";
import {
  formatXid,
  parseXid,
  WEIR_XID_FORMAT_ID,
  XidFormatError,
  xidFromRecoverRow,
} from "./xid.ts";

const PREFIX = /^Invalid MariaDB XA committable in checkpoint: /;

function checkGives(raw: unknown): void {
  let committable: XaCommittable;
  try {
    committable = checkXaCommittable(raw);
  } catch (error) {
    assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
    assert.match(error.message, PREFIX);
    assert.match(
      error.message,
      /it must be an object|field '(gtrid|bqual|records)'|is unknown|(formatID|gtrid|prefix|owner|base checkpoint|bqual|sequence) of xid/,
    );
    assert.match(error.message, /current value is|must be positive/);
    return;
  }
  assert.ok(Number.isSafeInteger(committable.records) && committable.records >= 0);
  const parts = parseXid({
    gtrid: committable.gtrid,
    bqual: committable.bqual,
    formatId: WEIR_XID_FORMAT_ID,
  });
  assert.deepEqual(formatXid(parts), {
    gtrid: committable.gtrid,
    bqual: committable.bqual,
    formatId: WEIR_XID_FORMAT_ID,
  });
}

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 5 }),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.bigInt({ min: -5n, max: 5n }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.uint8Array({ maxLength: 4 }),
);

const validParts = fc.record({
  prefix: fc.stringMatching(/^[A-Za-z0-9_.-]{1,32}$/),
  owner: fc.integer({ min: 0, max: 32767 }),
  base: fc.maxSafeNat(),
  writerId: fc.stringMatching(/^[0-9a-z]{10}$/),
  sequence: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
});

/** A gtrid that is nearly right: valid pieces with one of them bent. */
const nearlyGtrid = fc.tuple(
  fc.oneof(fc.constant("weir"), fc.string({ maxLength: 5 })),
  fc.oneof(fc.stringMatching(/^[A-Za-z0-9_.-]{1,32}$/), fc.string({ maxLength: 34 })),
  fc.oneof(fc.nat(40000).map(String), fc.string({ maxLength: 4 }), fc.constant("01")),
  fc.oneof(fc.maxSafeNat().map(String), fc.string({ maxLength: 4 }), fc.constant("1e3")),
  fc.array(fc.string({ maxLength: 3 }), { maxLength: 2 }),
).map(([w, p, o, b, rest]) => [w, p, o, b, ...rest].join(":"));

const nearlyBqual = fc.tuple(
  fc.oneof(fc.stringMatching(/^[0-9a-z]{10}$/), fc.string({ maxLength: 11 })),
  fc.oneof(fc.constant("."), fc.string({ maxLength: 2 })),
  fc.oneof(fc.nat().map(String), fc.string({ maxLength: 4 }), fc.constant("00")),
).map(([w, dot, s]) => `${w}${dot}${s}`);

const nearlyValid = fc.record(
  {
    gtrid: fc.oneof(nearlyGtrid, anyValue),
    bqual: fc.oneof(nearlyBqual, anyValue),
    records: fc.oneof(fc.nat(), anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
);

Deno.test("checkXaCommittable fuzz: any value gives a committable or a SinkStateError naming the field", () => {
  fc.assert(fc.property(fc.oneof(anyValue, nearlyValid, fc.anything()), checkGives), {
    numRuns: fuzzRuns(),
  });
});

Deno.test("checkXaCommittable fuzz: committables the writer makes pass unchanged", () => {
  fc.assert(
    fc.property(validParts, fc.nat(), (parts, records) => {
      const xid = formatXid(parts);
      const committable = { gtrid: xid.gtrid, bqual: xid.bqual, records };
      assert.deepEqual(checkXaCommittable(structuredClone(committable)), committable);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("xidFromRecoverRow fuzz: any row gives an xid that splits its data or an XidFormatError naming the row", () => {
  const row = fc.record(
    {
      formatID: fc.oneof(fc.integer(), fc.bigInt({ min: -(2n ** 31n), max: 2n ** 31n }), anyValue),
      gtrid_length: fc.oneof(fc.nat(70), fc.bigInt({ min: -2n, max: 70n }), anyValue),
      bqual_length: fc.oneof(fc.nat(70), fc.bigInt({ min: -2n, max: 70n }), anyValue),
      data: fc.oneof(fc.uint8Array({ maxLength: 130 }), fc.string({ maxLength: 130 }), anyValue),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(row, (r) => {
      let xid;
      try {
        xid = xidFromRecoverRow(r);
      } catch (error) {
        assert.ok(error instanceof XidFormatError, `not an XidFormatError: ${error}`);
        assert.match(error.message, /^XA RECOVER row must have .*: current value is /);
        return;
      }
      assert.ok(xid.gtrid.length === Number(r.gtrid_length));
      assert.ok(xid.bqual.length === Number(r.bqual_length));
      assert.ok(Number.isSafeInteger(xid.formatId));
    }),
    { numRuns: fuzzRuns() },
  );
});
