import assert from "node:assert/strict";
import { jobHash, parseRoute } from "./route.ts";

Deno.test("parseRoute reads the overview, job tabs and unknown hashes", () => {
  assert.deepEqual(parseRoute(""), { page: "overview" });
  assert.deepEqual(parseRoute("#/"), { page: "overview" });
  assert.deepEqual(parseRoute("#/jobs/j1"), { page: "job", jobId: "j1", tab: "graph" });
  assert.deepEqual(parseRoute("#/jobs/j1/"), { page: "job", jobId: "j1", tab: "graph" });
  assert.deepEqual(parseRoute("#/jobs/j1/checkpoints"), {
    page: "job",
    jobId: "j1",
    tab: "checkpoints",
  });
  assert.deepEqual(parseRoute("#/jobs/j1/exceptions"), {
    page: "job",
    jobId: "j1",
    tab: "exceptions",
  });
  assert.deepEqual(parseRoute("#/jobs/j1/bogus"), { page: "not-found", hash: "#/jobs/j1/bogus" });
  assert.deepEqual(parseRoute("#/jobs/"), { page: "not-found", hash: "#/jobs/" });
});

Deno.test("jobHash and parseRoute round-trip", () => {
  for (const tab of ["graph", "checkpoints", "exceptions"] as const) {
    assert.deepEqual(parseRoute(jobHash("a b/c", tab)), { page: "job", jobId: "a b/c", tab });
  }
});
