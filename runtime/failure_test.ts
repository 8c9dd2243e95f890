import assert from "node:assert/strict";
import {
  classifyFailure,
  InvalidConfigurationError,
  JobGraphMismatchError,
  JobModuleLoadError,
  SuppressRestartsError,
} from "./failure.ts";

Deno.test("classifyFailure() finds a SuppressRestartsError anywhere in the cause chain", () => {
  const root = new JobModuleLoadError({
    moduleUrl: "file:///jobs/job.ts",
    slotId: "w1-s0",
    jobId: "j-1",
    reason: "Uncaught Error: boom",
  });
  const wrapped = new Error("subtask failed", { cause: new Error("relayed", { cause: root }) });
  const found = classifyFailure(wrapped);
  assert.equal(found.type, "NonRecoverableError");
  assert.equal(found.type === "NonRecoverableError" && found.by, root);
  assert.equal(
    root.message,
    "Cannot load job j-1's module file:///jobs/job.ts on slot w1-s0: Uncaught Error: boom",
  );
  assert.equal(root.name, "JobModuleLoadError");
  assert.ok(root instanceof SuppressRestartsError);
});

Deno.test("classifyFailure() calls other errors, non-errors and cyclic chains recoverable", () => {
  assert.equal(classifyFailure(new Error("timeout")).type, "RecoverableError");
  assert.equal(classifyFailure("a string").type, "RecoverableError");
  assert.equal(classifyFailure(undefined).type, "RecoverableError");
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  (a as { cause?: unknown }).cause = b;
  assert.equal(classifyFailure(a).type, "RecoverableError");
});

Deno.test("the unrecoverable error classes keep their names and stay SuppressRestartsErrors", () => {
  for (
    const [error, name] of [
      [new InvalidConfigurationError("bad"), "InvalidConfigurationError"],
      [new JobGraphMismatchError("differs"), "JobGraphMismatchError"],
    ] as const
  ) {
    assert.equal(error.name, name);
    assert.equal(classifyFailure(error).type, "NonRecoverableError");
  }
});
