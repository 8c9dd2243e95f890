import assert from "node:assert/strict";
import { keyColumnsProblem } from "./key_columns.ts";

Deno.test("keyColumnsProblem accepts a non-empty list of distinct written columns, in any order", () => {
  assert.equal(keyColumnsProblem(["a", "b", "c"], ["c", "a"]), undefined);
  assert.equal(keyColumnsProblem(["a"], ["a"]), undefined);
});

Deno.test("keyColumnsProblem names the rule and the current value of bad key columns", () => {
  assert.equal(
    keyColumnsProblem(["a"], []),
    "keyColumns must be a non-empty array of column names: current value is []",
  );
  assert.equal(
    keyColumnsProblem(["a"], "a"),
    'keyColumns must be a non-empty array of column names: current value is "a"',
  );
  assert.equal(
    keyColumnsProblem(["a", "b"], ["a", "z"]),
    'every key column must be one of columns ["a","b"]: current value is "z"',
  );
  assert.equal(
    keyColumnsProblem(["a", "b"], ["b", "b"]),
    'keyColumns must be distinct: current value is ["b","b"]',
  );
});
