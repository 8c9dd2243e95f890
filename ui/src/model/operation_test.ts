import assert from "node:assert/strict";
import {
  cancelPhase,
  confirmQuestion,
  failedPhase,
  savepointPhase,
  startedPhase,
} from "./operation.ts";

Deno.test("savepointPhase reads in progress, completed and failed operations", () => {
  assert.deepEqual(savepointPhase("savepoint", { status: { id: "IN_PROGRESS" } }), {
    kind: "running",
    text: "Savepoint in progress…",
  });
  assert.deepEqual(
    savepointPhase("savepoint", {
      status: { id: "COMPLETED" },
      operation: { location: "nats-object-store://b/savepoints/sp-1" },
    }),
    { kind: "done", text: "Savepoint completed: nats-object-store://b/savepoints/sp-1" },
  );
  assert.deepEqual(
    savepointPhase("stop", {
      status: { id: "COMPLETED" },
      operation: {
        "failure-cause": { class: "X", "stack-trace": "CheckpointDeclined: no\n at y" },
      },
    }),
    { kind: "failed", text: "Failed: CheckpointDeclined: no" },
  );
  assert.equal(
    savepointPhase("stop", { status: { id: "COMPLETED" }, operation: { location: "p" } }).text,
    "Stopped with savepoint: p",
  );
});

Deno.test("cancelPhase is done once the job ended", () => {
  assert.equal(cancelPhase("RUNNING").kind, "running");
  assert.deepEqual(cancelPhase("CANCELED"), { kind: "done", text: "Job cancelled" });
  assert.equal(cancelPhase("FAILED").kind, "done");
});

Deno.test("startedPhase, failedPhase and confirmQuestion name the action", () => {
  assert.equal(startedPhase("cancel").text, "Cancelling…");
  assert.equal(startedPhase("stop").text, "Stopping with savepoint…");
  assert.equal(failedPhase("409 job not running").text, "Failed: 409 job not running");
  assert.match(confirmQuestion("stop", "q"), /Stop job "q" with a final savepoint/);
});
