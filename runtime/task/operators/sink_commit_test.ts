import assert from "node:assert/strict";
import { SuppressRestartsError } from "../../failure.ts";
import {
  checkCommitRetryOptions,
  type CommitOutcome,
  decideCommitRound,
  DEFAULT_COMMIT_RETRY,
} from "./sink_commit.ts";

const WHERE = "sink 'out' (uid out) subtask 0/1 attempt 0";
const known: CommitOutcome = { kind: "failed-known", error: new Error("expired") };
const unknown: CommitOutcome = { kind: "failed-unknown", error: new Error("reset") };
const retry: CommitOutcome = { kind: "retry", committable: "c2" };
const ok: CommitOutcome = { kind: "committed" };
const already: CommitOutcome = { kind: "already-committed" };

function decide(outcomes: CommitOutcome[], retriesSoFar = 0) {
  return decideCommitRound({
    requests: outcomes.map((_, i) => ({ checkpointId: i + 1 })),
    outcomes,
    retriesSoFar,
    retry: DEFAULT_COMMIT_RETRY,
    where: WHERE,
  });
}

Deno.test("decideCommitRound puts a known failure before an unknown one before retries", () => {
  const first = decide([retry, unknown, known]);
  assert.equal(first.kind, "fail");
  assert.ok(
    first.kind === "fail" && first.suppressRestarts && first.error instanceof SuppressRestartsError,
  );
  assert.match(first.kind === "fail" ? first.error.message : "", /of checkpoint 3 in sink 'out'/);
  const second = decide([retry, unknown, ok]);
  assert.ok(second.kind === "fail" && !second.suppressRestarts);
  assert.ok(second.kind === "fail" && !(second.error instanceof SuppressRestartsError));
});

Deno.test("decideCommitRound retries only the requests that asked, with the default backoff 100 ms doubling to 1 s", () => {
  const decision = decide([ok, retry, already]);
  assert.deepEqual(decision, {
    kind: "retry",
    remaining: [{ checkpointId: 2, committable: "c2" }],
    delayMs: 100,
    committed: 1,
    alreadyCommitted: 1,
  });
  const delays = Array.from({ length: 10 }, (_, i) => {
    const d = decide([retry], i);
    return d.kind === "retry" ? d.delayMs : -1;
  });
  assert.deepEqual(delays, [100, 200, 400, 800, 1000, 1000, 1000, 1000, 1000, 1000]);
  const exhausted = decide([retry], 10);
  assert.ok(
    exhausted.kind === "fail" && /after 10 retries \(maxRetries\)/.test(exhausted.error.message),
  );
});

Deno.test("decideCommitRound is done when every request committed or had been", () => {
  assert.deepEqual(decide([ok, already, ok]), { kind: "done", committed: 2, alreadyCommitted: 1 });
  assert.deepEqual(decide([]), { kind: "done", committed: 0, alreadyCommitted: 0 });
});

Deno.test("checkCommitRetryOptions names the invalid field and its value", () => {
  assert.throws(
    () => checkCommitRetryOptions({ maxRetries: -1, initialBackoffMs: 0, maxBackoffMs: 0 }),
    /^RangeError: Commit retry 'maxRetries' must be an integer >= 0: current value is -1$/,
  );
  assert.throws(
    () => checkCommitRetryOptions({ maxRetries: 1, initialBackoffMs: 50, maxBackoffMs: 10 }),
    /'maxBackoffMs' must be a finite number >= initialBackoffMs \(50\): current value is 10$/,
  );
});
