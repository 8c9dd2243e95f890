import assert from "node:assert/strict";
import { decideFence, decideForeignFence } from "./fence.ts";

const holder = { jobId: "job-a", attempt: 2, generation: 5 };

Deno.test("decideFence lets the first claim and a newer attempt take over, and the same attempt join", () => {
  assert.deepEqual(decideFence(undefined, { jobId: "job-a", attempt: 0 }), {
    kind: "take-over",
    generation: 1,
  });
  assert.deepEqual(decideFence(holder, { jobId: "job-a", attempt: 3 }), {
    kind: "take-over",
    generation: 6,
  });
  assert.deepEqual(decideFence(holder, { jobId: "job-a", attempt: 2 }), {
    kind: "join",
    generation: 5,
  });
});

Deno.test("decideFence fences an older attempt of the holding job and lets another job take over", () => {
  assert.deepEqual(decideFence(holder, { jobId: "job-a", attempt: 1 }), {
    kind: "fenced",
    holder,
  });
  assert.deepEqual(decideFence(holder, { jobId: "job-b", attempt: 0 }), {
    kind: "take-over",
    generation: 6,
  });
});

Deno.test("decideForeignFence takes over another job's subtask row and leaves this job's", () => {
  assert.deepEqual(decideForeignFence(holder, { jobId: "job-b" }), {
    kind: "take-over",
    generation: 6,
  });
  assert.deepEqual(decideForeignFence(holder, { jobId: "job-a" }), { kind: "leave" });
  assert.deepEqual(decideForeignFence(undefined, { jobId: "job-a" }), { kind: "leave" });
});
