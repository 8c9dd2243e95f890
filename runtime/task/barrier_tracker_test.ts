import assert from "node:assert/strict";
import { CheckpointBarrierTracker, MAX_CHECKPOINTS_TO_TRACK } from "./barrier_tracker.ts";
import type { BarrierAction } from "./barrier_handler.ts";
import { CheckpointFailureReason } from "../checkpoint/types.ts";

function trigger(checkpointId: number, startedAt: number, durationMs: number): BarrierAction {
  return {
    kind: "triggerCheckpoint",
    checkpointId,
    alignmentStartedAt: startedAt,
    alignmentDurationMs: durationMs,
  };
}

function subsumed(checkpointId: number): BarrierAction {
  return {
    kind: "abort",
    checkpointId,
    reason: CheckpointFailureReason.BARRIER_SUBSUMED,
    decline: true,
  };
}

Deno.test("CheckpointBarrierTracker triggers a single-channel task on the barrier", () => {
  const t = new CheckpointBarrierTracker(1);
  assert.deepEqual(t.onBarrier(0, 1, 50), [trigger(1, 50, 0)]);
  assert.deepEqual(t.onBarrier(0, 2, 60), [trigger(2, 60, 0)]);
  assert.equal(t.state, "no-pending-checkpoint");
});

Deno.test("CheckpointBarrierTracker never blocks a channel while counting barriers", () => {
  const t = new CheckpointBarrierTracker(3);
  assert.deepEqual(t.onBarrier(1, 1, 100), []);
  assert.equal(t.state, "tracking-barriers");
  assert.equal(t.isAligning, false);
  assert.deepEqual(t.blockedChannels, []);
  assert.equal(t.pendingCheckpointId, 1);
  assert.equal(t.currentAlignmentDurationMs(150), 0);
  assert.deepEqual(t.onBarrier(0, 1, 105), []);
  assert.deepEqual(t.blockedChannels, []);
  assert.deepEqual(t.onBarrier(2, 1, 130), [trigger(1, 100, 30)]);
  assert.equal(t.pendingCheckpointId, undefined);
  assert.equal(t.lastAlignmentDurationMs, 30);
});

Deno.test("CheckpointBarrierTracker ignores a duplicate barrier from the same channel", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onBarrier(0, 1, 0);
  assert.deepEqual(t.onBarrier(0, 1, 1), []);
  assert.equal(t.pendingCheckpointId, 1);
  assert.deepEqual(t.onBarrier(1, 1, 2), [trigger(1, 0, 2)]);
});

Deno.test("CheckpointBarrierTracker ignores barriers of a checkpoint it already triggered", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onBarrier(0, 1, 0);
  t.onBarrier(1, 1, 1);
  assert.deepEqual(t.onBarrier(0, 1, 2), []);
  assert.deepEqual(t.onBarrier(1, 1, 3), []);
  assert.equal(t.state, "no-pending-checkpoint");
});

Deno.test("CheckpointBarrierTracker tracks several checkpoints at once and triggers them in order", () => {
  const t = new CheckpointBarrierTracker(2);
  assert.deepEqual(t.onBarrier(0, 1, 0), []);
  assert.deepEqual(t.onBarrier(0, 2, 10), []);
  assert.deepEqual(t.onBarrier(0, 3, 20), []);
  assert.deepEqual(t.pendingCheckpointIds, [1, 2, 3]);
  assert.deepEqual(t.onBarrier(1, 1, 30), [trigger(1, 0, 30)]);
  assert.deepEqual(t.onBarrier(1, 2, 40), [trigger(2, 10, 30)]);
  assert.deepEqual(t.onBarrier(1, 3, 50), [trigger(3, 20, 30)]);
  assert.deepEqual(t.pendingCheckpointIds, []);
});

Deno.test("CheckpointBarrierTracker declines older pending checkpoints that a completed one subsumes", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onBarrier(0, 1, 0);
  t.onBarrier(0, 2, 5);
  // Channel 1 never delivers barrier 1 (its checkpoint was dropped upstream).
  assert.deepEqual(t.onBarrier(1, 2, 9), [subsumed(1), trigger(2, 5, 4)]);
  assert.deepEqual(
    t.onBarrier(1, 1, 10),
    [],
    "a late barrier of the subsumed checkpoint is ignored",
  );
  assert.equal(t.state, "no-pending-checkpoint");
});

