import assert from "node:assert/strict";
import { replayChangelog } from "./replay.ts";
import type { ChangelogSegment, SegmentState } from "./changelog_segment.ts";
import type { KeyedStateSnapshot } from "../keyed_state_snapshot.ts";

function segment(checkpointId: number, states: Record<string, SegmentState>, capturedAt = 0) {
  return {
    format: "weir-changelog",
    version: 1,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    checkpointId,
    seq: 0,
    capturedAt,
    states,
  } as const satisfies ChangelogSegment;
}

const base: KeyedStateSnapshot = {
  version: 2,
  maxParallelism: 128,
  keyGroupRange: [0, 127],
  states: {
    l: {
      kind: "list",
      ttl: false,
      keyGroups: [{
        keyGroup: 3,
        keys: ["a", "b"],
        values: [[1], [2]],
        namespaces: [{ namespace: "w", keys: ["a"], values: [[9]] }],
      }],
    },
    m: {
      kind: "map",
      ttl: true,
      keyGroups: [{
        keyGroup: 4,
        keys: ["a"],
        values: [[["x", "y"], [1, 2]]],
        timestamps: [[5, 6]],
      }],
    },
  },
};

Deno.test("replayChangelog appends, resets and removes list entries in segment order, per namespace", () => {
  const out = replayChangelog({
    bases: [base],
    segments: [
      segment(1, {
        l: { kind: "list", ttl: false, changes: [[3, "a", "", 0, [3]], [3, "a", "w", 1, []]] },
      }),
      segment(2, {
        l: { kind: "list", ttl: false, changes: [[3, "a", "", 0, [4]], [3, "b", "", 1, [7]]] },
      }),
    ],
    keyGroupRange: [0, 127],
    maxParallelism: 128,
  });
  assert.equal(out.length, 1); // nothing added outside the base
  assert.deepEqual(out[0]!.states.l!.keyGroups, [
    { keyGroup: 3, keys: ["a", "b"], values: [[1, 3, 4], [7]] },
  ]);
  assert.deepEqual(base.states.l!.keyGroups[0]!.values, [[1], [2]]); // the base is not modified
});

Deno.test("replayChangelog applies map puts and removes per user key with their access times, and drops what had expired at capture", () => {
  const out = replayChangelog({
    bases: [base],
    segments: [
      segment(1, {
        m: {
          kind: "map",
          ttl: true,
          ttlMs: 100,
          changes: [
            [4, "a", "", 0, ["z", "w"], [3, 4], ["x"], [50, 1]],
            [9, "new", "", 1, ["k"], [1], [], [60]],
          ],
        },
      }, 110),
    ],
    keyGroupRange: [0, 127],
    maxParallelism: 128,
  });
  assert.deepEqual(out[0]!.states.m!.keyGroups, [
    { keyGroup: 4, keys: ["a"], values: [[["y", "z"], [2, 3]]], timestamps: [[6, 50]] },
  ]);
  assert.deepEqual(out[1]!.states.m, {
    kind: "map",
    ttl: true,
    keyGroups: [{ keyGroup: 9, keys: ["new"], values: [[["k"], [1]]], timestamps: [[60]] }],
  });
});

Deno.test("replayChangelog keeps only the restoring key groups and refuses a state whose kind changed", () => {
  const seg = segment(1, {
    v: { kind: "value", ttl: false, changes: [[3, "a", "", 1, 1], [100, "b", "", 1, 2]] },
  });
  const out = replayChangelog({
    bases: [],
    segments: [seg],
    keyGroupRange: [0, 63],
    maxParallelism: 128,
  });
  assert.deepEqual(out[0]!.states.v!.keyGroups, [{ keyGroup: 3, keys: ["a"], values: [1] }]);
  assert.throws(
    () =>
      replayChangelog({
        bases: [base],
        segments: [segment(1, { l: { kind: "value", ttl: false, changes: [] } })],
        keyGroupRange: [0, 127],
        maxParallelism: 128,
      }),
    /keyed state 'l': it is list state in the materialized snapshot but value state in the changelog/,
  );
});
