import assert from "node:assert/strict";
import { kindOf, shapeMismatch } from "./answer_shape.ts";

Deno.test("shapeMismatch accepts an answer with the expected fields", () => {
  assert.equal(
    shapeMismatch({ jobs: [], n: 1, s: "x", b: false, o: {} }, {
      jobs: "array",
      n: "number",
      s: "string",
      b: "boolean",
      o: "object",
    }),
    undefined,
  );
  assert.equal(shapeMismatch([1], { "": "array" }), undefined);
});

Deno.test("shapeMismatch names the field and the kinds", () => {
  assert.equal(shapeMismatch({}, { taskmanagers: "array" }), "field 'taskmanagers' is missing");
  assert.equal(
    shapeMismatch({ jobs: {} }, { jobs: "array" }),
    "field 'jobs' is an object, not an array",
  );
  assert.equal(
    shapeMismatch({ jobs: null }, { jobs: "array" }),
    "field 'jobs' is null, not an array",
  );
  assert.equal(shapeMismatch("<html>", { jobs: "array" }), "the answer is a string, not an object");
  assert.equal(shapeMismatch({}, { "": "array" }), "the answer is an object, not an array");
});

Deno.test("kindOf tells JSON kinds apart", () => {
  assert.equal(kindOf([]), "array");
  assert.equal(kindOf(null), "null");
  assert.equal(kindOf(undefined), "undefined");
  assert.equal(kindOf(() => 1), "other");
});
