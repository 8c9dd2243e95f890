import assert from "node:assert/strict";
import { CheckpointFailureManager, COUNTED_FAILURE_CODES } from "./failure_manager.ts";
import { CheckpointFailureReason } from "./types.ts";
import type { CheckpointFailureCode } from "./types.ts";

const { TIMEOUT, DECLINED } = CheckpointFailureReason;

Deno.test("CheckpointFailureManager fails on the first counted failure by default (Flink's 0)", () => {
  const m = new CheckpointFailureManager();
  assert.equal(m.tolerableFailures, 0);
  assert.deepEqual(m.onFailure({ checkpointId: 7, reason: TIMEOUT }), {
    verdict: "EXCEEDED",
    consecutive: 1,
    message: "Exceeded checkpoint tolerable failure threshold (0): " +
      "checkpoint 7 expired before completing",
  });
  assert.equal(m.consecutiveFailures, 0, "the count restarts after EXCEEDED");
});

Deno.test("CheckpointFailureManager counts consecutive failures and a success resets the count", () => {
  const m = new CheckpointFailureManager({ tolerableFailures: 2 });
  assert.deepEqual(m.onFailure({ checkpointId: 1, reason: TIMEOUT }), {
    verdict: "TOLERATED",
    consecutive: 1,
  });
  assert.deepEqual(m.onFailure({ checkpointId: 2, reason: DECLINED }), {
    verdict: "TOLERATED",
    consecutive: 2,
  });
  m.onSuccess(3);
  assert.equal(m.consecutiveFailures, 0);
  assert.equal(m.onFailure({ checkpointId: 4, reason: TIMEOUT }).verdict, "TOLERATED");
  assert.equal(m.onFailure({ checkpointId: 5, reason: TIMEOUT }).verdict, "TOLERATED");
  const v = m.onFailure({
    checkpointId: 6,
    reason: DECLINED,
    detail: "by v1#0: Cannot encode a symbol",
  });
  assert.deepEqual(v, {
    verdict: "EXCEEDED",
    consecutive: 3,
    message: "Exceeded checkpoint tolerable failure threshold (2): 3 consecutive checkpoints " +
      "failed, the last one, checkpoint 6, was declined (by v1#0: Cannot encode a symbol)",
  });
});

Deno.test("CheckpointFailureManager counts only failures meaning the checkpoint could not be taken", async (t) => {
  const codes = Object.keys(CheckpointFailureReason) as CheckpointFailureCode[];
  assert.deepEqual(
    codes.filter((c) => COUNTED_FAILURE_CODES.has(c)).sort(),
    ["DECLINED", "FINALIZE_FAILED", "IO_ERROR", "TIMEOUT"],
  );
  for (const code of codes) {
    await t.step(`${code} is ${COUNTED_FAILURE_CODES.has(code) ? "counted" : "ignored"}`, () => {
      const m = new CheckpointFailureManager();
      const v = m.onFailure({ checkpointId: 1, reason: CheckpointFailureReason[code] });
      assert.equal(v.verdict, COUNTED_FAILURE_CODES.has(code) ? "EXCEEDED" : "IGNORED");
      if (v.verdict === "EXCEEDED") {
        assert.match(
          v.message,
          /^Exceeded checkpoint tolerable failure threshold \(0\): checkpoint 1 /,
        );
      }
    });
  }
});

Deno.test("CheckpointFailureManager ignores savepoints, repeats and checkpoints older than the latest success", () => {
  const m = new CheckpointFailureManager({ tolerableFailures: 1 });
  assert.equal(
    m.onFailure({ checkpointId: 1, reason: TIMEOUT, kind: "savepoint" }).verdict,
    "IGNORED",
  );
  assert.equal(m.onFailure({ checkpointId: 2, reason: TIMEOUT }).verdict, "TOLERATED");
  assert.deepEqual(m.onFailure({ checkpointId: 2, reason: DECLINED }), {
    verdict: "IGNORED",
    consecutive: 1,
  });
  m.onSuccess(5);
  m.onSuccess(4); // an older success changes nothing
  assert.equal(m.onFailure({ checkpointId: 4, reason: TIMEOUT }).verdict, "IGNORED");
  assert.equal(m.onFailure({ checkpointId: 6, reason: TIMEOUT }).verdict, "TOLERATED");
  assert.equal(m.onFailure({ checkpointId: 7, reason: TIMEOUT }).verdict, "EXCEEDED");
});

Deno.test("CheckpointFailureManager with Infinity never fails the job", () => {
  const m = new CheckpointFailureManager({ tolerableFailures: Infinity });
  for (let id = 1; id <= 1000; id++) {
    assert.equal(m.onFailure({ checkpointId: id, reason: TIMEOUT }).verdict, "TOLERATED");
  }
  assert.equal(m.consecutiveFailures, 1000);
});

Deno.test("CheckpointFailureManager rejects an invalid tolerance, stating the current value", () => {
  for (const bad of [-1, 1.5, NaN]) {
    assert.throws(
      () => new CheckpointFailureManager({ tolerableFailures: bad }),
      new RegExp(
        `'tolerableFailures' must be a non-negative integer or Infinity: current value is ${bad}`,
      ),
    );
  }
});
