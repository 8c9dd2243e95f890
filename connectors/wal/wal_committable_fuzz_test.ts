/**
 * Fuzz tests of the write-ahead-log committable check
 * (`checkWalCommittable`, the sink's `checkCommittable`): any decoded value
 * gives a committable or a {@linkcode SinkStateError} naming the field;
 * committables the writer makes pass unchanged.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { checkWalCommittable, type WalCommittable } from "./wal_committable.ts";

const PREFIX = /^Invalid write-ahead-log committable in checkpoint: /;

function checkGives(raw: unknown, checkValue?: (raw: unknown) => number): void {
  let committable: WalCommittable<unknown>;
  try {
    committable = checkWalCommittable(raw, checkValue);
  } catch (error) {
    assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
    assert.match(error.message, PREFIX);
    assert.match(error.message, /field '|it must be an object|unknown field|values\[\d+\]/);
    return;
  }
  // A value: every field holds what the format allows.
  assert.ok(typeof committable.jobId === "string" && committable.jobId.length > 0);
  for (const field of ["attempt", "subtask", "part"] as const) {
    assert.ok(Number.isSafeInteger(committable[field]) && committable[field] >= 0);
  }
  assert.ok(Number.isSafeInteger(committable.checkpointId) && committable.checkpointId >= 1);
  assert.ok(Array.isArray(committable.values) && committable.values.length > 0);
}

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 5 }),
  fc.double(),
  fc.string({ maxLength: 6 }),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.bigInt({ min: -5n, max: 5n }),
  fc.array(fc.integer(), { maxLength: 3 }),
);

const nearlyValid = fc.record(
  {
    jobId: fc.oneof(fc.string({ maxLength: 5 }), anyValue),
    attempt: anyValue,
    subtask: anyValue,
    checkpointId: anyValue,
    part: anyValue,
    values: fc.oneof(fc.array(anyValue, { maxLength: 4 }), anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
);

Deno.test("write-ahead-log committable fuzz: any decoded value gives a committable or a SinkStateError naming the field", () => {
  fc.assert(
    fc.property(fc.oneof(fc.anything(), nearlyValid), (raw) => checkGives(raw)),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("write-ahead-log committable fuzz: a value check's rejection names the value's index", () => {
  const onlyIntegers = (raw: unknown): number => {
    if (!Number.isInteger(raw)) throw new TypeError(`not an integer: ${String(raw)}`);
    return raw as number;
  };
  fc.assert(
    fc.property(fc.array(anyValue, { minLength: 1, maxLength: 5 }), (values) => {
      const raw = { jobId: "j", attempt: 0, subtask: 1, checkpointId: 2, part: 0, values };
      const bad = values.findIndex((v) => !Number.isInteger(v));
      if (bad < 0) {
        assert.deepEqual(checkWalCommittable(raw, onlyIntegers), raw);
      } else {
        assert.throws(
          () => checkWalCommittable(raw, onlyIntegers),
          (e: unknown) =>
            e instanceof SinkStateError &&
            e.message.includes(`values[${bad}] of checkpoint 2 part 0 is rejected: not an integer`),
        );
      }
      checkGives(raw, onlyIntegers);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("write-ahead-log committable fuzz: committables as the writer makes them pass unchanged", () => {
  fc.assert(
    fc.property(
      fc.record({
        jobId: fc.string({ minLength: 1, maxLength: 8 }),
        attempt: fc.nat(),
        subtask: fc.nat({ max: 1000 }),
        checkpointId: fc.integer({ min: 1 }),
        part: fc.nat({ max: 100 }),
        values: fc.array(fc.jsonValue(), { minLength: 1, maxLength: 5 }),
      }),
      (committable) => {
        assert.deepEqual(checkWalCommittable(structuredClone(committable)), { ...committable });
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
