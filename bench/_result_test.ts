/**
 * Unit tests of the benchmarks' `RESULT` lines and checks.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectEqual, parseResultFields, resultLine } from "./_result.ts";

Deno.test("resultLine() prints integers as they are, large numbers rounded, small ones to 3 decimals", () => {
  assert.equal(
    resultLine({ eps: 1234567.8, ratio: 0.51234, rounds: 3, query: "q1" }),
    "RESULT eps=1234568 ratio=0.512 rounds=3 query=q1",
  );
});

Deno.test("parseResultFields() reads the last RESULT line of an output", () => {
  const output = "round 1: ...\nRESULT a=1\nmore\nRESULT a=2 b=x\ntrailing\n";
  assert.deepEqual(parseResultFields(output), { a: "2", b: "x" });
  assert.throws(() => parseResultFields("no result"), /no RESULT line in:\nno result/);
});

Deno.test("expectEqual() names what was compared, the expected and the got value", () => {
  expectEqual("records", 5, 5);
  assert.throws(
    () => expectEqual("checksum of the sinks", 10, 11),
    { message: "checksum of the sinks: expected 10, got 11" },
  );
});
