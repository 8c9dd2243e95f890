import assert from "node:assert/strict";
import { ExecutionAttempt } from "./execution_attempt.ts";

Deno.test("an attempt is ready, has ended its input and has finished only once every subtask reported, each counted once", () => {
  const attempt = new ExecutionAttempt({ number: 0, subtasks: 3, sourceSubtasks: 1 });
  assert.equal(attempt.markReady("a#0"), false);
  assert.equal(attempt.markReady("a#0"), false);
  assert.equal(attempt.markReady("b#0"), false);
  assert.equal(attempt.readyCount, 2);
  assert.equal(attempt.markReady("b#1"), true);
  assert.equal(attempt.markSourceEnded("a#0"), true);
  assert.equal(attempt.markFinished("b#0"), false);
  assert.equal(attempt.markFinished("b#1"), false);
  assert.equal(attempt.markFinished("a#0"), true);
});

Deno.test("the next attempt has the next number and nothing of the failed one", () => {
  const failed = new ExecutionAttempt({ number: 4, subtasks: 2, sourceSubtasks: 2 });
  failed.markReady("a#0");
  failed.markSourceEnded("a#0");
  failed.finalCheckpointId = 9;
  const next = failed.next();
  assert.equal(next.number, 5);
  assert.equal(next.readyCount, 0);
  assert.equal(next.finalCheckpointId, undefined);
  assert.equal(next.markSourceEnded("a#1"), false);
  assert.equal(next.markReady("a#0"), false);
  assert.equal(failed.number, 4);
  assert.equal(failed.finalCheckpointId, 9);
});
