import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { canonicalTimestampMillis, MillisMemo } from "./timestamp_cache.ts";
import { timeAttributeMillis, timestampText } from "./time_attribute.ts";

Deno.test("the positional timestamp parse agrees with the general one on every canonical text", () => {
  fc.assert(fc.property(
    fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31) }),
    fc.constantFrom(19, 21, 22, 23),
    (millis, length) => {
      const text = timestampText(millis).slice(0, length);
      assert.equal(canonicalTimestampMillis(text), timeAttributeMillis(text, "ts"));
    },
  ));
});

Deno.test("MillisMemo falls back to the general parse and its errors for other texts", () => {
  const memo = new MillisMemo("ts");
  assert.equal(memo.of("2026-01-01T00:00:01"), 1767225601000);
  assert.equal(memo.of(1500), 1500);
  assert.ok(Number.isNaN(canonicalTimestampMillis("2026-01-01 00:00")));
  assert.throws(() => memo.of("yesterday"), /time attribute 'ts' needs a TIMESTAMP/);
  assert.throws(() => memo.of(null), /current value is null/);
});
