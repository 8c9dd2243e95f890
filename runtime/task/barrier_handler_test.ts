import assert from "node:assert/strict";
import { AlignedBarrierHandler } from "./barrier_handler.ts";
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

const UNBLOCK: BarrierAction = { kind: "unblockAll" };

Deno.test("AlignedBarrierHandler triggers a single-channel task on the barrier without blocking", () => {
  const h = new AlignedBarrierHandler(1);
  assert.deepEqual(h.onBarrier(0, 1, 50), [trigger(1, 50, 0)]);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.isAligning, false);
  assert.equal(h.state, "waiting-for-first-barrier");
  assert.deepEqual(h.onBarrier(0, 2, 60), [trigger(2, 60, 0)]);
});

Deno.test("AlignedBarrierHandler blocks each channel until every channel delivered the barrier", () => {
  const h = new AlignedBarrierHandler(3);
  assert.deepEqual(h.onBarrier(1, 1, 100), [{ kind: "block", channel: 1 }]);
  assert.equal(h.isAligning, true);
  assert.equal(h.state, "collecting-barriers");
  assert.equal(h.pendingCheckpointId, 1);
  assert.equal(h.currentAlignmentDurationMs(104), 4);
  assert.deepEqual(h.onBarrier(0, 1, 105), [{ kind: "block", channel: 0 }]);
  assert.deepEqual(h.blockedChannels, [0, 1]);
  assert.deepEqual(h.onBarrier(2, 1, 130), [trigger(1, 100, 30), UNBLOCK]);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.isAligning, false);
  assert.equal(h.pendingCheckpointId, undefined);
  assert.equal(h.lastAlignmentDurationMs, 30);
  assert.equal(h.currentAlignmentDurationMs(200), 0);
});

Deno.test("AlignedBarrierHandler ignores a duplicate barrier from a blocked channel", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 1, 0);
  assert.deepEqual(h.onBarrier(0, 1, 1), []);
  assert.deepEqual(h.blockedChannels, [0]);
  assert.deepEqual(h.onBarrier(1, 1, 2), [trigger(1, 0, 2), UNBLOCK]);
});

Deno.test("AlignedBarrierHandler ignores a barrier of a checkpoint it already triggered", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 1, 0);
  h.onBarrier(1, 1, 1);
  assert.deepEqual(h.onBarrier(1, 1, 2), []);
  assert.deepEqual(h.onBarrier(0, 1, 3), []);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.isAligning, false);
});

Deno.test("AlignedBarrierHandler ignores a barrier older than the latest seen without blocking its channel", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 5, 0);
  assert.deepEqual(h.onBarrier(1, 4, 1), []);
  assert.deepEqual(h.blockedChannels, [0]);
  assert.equal(h.pendingCheckpointId, 5);
  assert.equal(h.latestCheckpointId, 5);
});

Deno.test("AlignedBarrierHandler with skew: a newer barrier on a channel subsumes the alignment in progress", async (t) => {
  // Channel 0 delivers barriers 1 and 2 before channel 1 delivers 1. Channel 0
  // is blocked after barrier 1, so barrier 2 reaches the handler only if the
  // task did not block (or the source skipped 1 on that channel): the handler
  // must abort 1 and start aligning 2.
  await t.step(
    "the newer barrier aborts the older with BARRIER_SUBSUMED and starts a new alignment",
    () => {
      const h = new AlignedBarrierHandler(2);
      assert.deepEqual(h.onBarrier(0, 1, 10), [{ kind: "block", channel: 0 }]);
      assert.deepEqual(h.onBarrier(0, 2, 20), [
        {
          kind: "abort",
          checkpointId: 1,
          reason: CheckpointFailureReason.BARRIER_SUBSUMED,
          decline: true,
        },
        UNBLOCK,
        { kind: "block", channel: 0 },
      ]);
      assert.equal(h.pendingCheckpointId, 2);
      assert.deepEqual(h.blockedChannels, [0]);
      // The late barrier 1 of channel 1 is ignored and does not block it.
      assert.deepEqual(h.onBarrier(1, 1, 25), []);
      assert.deepEqual(h.blockedChannels, [0]);
      // Barrier 2 of channel 1 completes the alignment of 2, timed from its first barrier.
      assert.deepEqual(h.onBarrier(1, 2, 40), [trigger(2, 20, 20), UNBLOCK]);
    },
  );

  await t.step(
    "a task that honours block sees barrier 2 of channel 0 only after checkpoint 1",
    () => {
      // Channel 0: x1 B1 x2 B2 x3; channel 1 is slow: y1 B1 y2 B2. Channel 0 is read first.
      const snapshots = simulate([
        ["x1", 1, "x2", 2, "x3"],
        ["y1", 1, "y2", 2],
      ], () => 0);
      assert.deepEqual(snapshots, [
        { checkpointId: 1, seen: ["x1", "y1"] },
        { checkpointId: 2, seen: ["x1", "x2", "y1", "y2"] },
      ]);
    },
  );
});

