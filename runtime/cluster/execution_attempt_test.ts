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

Deno.test("after a region restart the attempt keeps what other subtasks reported and forgets the region's", () => {
  // Sources a#0 (region 0) and a#1 (region 1); sinks b#0, b#1.
  const failed = new ExecutionAttempt({ number: 2, subtasks: 4, sourceSubtasks: 2 });
  for (const key of ["a#0", "a#1", "b#0", "b#1"]) failed.markReady(key);
  failed.markSourceEnded("a#1");
  failed.markSourceEnded("a#0");
  failed.finalCheckpointId = 7;
  const next = failed.afterRegionRestart(3, new Set(["a#0", "b#0"]));
  assert.equal(next.number, 3);
  assert.equal(next.readyCount, 2);
  assert.equal(next.finalCheckpointId, undefined);
  assert.equal(next.markReady("a#0"), false);
  assert.equal(next.markReady("b#0"), true);
  // a#1 ended before the failover and is still ended: a#0 ending again is the last.
  assert.equal(next.markSourceEnded("a#0"), true);
  assert.throws(
    () => next.afterRegionRestart(3, new Set()),
    /must be an integer above 3: current value is 3/,
  );
});

Deno.test("each subtask runs as the attempt it was last deployed with; a fenced region has none", () => {
  const first = new ExecutionAttempt({ number: 0, subtasks: 4, sourceSubtasks: 2 });
  assert.equal(first.attemptOf("a#1"), 0);
  assert.equal(first.taskAttempts(["a#0", "a#1"]), undefined);
  first.fence(["a#0", "b#0"]);
  assert.equal(first.attemptOf("a#0"), undefined);
  assert.equal(first.attemptOf("a#1"), 0);
  const second = first.afterRegionRestart(1, new Set(["a#0", "b#0"]));
  assert.equal(second.attemptOf("a#0"), 1);
  assert.equal(second.attemptOf("a#1"), 0);
  // Region 1 restarts later: region 0 keeps attempt 1.
  const third = second.afterRegionRestart(2, new Set(["a#1", "b#1"]));
  assert.deepEqual(
    [...third.taskAttempts(["a#0", "b#0", "a#1", "b#1"])!],
    [["a#0", 1], ["b#0", 1], ["a#1", 2], ["b#1", 2]],
  );
  // A full failover: every subtask runs as the next number.
  const full = third.next();
  assert.equal(full.number, 3);
  assert.equal(full.attemptOf("a#0"), 3);
  assert.equal(full.taskAttempts(["a#0", "a#1"]), undefined);
});
