import assert from "node:assert/strict";
import { ApiError, describeError, errorMessage } from "./api_error.ts";

Deno.test("errorMessage reads Flink's error shape", () => {
  assert.equal(errorMessage(404, '{"errors":["Job x not found"]}'), "Job x not found");
  assert.equal(errorMessage(400, '{"errors":["a","b"]}'), "a; b");
});

Deno.test("errorMessage falls back to the text, then to the status", () => {
  assert.equal(errorMessage(502, "<html> Bad\n gateway </html>"), "<html> Bad gateway </html>");
  assert.equal(errorMessage(503, '{"errors":[]}'), '{"errors":[]}');
  assert.equal(errorMessage(500, "   "), "HTTP 500");
  assert.equal(errorMessage(500, "x".repeat(400)).length, 301);
});

Deno.test("describeError names the status and route", () => {
  assert.equal(
    describeError(new ApiError(503, "/jobs/overview", "taking over")),
    "taking over (HTTP 503 on /jobs/overview)",
  );
  assert.match(describeError(new ApiError(0, "/overview", "Failed to fetch")), /Cannot reach/);
  assert.equal(describeError(new Error("boom")), "boom");
});
