/**
 * Fuzz tests of the bill decoder (`parseBill`, the billing job's source
 * deserializer and the naive scheme's): any bytes give a bill or a
 * `BillFormatError` that names what was wrong (the payload, or the field
 * with its current value); bills the input generator writes decode to
 * themselves.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../tests/_fuzz.ts";
import { BillFormatError, parseBill } from "./billing_functions.ts";
import type { Bill } from "./billing_input.ts";

const encoder = new TextEncoder();

function checkGives(data: Uint8Array): void {
  let bill: Bill;
  try {
    bill = parseBill(data);
  } catch (error) {
    assert.ok(error instanceof BillFormatError, `not a BillFormatError: ${error}`);
    assert.match(
      error.message,
      /^Invalid bill: (the payload \(\d+ bytes\) is not valid UTF-8|the payload is not JSON \(.*\): |the payload must be a JSON object: current value is |field '(billId|account|amount|time)' must be .*: current value is )/s,
    );
    return;
  }
  assert.ok(typeof bill.billId === "string" && bill.billId.length >= 1 && bill.billId.length <= 64);
  assert.ok(typeof bill.account === "string" && bill.account.length >= 1);
  assert.ok(Number.isSafeInteger(bill.amount) && bill.amount >= 1);
  assert.ok(Number.isSafeInteger(bill.time) && bill.time >= 0);
  assert.deepEqual(Object.keys(bill).sort(), ["account", "amount", "billId", "time"]);
}

const billArb: fc.Arbitrary<Bill> = fc.record({
  billId: fc.string({ minLength: 1, maxLength: 64 }),
  account: fc.string({ minLength: 1, maxLength: 64 }),
  amount: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  time: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
});

Deno.test("parseBill fuzz: any bytes give a bill or an error naming the payload or the field", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => checkGives(bytes)),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("parseBill fuzz: any JSON value gives a bill or an error naming the field and its value", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => checkGives(encoder.encode(JSON.stringify(value)))),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("parseBill fuzz: a bill with one field damaged is refused with that field named", () => {
  const field = fc.constantFrom("billId", "account", "amount", "time");
  const bad = fc.oneof(
    fc.jsonValue(),
    fc.constant(""),
    fc.string({ minLength: 65, maxLength: 80 }),
    fc.double(),
    fc.integer({ min: -1000, max: 0 }),
  );
  fc.assert(
    fc.property(billArb, field, bad, (bill, name, value) => {
      const damaged = { ...bill, [name]: value };
      const data = encoder.encode(JSON.stringify(damaged));
      let decoded: Bill | undefined;
      try {
        decoded = parseBill(data);
      } catch (error) {
        assert.ok(error instanceof BillFormatError);
        assert.match(
          error.message,
          new RegExp(`field '${name}' must be .*: current value is `, "s"),
        );
        return;
      }
      // The damage was a valid value after all (e.g. another string id): it decodes as given.
      assert.deepEqual(decoded, JSON.parse(JSON.stringify(damaged)));
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("parseBill fuzz: every valid bill decodes to itself", () => {
  fc.assert(
    fc.property(billArb, (bill) => {
      assert.deepEqual(parseBill(encoder.encode(JSON.stringify(bill))), { ...bill });
    }),
    { numRuns: fuzzRuns() },
  );
});