Deno.test("CheckpointBarrierTracker ignores a first barrier older than one already seen", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onBarrier(0, 5, 0);
  assert.deepEqual(t.onBarrier(1, 3, 1), []);
  assert.deepEqual(t.pendingCheckpointIds, [5]);
  assert.deepEqual(t.onBarrier(1, 5, 2), [trigger(5, 0, 2)]);
});

Deno.test("CheckpointBarrierTracker counts an ended channel as having delivered every later barrier", async (s) => {
  await s.step("an end completes a pending checkpoint", () => {
    const t = new CheckpointBarrierTracker(3);
    t.onBarrier(0, 1, 0);
    t.onBarrier(1, 1, 0);
    assert.deepEqual(t.onEndOfPartition(2, 7), [trigger(1, 0, 7)]);
    assert.deepEqual(t.endedChannels, [2]);
  });
  await s.step("later barriers need only the live channels", () => {
    const t = new CheckpointBarrierTracker(2);
    assert.deepEqual(t.onEndOfPartition(1, 0), []);
    assert.deepEqual(t.onBarrier(0, 1, 3), [trigger(1, 3, 0)]);
    assert.deepEqual(t.onBarrier(1, 2, 4), [], "a barrier on an ended channel is ignored");
  });
  await s.step("an end completes several pending checkpoints in order", () => {
    const t = new CheckpointBarrierTracker(2);
    t.onBarrier(0, 1, 0);
    t.onBarrier(0, 2, 1);
    assert.deepEqual(t.onEndOfPartition(1, 5), [trigger(1, 0, 5), trigger(2, 1, 4)]);
  });
});

Deno.test("CheckpointBarrierTracker finishes when every channel ended and never triggers again", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onEndOfPartition(0, 0);
  assert.deepEqual(t.onEndOfPartition(1, 1), []);
  assert.equal(t.isFinished, true);
  assert.equal(t.state, "all-inputs-ended");
  assert.deepEqual(t.onEndOfPartition(1, 2), []);
  assert.deepEqual(t.onAbort(4), []);
});

Deno.test("CheckpointBarrierTracker stops tracking a checkpoint the coordinator aborts", () => {
  const t = new CheckpointBarrierTracker(2);
  t.onBarrier(0, 1, 0);
  assert.deepEqual(t.onAbort(1), [{
    kind: "abort",
    checkpointId: 1,
    reason: CheckpointFailureReason.ABORTED_BY_COORDINATOR,
    decline: false,
  }]);
  assert.equal(t.state, "no-pending-checkpoint");
  assert.deepEqual(t.onBarrier(1, 1, 3), [], "its remaining barriers are ignored");
  assert.deepEqual(t.onBarrier(0, 2, 4), []);
  assert.deepEqual(t.onBarrier(1, 2, 5), [trigger(2, 4, 1)]);
});

Deno.test("CheckpointBarrierTracker ignores the barriers of a checkpoint aborted before they arrive", () => {
  const t = new CheckpointBarrierTracker(2);
  assert.deepEqual(t.onAbort(3), []);
  assert.deepEqual(t.onBarrier(0, 3, 0), []);
  assert.deepEqual(t.onBarrier(1, 3, 0), []);
  assert.equal(t.state, "no-pending-checkpoint");
  t.onBarrier(0, 4, 1);
  assert.deepEqual(t.onBarrier(1, 4, 2), [trigger(4, 1, 1)]);
});

Deno.test("CheckpointBarrierTracker ignores a coordinator abort of a checkpoint already triggered", () => {
  const t = new CheckpointBarrierTracker(1);
  t.onBarrier(0, 1, 0);
  assert.deepEqual(t.onAbort(1), []);
  assert.deepEqual(t.onBarrier(0, 2, 1), [trigger(2, 1, 0)]);
});

