import assert from "node:assert/strict";
import {
  checkMaterializationOptions,
  decideMaterialization,
  type MaterializationFacts,
} from "./materialization_policy.ts";

const options = { intervalMs: 1000, maxChangelogRatio: 1, minChangelogBytes: 100 };
const facts: MaterializationFacts = {
  now: 500,
  lastMaterializedAt: 0,
  materializedBytes: 10_000,
  changelogBytes: 50,
  chainValid: true,
  inFlight: false,
};

Deno.test("decideMaterialization appends while the changelog is small and the interval has not passed", () => {
  assert.deepEqual(decideMaterialization(facts, options), { action: "append" });
});

Deno.test("decideMaterialization materializes without a valid chain, even with one in flight", () => {
  assert.deepEqual(
    decideMaterialization({ ...facts, chainValid: false, inFlight: true }, options),
    { action: "materialize", reason: "no-valid-chain" },
  );
});

Deno.test("decideMaterialization materializes when the interval passed, unless one is in flight", () => {
  assert.deepEqual(decideMaterialization({ ...facts, now: 1000 }, options), {
    action: "materialize",
    reason: "interval",
  });
  assert.deepEqual(decideMaterialization({ ...facts, now: 1000, inFlight: true }, options), {
    action: "append",
  });
});

Deno.test("decideMaterialization materializes when the changelog outgrows ratio x the materialization and the minimum", () => {
  assert.deepEqual(decideMaterialization({ ...facts, changelogBytes: 10_001 }, options), {
    action: "materialize",
    reason: "size",
  });
  assert.deepEqual(decideMaterialization({ ...facts, changelogBytes: 10_000 }, options), {
    action: "append",
  });
  // Below the minimum, an empty base does not make every checkpoint materialize.
  assert.deepEqual(
    decideMaterialization({ ...facts, materializedBytes: 0, changelogBytes: 99 }, options),
    { action: "append" },
  );
});

Deno.test("checkMaterializationOptions names the option and its value", () => {
  assert.throws(
    () => checkMaterializationOptions({ intervalMs: -1 }),
    /'intervalMs' must be a number >= 0: current value is -1/,
  );
  assert.throws(
    () => checkMaterializationOptions({ maxChangelogRatio: 0 }),
    /'maxChangelogRatio' must be a number > 0: current value is 0/,
  );
  checkMaterializationOptions({ intervalMs: Infinity, maxChangelogRatio: Infinity });
});
