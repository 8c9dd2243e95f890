import assert from "node:assert/strict";
import { AlternatingBarrierHandler } from "./alternating_barrier_handler.ts";
import type { BarrierAction } from "./barrier_handler.ts";
import { CheckpointFailureReason } from "../checkpoint/types.ts";

function unaligned(
  checkpointId: number,
  startedAt: number,
  durationMs: number,
  pendingChannels: number[],
): BarrierAction {
  return {
    kind: "triggerCheckpoint",
    checkpointId,
    alignmentStartedAt: startedAt,
    alignmentDurationMs: durationMs,
    unaligned: true,
    pendingChannels,
  };
}

const UNBLOCK: BarrierAction = { kind: "unblockAll" };

function handler(numChannels: number, alignedCheckpointTimeoutMs = 0) {
  return new AlternatingBarrierHandler({ numChannels, alignedCheckpointTimeoutMs });
}

Deno.test("unaligned handler triggers on the first barrier and names the channels still pending", () => {
  const h = handler(3);
  assert.deepEqual(h.onBarrier(1, 1, 100), [unaligned(1, 100, 0, [0, 2])]);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.state, "collecting-barriers-unaligned");
  assert.equal(h.pendingCheckpointId, 1);
  assert.deepEqual(h.onBarrier(0, 1, 110), []);
  assert.deepEqual(h.onBarrier(0, 1, 111), [], "a duplicate barrier is ignored");
  assert.deepEqual(h.onBarrier(2, 1, 120), []);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.equal(h.pendingCheckpointId, undefined);
  assert.deepEqual(h.onBarrier(2, 1, 130), [], "a barrier of a completed checkpoint is ignored");
});

Deno.test("unaligned handler with one channel triggers with nothing pending", () => {
  const h = handler(1);
  assert.deepEqual(h.onBarrier(0, 4, 5), [unaligned(4, 5, 0, [])]);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.deepEqual(h.onBarrier(0, 5, 6), [unaligned(5, 6, 0, [])]);
});

Deno.test("unaligned handler declines a checkpoint subsumed by a newer barrier", () => {
  const h = handler(2);
  h.onBarrier(0, 1, 0);
  assert.deepEqual(h.onBarrier(0, 2, 10), [
    {
      kind: "abort",
      checkpointId: 1,
      reason: CheckpointFailureReason.BARRIER_SUBSUMED,
      decline: true,
    },
    unaligned(2, 10, 0, [1]),
  ]);
  assert.deepEqual(h.onBarrier(1, 1, 20), [], "the subsumed checkpoint's late barrier is ignored");
  assert.deepEqual(h.onBarrier(1, 2, 30), []);
  assert.equal(h.state, "waiting-for-first-barrier");
});

Deno.test("unaligned handler: a coordinator abort ends the collection and skips later barriers", () => {
  const h = handler(2);
  h.onBarrier(0, 1, 0);
  assert.deepEqual(h.onAbort(1), [{
    kind: "abort",
    checkpointId: 1,
    reason: CheckpointFailureReason.ABORTED_BY_COORDINATOR,
    decline: false,
  }]);
  assert.deepEqual(h.onBarrier(1, 1, 5), []);
  assert.deepEqual(h.onAbort(3), []);
  assert.deepEqual(
    h.onBarrier(0, 3, 6),
    [],
    "an id aborted before its first barrier never triggers",
  );
  assert.deepEqual(h.onBarrier(0, 4, 7), [unaligned(4, 7, 0, [1])]);
});

Deno.test("unaligned handler: an ended channel counts as delivered", () => {
  const h = handler(3);
  assert.deepEqual(h.onEndOfPartition(2, 0), []);
  assert.deepEqual(h.onBarrier(0, 1, 1), [unaligned(1, 1, 0, [1])]);
  assert.deepEqual(h.onEndOfPartition(1, 2), []);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.deepEqual(h.onEndOfPartition(0, 3), []);
  assert.equal(h.state, "all-inputs-ended");
  assert.deepEqual(h.onBarrier(0, 2, 4), []);
});

Deno.test("a savepoint barrier aligns even with unaligned checkpoints on, and never times out", () => {
  const h = handler(2);
  assert.deepEqual(h.onBarrier(0, 1, 0, true), [{ kind: "block", channel: 0 }]);
  assert.equal(h.alignmentTimerDelayMs(10), undefined);
  assert.deepEqual(h.onAlignmentTimer(1e9), []);
  assert.deepEqual(h.onBarrier(1, 1, 40, true), [
    { kind: "triggerCheckpoint", checkpointId: 1, alignmentStartedAt: 0, alignmentDurationMs: 40 },
    UNBLOCK,
  ]);
});