Deno.test("CheckpointBarrierTracker declines the oldest checkpoint beyond the tracking limit", () => {
  const t = new CheckpointBarrierTracker(2);
  for (let id = 1; id <= MAX_CHECKPOINTS_TO_TRACK; id++) {
    assert.deepEqual(t.onBarrier(0, id, id), []);
  }
  assert.deepEqual(t.onBarrier(0, MAX_CHECKPOINTS_TO_TRACK + 1, 99), [subsumed(1)]);
  assert.equal(t.pendingCheckpointIds.length, MAX_CHECKPOINTS_TO_TRACK);
  assert.deepEqual(t.onBarrier(1, 1, 100), [], "the dropped checkpoint cannot complete any more");
  assert.deepEqual(t.onBarrier(1, 2, 101), [trigger(2, 2, 99)]);
});

type Item = string | number;

/**
 * Feeds every channel's items (records as strings, barriers as ids) in a
 * random interleaving, never blocking a channel, and returns what each
 * snapshot had seen.
 */
function simulate(
  channels: readonly Item[][],
  pick: (n: number) => number,
): { checkpointId: number; seen: string[] }[] {
  const tracker = new CheckpointBarrierTracker(channels.length);
  const positions = channels.map(() => 0);
  const seen: string[] = [];
  const snapshots: { checkpointId: number; seen: string[] }[] = [];
  let step = 0;
  for (;;) {
    const live = positions.flatMap((p, c) => (p < channels[c]!.length ? [c] : []));
    if (live.length === 0) break;
    const channel = live[pick(live.length)]!;
    const item = channels[channel]![positions[channel]!++]!;
    step++;
    const actions = typeof item === "number" ? tracker.onBarrier(channel, item, step) : [];
    if (typeof item === "string") seen.push(item);
    for (const a of actions) {
      assert.ok(a.kind === "triggerCheckpoint", `unexpected action ${a.kind}`);
      snapshots.push({ checkpointId: a.checkpointId, seen: [...seen].sort() });
    }
    if (positions[channel] === channels[channel]!.length) {
      for (const a of tracker.onEndOfPartition(channel, step)) {
        assert.fail(`end of partition after every barrier acted: ${a.kind}`);
      }
    }
  }
  assert.equal(tracker.isFinished, true);
  return snapshots;
}

Deno.test("CheckpointBarrierTracker snapshots at least the records before each barrier under any interleaving", () => {
  // A seeded linear congruential generator makes the interleavings reproducible.
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const channels: Item[][] = [
    ["a1", "a2", 1, "a3", 2, "a4", 3],
    ["b1", 1, 2, "b2", "b3", 3, "b4"],
    [1, "c1", 2, 3, "c2"],
  ];
  const before: Record<number, string[]> = {
    1: ["a1", "a2", "b1"],
    2: ["a1", "a2", "a3", "b1", "c1"],
    3: ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "c1"],
  };
  let snapshotsWithLaterRecords = 0;
  for (let run = 0; run < 200; run++) {
    const snapshots = simulate(channels, (n) => Math.floor(random() * n));
    assert.deepEqual(snapshots.map((s) => s.checkpointId), [1, 2, 3]);
    for (const s of snapshots) {
      for (const record of before[s.checkpointId]!) {
        assert.ok(s.seen.includes(record), `checkpoint ${s.checkpointId} lost ${record}`);
      }
      if (s.seen.length > before[s.checkpointId]!.length) snapshotsWithLaterRecords++;
    }
  }
  // Without alignment, records after a barrier reach the state before the
  // snapshot in some interleavings: the at-least-once trade.
  assert.ok(snapshotsWithLaterRecords > 0);
});

Deno.test("CheckpointBarrierTracker rejects invalid channels, ids and channel counts", () => {
  assert.throws(
    () => new CheckpointBarrierTracker(0),
    /'numChannels' must be a positive integer: current value is 0/,
  );
  const t = new CheckpointBarrierTracker(2);
  assert.throws(
    () => t.onBarrier(2, 1, 0),
    /'channel' must be an integer in \[0, 1\]: current value is 2/,
  );
  assert.throws(
    () => t.onBarrier(0, 0, 0),
    /'checkpointId' must be a positive integer: current value is 0/,
  );
  assert.throws(() => t.onEndOfPartition(-1, 0), /current value is -1/);
  assert.throws(() => t.onAbort(1.5), /current value is 1.5/);
});