type Item = string | number; // a record, or a barrier's checkpoint id

/**
 * Runs a tiny task over queued channels: it executes the handler's actions,
 * never reads a blocked channel, and records which records it had processed
 * at each triggered checkpoint. `pick` chooses among the readable channels.
 */
function simulate(
  channels: Item[][],
  pick: (readable: number) => number,
): Array<{ checkpointId: number; seen: string[] }> {
  const queues = channels.map((c) => [...c]);
  const handler = new AlignedBarrierHandler(queues.length);
  const blocked = new Set<number>();
  const ended = new Set<number>();
  const seen: string[] = [];
  const snapshots: Array<{ checkpointId: number; seen: string[] }> = [];
  const run = (actions: BarrierAction[]) => {
    for (const a of actions) {
      if (a.kind === "block") blocked.add(a.channel);
      else if (a.kind === "unblockAll") blocked.clear();
      else if (a.kind === "triggerCheckpoint") {
        snapshots.push({ checkpointId: a.checkpointId, seen: [...seen].sort() });
      } else throw new Error(`unexpected abort of ${a.checkpointId}`);
    }
  };
  for (let step = 0; step < 1000; step++) {
    const readable = queues.map((_, i) => i).filter((i) => !blocked.has(i) && !ended.has(i));
    if (readable.length === 0) break;
    const channel = readable[pick(readable.length) % readable.length]!;
    const item = queues[channel]!.shift();
    if (item === undefined) {
      ended.add(channel);
      run(handler.onEndOfPartition(channel, step));
    } else if (typeof item === "number") run(handler.onBarrier(channel, item, step));
    else seen.push(item);
  }
  assert.equal(handler.isFinished, true);
  return snapshots;
}

Deno.test("AlignedBarrierHandler snapshots exactly the records before each barrier under any interleaving", () => {
  // A seeded linear congruential generator makes the interleavings reproducible.
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const channels: Item[][] = [
    ["a1", "a2", 1, "a3", 2, "a4", 3],
    ["b1", 1, 2, "b2", "b3", 3, "b4"],
    [1, "c1", 2, 3, "c2"],
  ];
  for (let run = 0; run < 200; run++) {
    const snapshots = simulate(channels, (n) => Math.floor(random() * n));
    assert.deepEqual(snapshots, [
      { checkpointId: 1, seen: ["a1", "a2", "b1"] },
      { checkpointId: 2, seen: ["a1", "a2", "a3", "b1", "c1"] },
      { checkpointId: 3, seen: ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "c1"] },
    ]);
  }
});

Deno.test("AlignedBarrierHandler subsumes through an ignored newer barrier when checkpoint ids skip", () => {
  const h = new AlignedBarrierHandler(3);
  h.onBarrier(0, 1, 0);
  h.onBarrier(1, 1, 0);
  const actions = h.onBarrier(2, 3, 5);
  assert.equal(actions[0]?.kind, "abort");
  assert.deepEqual(actions.slice(1), [UNBLOCK, { kind: "block", channel: 2 }]);
  assert.equal(h.pendingCheckpointId, 3);
});

Deno.test("AlignedBarrierHandler counts an ended channel as having delivered the barrier", async (t) => {
  await t.step("end-of-partition mid-alignment completes the alignment", () => {
    const h = new AlignedBarrierHandler(2);
    h.onBarrier(0, 1, 10);
    assert.deepEqual(h.onEndOfPartition(1, 17), [trigger(1, 10, 7), UNBLOCK]);
    assert.equal(h.isFinished, false);
  });

  await t.step("end-of-partition of one of three channels does not complete it alone", () => {
    const h = new AlignedBarrierHandler(3);
    h.onBarrier(0, 1, 10);
    assert.deepEqual(h.onEndOfPartition(1, 12), []);
    assert.deepEqual(h.blockedChannels, [0]);
    assert.deepEqual(h.onBarrier(2, 1, 15), [trigger(1, 10, 5), UNBLOCK]);
  });

  await t.step(
    "after an end-of-partition the remaining single channel triggers without blocking",
    () => {
      const h = new AlignedBarrierHandler(2);
      assert.deepEqual(h.onEndOfPartition(0, 0), []);
      assert.deepEqual(h.onBarrier(1, 1, 3), [trigger(1, 3, 0)]);
      assert.deepEqual(h.blockedChannels, []);
      assert.deepEqual(h.endedChannels, [0]);
    },
  );

  await t.step("a barrier or a second end-of-partition on an ended channel is ignored", () => {
    const h = new AlignedBarrierHandler(3);
    h.onEndOfPartition(0, 0);
    assert.deepEqual(h.onEndOfPartition(0, 1), []);
    assert.deepEqual(h.onBarrier(0, 1, 2), []);
    assert.equal(h.isAligning, false);
    assert.equal(h.latestCheckpointId, 0);
  });
});