Deno.test("aligned checkpoint completes aligned when every barrier comes before the timeout", () => {
  const h = handler(2, 100);
  assert.deepEqual(h.onBarrier(1, 1, 1000), [{ kind: "block", channel: 1 }]);
  assert.equal(h.alignmentTimerDelayMs(1040), 60);
  assert.deepEqual(h.onAlignmentTimer(1099), []);
  assert.deepEqual(h.onBarrier(0, 1, 1099), [
    {
      kind: "triggerCheckpoint",
      checkpointId: 1,
      alignmentStartedAt: 1000,
      alignmentDurationMs: 99,
    },
    UNBLOCK,
  ]);
  assert.equal(h.alignmentTimerDelayMs(1100), undefined);
});

Deno.test("an alignment that lasts the timeout switches to unaligned and unblocks", () => {
  const h = handler(3, 100);
  h.onBarrier(0, 1, 1000);
  h.onBarrier(2, 1, 1010);
  assert.deepEqual(h.blockedChannels, [0, 2]);
  assert.deepEqual(h.onAlignmentTimer(1100), [unaligned(1, 1000, 100, [1]), UNBLOCK]);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.state, "collecting-barriers-unaligned");
  assert.equal(h.isAligning, false);
  assert.deepEqual(h.onAlignmentTimer(1200), [], "switches once");
  assert.deepEqual(h.onBarrier(1, 1, 1300), []);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.deepEqual(
    h.onBarrier(1, 2, 1400),
    [{ kind: "block", channel: 1 }],
    "the next one aligns again",
  );
});

Deno.test("a barrier that arrives after the timeout switches before it is counted", () => {
  const h = handler(3, 100);
  h.onBarrier(0, 1, 1000);
  // Channel 1's barrier comes late: the switch names channel 2 only as pending.
  assert.deepEqual(h.onBarrier(1, 1, 1500), [
    { kind: "block", channel: 1 },
    unaligned(1, 1000, 500, [2]),
    UNBLOCK,
  ]);
  assert.deepEqual(h.onBarrier(2, 1, 1600), []);
  assert.equal(h.state, "waiting-for-first-barrier");
});

Deno.test("the alternating handler names bad arguments and their values", () => {
  assert.throws(() => handler(0), /'numChannels' must be a positive integer: current value is 0/);
  assert.throws(
    () => handler(1, -1),
    /'alignedCheckpointTimeoutMs' must be a finite number >= 0 \(ms\): current value is -1/,
  );
  const h = handler(2);
  assert.throws(() => h.onBarrier(2, 1, 0), /must be an integer in \[0, 1\]: current value is 2/);
  assert.throws(() => h.onBarrier(0, 0, 0), /'checkpointId' must be a positive integer/);
});

Deno.test("an announced barrier starts the alignment timeout before the barrier is reached", () => {
  const h = handler(2, 100);
  assert.deepEqual(h.onBarrierAnnouncement(1, 1000), []);
  assert.equal(h.state, "collecting-barriers");
  assert.deepEqual(h.blockedChannels, [], "an announcement blocks nothing");
  assert.equal(h.alignmentTimerDelayMs(1030), 70);
  assert.deepEqual(h.onBarrierAnnouncement(1, 1050), [], "a second announcement changes nothing");
  assert.deepEqual(h.onAlignmentTimer(1100), [unaligned(1, 1000, 100, [0, 1])]);
  assert.deepEqual(h.onBarrier(1, 1, 1110), []);
  assert.deepEqual(h.onBarrier(0, 1, 1120), []);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.deepEqual(h.onBarrierAnnouncement(1, 1130), [], "an id already seen is ignored");
  assert.equal(h.state, "waiting-for-first-barrier");
});

Deno.test("an announced checkpoint whose barriers all come in time completes aligned", () => {
  const h = handler(2, 100);
  h.onBarrierAnnouncement(2, 0);
  assert.deepEqual(h.onBarrier(0, 2, 40), [{ kind: "block", channel: 0 }]);
  assert.deepEqual(h.onBarrier(1, 2, 60), [
    { kind: "triggerCheckpoint", checkpointId: 2, alignmentStartedAt: 0, alignmentDurationMs: 60 },
    UNBLOCK,
  ]);
  assert.deepEqual(handler(2, 0).onBarrierAnnouncement(1, 0), [], "no timeout: ignored");
});
