import assert from "node:assert/strict";
import { decideFailoverScope, failedSubtask, type FailoverScopeFacts } from "./region_failover.ts";
import { FailoverRegions } from "./failover_regions.ts";
import { TaskFailureError } from "./job_result.ts";
import { SuppressRestartsError } from "../failure.ts";

/** Two forward pipelines at parallelism 2: regions 0 (src#0, sink#0) and 1 (src#1, sink#1). */
const twoRegions = FailoverRegions.ofJob({
  vertices: [{ id: "src", parallelism: 2 }, { id: "sink", parallelism: 2 }],
  edges: [{ source: 0, target: 1, partitioner: "forward" }],
});
const keyed = FailoverRegions.ofJob({
  vertices: [{ id: "src", parallelism: 2 }, { id: "sink", parallelism: 2 }],
  edges: [{ source: 0, target: 1, partitioner: "hash" }],
});
const taskFailure = (vertex: string, subtask: number, suppress = false) =>
  new TaskFailureError(vertex, subtask, 0, {
    name: "Error",
    message: "boom",
    suppressRestarts: suppress,
  });
const facts = (over: Partial<FailoverScopeFacts>): FailoverScopeFacts => ({
  strategy: "region",
  regions: twoRegions,
  error: taskFailure("sink", 1),
  running: true,
  finishing: false,
  stopping: false,
  wouldRestart: true,
  ...over,
});

Deno.test("a task failure while the job runs restarts its region only", () => {
  const scope = decideFailoverScope(facts({}));
  assert.equal(scope.kind, "region");
  if (scope.kind !== "region") return;
  assert.equal(scope.region.id, 1);
  assert.deepEqual(scope.failed, { vertexId: "sink", subtask: 1 });
});

Deno.test("every other case is a full failover, with its reason", async (t) => {
  const cases: [string, Partial<FailoverScopeFacts>, string][] = [
    ["the full strategy", { strategy: "full" }, ""],
    ["a failure without a subtask", { error: new Error("worker lost") }, "names no subtask"],
    ["before every subtask runs", { running: false }, "not every subtask was running"],
    ["while finishing", { finishing: true }, "finishing"],
    ["while stopping with a savepoint", { stopping: true }, "stop-with-savepoint"],
    ["when the restart strategy gives up", { wouldRestart: false }, "the job ends"],
    ["an error a restart cannot fix", { error: taskFailure("sink", 1, true) }, "the job ends"],
    ["a keyed job (one region)", { regions: keyed }, "its region is the whole job"],
    ["an unknown subtask", { error: taskFailure("map", 0) }, "no subtask map#0"],
  ];
  for (const [name, over, why] of cases) {
    await t.step(name, () => {
      const scope = decideFailoverScope(facts(over));
      assert.equal(scope.kind, "full", name);
      if (scope.kind === "full") assert.ok(scope.why.includes(why), `${name}: ${scope.why}`);
    });
  }
});

Deno.test("failedSubtask reads the subtask a task failure names, and nothing else", () => {
  assert.deepEqual(failedSubtask(taskFailure("src", 0)), { vertexId: "src", subtask: 0 });
  assert.equal(failedSubtask(new Error("x")), undefined);
  assert.equal(failedSubtask(new SuppressRestartsError("x")), undefined);
  assert.equal(failedSubtask("text"), undefined);
});
