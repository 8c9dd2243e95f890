import assert from "node:assert/strict";
import { appendToFirstLine, chainMessage, describeError } from "./error_chain.ts";
import { errorInfo } from "./task/messages.ts";
import { SuppressRestartsError } from "./failure.ts";
import { RemoteTaskError, TaskFailureError } from "./cluster/job_result.ts";
import { createRestartBackoff, RestartStrategies } from "./cluster/restart_strategy.ts";

class DisabledError extends SuppressRestartsError {
  constructor() {
    super("the PostgreSQL server has max_prepared_transactions = 0");
    this.name = "DisabledError";
  }
}

Deno.test("a cause whose message its parent already contains is printed once, with its suppression kept", () => {
  const root = new DisabledError();
  const task = new Error(`Subtask Sink (1/1) [v0#0, attempt 0] of job j failed: ${root.message}`, {
    cause: root,
  });
  task.name = "TaskFailedError";
  const info = errorInfo(task);
  assert.equal(info.message, `${task.message}\n  caused by DisabledError (message above)`);
  assert.equal(info.suppressRestarts, true);
  const remote = new RemoteTaskError("v0", 0, 0, info);
  assert.equal(remote.message.split(root.message).length - 1, 1, remote.message);
  for (const part of ["TaskFailedError", "DisabledError", "v0#0", "attempt 0", "job j"]) {
    assert.ok(remote.message.includes(part), `${part} missing from ${remote.message}`);
  }
});

Deno.test("causes with messages of their own are all kept, in order", () => {
  const root = new Error("connection refused");
  root.name = "ConnectionRefused";
  const middle = new Error("cannot open the commit log", { cause: root });
  const top = new Error("writer failed to start", { cause: middle });
  assert.equal(
    chainMessage(top),
    "writer failed to start\n  caused by Error: cannot open the commit log\n" +
      "  caused by ConnectionRefused: connection refused",
  );
});

Deno.test("a cause repeated further down is compared with its own parent, and cycles end the chain", () => {
  const root = new RangeError("disk full");
  const same = new Error("disk full", { cause: root }); // root is contained in this parent
  const top = new Error("snapshot failed", { cause: same });
  assert.equal(
    chainMessage(top),
    "snapshot failed\n  caused by Error: disk full\n  caused by RangeError (message above)",
  );
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  (a as { cause?: unknown }).cause = b;
  assert.equal(chainMessage(a), "a\n  caused by Error: b");
  const empty = new Error("", { cause: undefined });
  empty.name = "Interrupted";
  assert.equal(
    chainMessage(new Error("stopped", { cause: empty })),
    "stopped\n  caused by Interrupted: ",
  );
});

Deno.test("a reported task failure carries the SuppressRestartsError subclass, so the job fails naming it once", () => {
  const root = new DisabledError();
  const task = new Error(`Subtask Sink (1/1) [v0#0, attempt 2] of job j failed: ${root.message}`, {
    cause: root,
  });
  const info = errorInfo(task);
  assert.deepEqual(info.suppressedBy, { name: "DisabledError", message: root.message });
  const local = new TaskFailureError("v0", 0, 2, info);
  assert.equal(local.name, "TaskFailureError");
  assert.ok(!(local instanceof RemoteTaskError));
  const decision = createRestartBackoff(RestartStrategies.fixedDelay(3, 0)).onFailure(0, local);
  assert.deepEqual(decision, {
    kind: "fail",
    reason: `without restarts: DisabledError: ${root.message}`,
    suppressed: true,
  });
});

Deno.test("a relayed report whose text already names its cause's class does not name it again", () => {
  const root = new DisabledError();
  const task = new Error(`Subtask Sink (1/1) [v0#0, attempt 0] of job j failed: ${root.message}`, {
    cause: root,
  });
  const local = new TaskFailureError("v0", 0, 0, errorInfo(task));
  const text = chainMessage(new Error("Job j failed", { cause: local }));
  assert.equal(text.split("caused by DisabledError").length - 1, 1, text);
  assert.equal(text.split(root.message).length - 1, 1, text);
});

Deno.test("a job's failure text names the task's error once, not the relay's class, and keeps the resume hint on its first line", () => {
  const root = new RangeError("bad record 2");
  const task = new Error(`Subtask Map (1/1) [v0#0, attempt 0] of job j failed: ${root.message}`, {
    cause: root,
  });
  task.name = "TaskFailedError";
  const relayed = new TaskFailureError("v0", 0, 0, errorInfo(task));
  assert.equal(describeError(relayed), relayed.message);
  assert.match(describeError(new RangeError("x")), /^RangeError: x$/);
  const decision = createRestartBackoff(RestartStrategies.noRestart()).onFailure(0, relayed);
  assert.equal(decision.kind, "fail");
  const reason = decision.kind === "fail" ? decision.reason : "";
  const job = new Error(
    `Job j failed: ${appendToFirstLine(reason, "; it has no completed checkpoint")}`,
    { cause: relayed },
  );
  assert.equal(
    chainMessage(job),
    "Job j failed: Restart strategy none does not restart: TaskFailedError: Subtask Map (1/1) " +
      "[v0#0, attempt 0] of job j failed: bad record 2; it has no completed checkpoint\n" +
      "  caused by RangeError (message above)",
  );
});

Deno.test("appendToFirstLine adds before the caused-by lines, or at the end of one line", () => {
  assert.equal(appendToFirstLine("a\n  caused by B: c", "; d"), "a; d\n  caused by B: c");
  assert.equal(appendToFirstLine("a", "; d"), "a; d");
});