Deno.test("AlignedBarrierHandler triggers when the last live channel ends mid-alignment, then never again", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 4, 0);
  h.onEndOfPartition(0, 1); // the blocked channel's end-of-partition was queued behind the barrier
  assert.equal(h.isAligning, true);
  assert.deepEqual(h.onEndOfPartition(1, 2), [trigger(4, 0, 2), UNBLOCK]);
  assert.equal(h.isFinished, true);
  assert.equal(h.state, "all-inputs-ended");
  assert.deepEqual(h.onBarrier(1, 5, 3), []);
  assert.deepEqual(h.onAbort(5), []);
});

Deno.test("AlignedBarrierHandler finishes without triggering when every channel ends while idle", () => {
  const h = new AlignedBarrierHandler(2);
  assert.deepEqual(h.onEndOfPartition(0, 0), []);
  assert.deepEqual(h.onEndOfPartition(1, 0), []);
  assert.equal(h.isFinished, true);
  assert.deepEqual(h.onBarrier(0, 1, 1), []);
});

Deno.test("AlignedBarrierHandler stops aligning when the coordinator aborts that checkpoint", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 1, 0);
  assert.deepEqual(h.onAbort(1), [
    {
      kind: "abort",
      checkpointId: 1,
      reason: CheckpointFailureReason.ABORTED_BY_COORDINATOR,
      decline: false,
    },
    UNBLOCK,
  ]);
  assert.equal(h.isAligning, false);
  // The rest of checkpoint 1's barriers are ignored.
  assert.deepEqual(h.onBarrier(1, 1, 5), []);
  assert.deepEqual(h.blockedChannels, []);
  // The next checkpoint aligns normally.
  assert.deepEqual(h.onBarrier(1, 2, 6), [{ kind: "block", channel: 1 }]);
});

Deno.test("AlignedBarrierHandler passes the coordinator's abort reason through", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 1, 0);
  const [abort] = h.onAbort(1, CheckpointFailureReason.TIMEOUT);
  assert.equal(abort?.kind === "abort" && abort.reason.code, "TIMEOUT");
});

Deno.test("AlignedBarrierHandler ignores the barriers of a checkpoint aborted before they arrive", () => {
  const h = new AlignedBarrierHandler(2);
  assert.deepEqual(h.onAbort(3), []);
  assert.deepEqual(h.onBarrier(0, 3, 1), []);
  assert.deepEqual(h.onBarrier(1, 3, 2), []);
  assert.deepEqual(h.blockedChannels, []);
  assert.equal(h.latestCheckpointId, 3);
  assert.deepEqual(h.onBarrier(0, 4, 3), [{ kind: "block", channel: 0 }]);
});

Deno.test("AlignedBarrierHandler keeps aligning when the coordinator aborts a newer checkpoint", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 1, 0);
  assert.deepEqual(h.onAbort(2), []);
  assert.equal(h.pendingCheckpointId, 1);
  assert.deepEqual(h.onBarrier(1, 1, 4), [trigger(1, 0, 4), UNBLOCK]);
  // Barrier 2 arrives later: aborted, so it is ignored.
  assert.deepEqual(h.onBarrier(0, 2, 5), []);
  assert.equal(h.isAligning, false);
});

Deno.test("AlignedBarrierHandler ignores a coordinator abort of a checkpoint already triggered or older", () => {
  const h = new AlignedBarrierHandler(2);
  h.onBarrier(0, 2, 0);
  h.onBarrier(1, 2, 1);
  assert.deepEqual(h.onAbort(2), []);
  h.onBarrier(0, 3, 2);
  assert.deepEqual(h.onAbort(1), []);
  assert.equal(h.pendingCheckpointId, 3);
});

Deno.test("AlignedBarrierHandler rejects invalid channels, ids and channel counts", () => {
  assert.throws(
    () => new AlignedBarrierHandler(0),
    /'numChannels' must be a positive integer: current value is 0/,
  );
  const h = new AlignedBarrierHandler(2);
  assert.throws(
    () => h.onBarrier(2, 1, 0),
    /'channel' must be an integer in \[0, 1\]: current value is 2/,
  );
  assert.throws(() => h.onBarrier(-1, 1, 0), RangeError);
  assert.throws(
    () => h.onBarrier(0, 0, 0),
    /'checkpointId' must be a positive integer: current value is 0/,
  );
  assert.throws(() => h.onEndOfPartition(1.5, 0), RangeError);
  assert.throws(() => h.onAbort(-3), RangeError);
});
