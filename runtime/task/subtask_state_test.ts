import assert from "node:assert/strict";
import { encode } from "../actor/codec.ts";
import type { StateHandle } from "../checkpoint/types.ts";
import { parseCheckpointMetadata } from "../checkpoint/metadata.ts";
import { KeyGroupRange } from "../state/key_group.ts";
import { WATERMARK_FLOORS_KEY } from "../time/watermark.ts";
import type { JobVertex } from "../graph/job_graph.ts";
import { operatorRestoreFrom, readSubtaskRestore, watermarkFloor } from "./subtask_state.ts";

Deno.test("the watermark floor is the subtask's own at the same parallelism, the minimum over the old subtasks on a rescale", () => {
  assert.equal(watermarkFloor([500, 300, 400], 3, 0), 500);
  assert.equal(watermarkFloor([500, 300, 400], 3, 2), 400);
  assert.equal(watermarkFloor([500, 300, 400], 2, 0), 300);
  assert.equal(watermarkFloor([500, 300, 400], 4, 3), 300);
  assert.equal(
    watermarkFloor([500, Number.NEGATIVE_INFINITY], 1, 0),
    undefined,
    "an old subtask without a watermark leaves no floor",
  );
  assert.equal(watermarkFloor([Number.NEGATIVE_INFINITY, 300], 2, 0), undefined);
  assert.equal(watermarkFloor([Number.NEGATIVE_INFINITY, 300], 2, 1), 300);
});

/** Blobs by path, and a handle maker that stores them. */
function blobs() {
  const store = new Map<string, Uint8Array>();
  const put = (
    path: string,
    value: unknown,
    rest: Omit<StateHandle, "path" | "bytes" | "shared"> & { shared?: boolean },
  ): StateHandle => {
    const bytes = encode(value);
    store.set(path, bytes);
    return { path, bytes: bytes.byteLength, shared: false, ...rest };
  };
  const reads: string[] = [];
  const read = (h: StateHandle) => {
    reads.push(h.path);
    const bytes = store.get(h.path);
    return bytes ? Promise.resolve(bytes) : Promise.reject(new Error(`no blob ${h.path}`));
  };
  return { put, read, reads };
}

const timersOf = (keyGroup: number) => ({
  eventTime: [{ keyGroup, timers: [{ key: `k${keyGroup}`, timestamp: 5, namespace: "" }] }],
  processingTime: [],
});

Deno.test("a 2 -> 3 restore gives each new subtask the keyed and timer handles that overlap it, operator lists split and floors at their minimum", async () => {
  const { put, read, reads } = blobs();
  const old: StateHandle[][] = [0, 1].map((s) => {
    const range = s === 0 ? [0, 63] as const : [64, 127] as const;
    return [
      put(`chk-4/v1-${s}-a0.keyed-count`, { any: "backend format" }, {
        kind: "keyed",
        uid: "count",
        keyGroupRange: range,
      }),
      put(`chk-4/v1-${s}-a0.timers-count`, timersOf(range[0]), {
        kind: "timers",
        uid: "count",
        keyGroupRange: range,
      }),
      put(`chk-4/v1-${s}-a0.operator-count`, {
        seen: { mode: "split", items: [s * 10, s * 10 + 1] },
      }, {
        kind: "operator",
        uid: "count",
      }),
      put(`chk-4/v1-${s}-a0.watermark-count`, 1000 + s, { kind: "watermark", uid: "count" }),
      put(`chk-4/v1-${s}-a0.operator-other`, { x: { mode: "union", items: [s] } }, {
        kind: "operator",
        uid: "other",
      }),
    ];
  });
  const restore = (subtask: number, range: KeyGroupRange) =>
    operatorRestoreFrom({
      uid: "count",
      checkpointId: 4,
      oldSubtasks: old,
      parallelism: 3,
      subtask,
      keyGroupRange: range,
      read,
    });
  const first = await restore(0, new KeyGroupRange(0, 42));
  assert.deepEqual(first.keyedHandles.map((h) => h.path), ["chk-4/v1-0-a0.keyed-count"]);
  assert.deepEqual(first.timers, [timersOf(0)]);
  assert.equal(first.watermark, 1000, "the minimum over the old subtasks");
  assert.equal(first.checkpointId, 4);
  const middle = await restore(1, new KeyGroupRange(43, 85));
  assert.deepEqual(middle.keyedHandles.map((h) => h.path), [
    "chk-4/v1-0-a0.keyed-count",
    "chk-4/v1-1-a0.keyed-count",
  ]);
  assert.equal(middle.timers.length, 2);
  const items = await Promise.all(
    [0, 1, 2].map(async (s) =>
      (await restore(s, new KeyGroupRange(0, 127))).operator!["seen"]!.items
    ),
  );
  assert.deepEqual(items.flat().sort(), [0, 1, 10, 11], "each list item reaches one new subtask");
  assert.ok(!reads.some((p) => p.endsWith("keyed-count")), "keyed blobs are left to the backend");
  assert.ok(!reads.some((p) => p.endsWith("-other")), "another operator's blobs are not read");
});

Deno.test("two operator-state handles of one old subtask naming the same state are refused, naming the file", async () => {
  const { put, read } = blobs();
  const handles = [
    put("chk-1/a.source-splits-src", { _splits: { mode: "split", items: [1] } }, {
      kind: "source-splits",
      uid: "src",
    }),
    put("chk-1/a.operator-src", { _splits: { mode: "split", items: [2] } }, {
      kind: "operator",
      uid: "src",
    }),
  ];
  await assert.rejects(
    operatorRestoreFrom({
      uid: "src",
      checkpointId: 1,
      oldSubtasks: [handles],
      parallelism: 1,
      subtask: 0,
      keyGroupRange: new KeyGroupRange(0, 127),
      read,
    }),
    /state file chk-1\/a.operator-src holds operator state '_splits' of operator src, which another of its state files holds too/,
  );
});

Deno.test("a watermark blob that is not a number and a channel-state handle are refused, naming the file", async () => {
  const { put, read } = blobs();
  const options = (handles: StateHandle[]) => ({
    uid: "u",
    checkpointId: 1,
    oldSubtasks: [handles],
    parallelism: 1,
    subtask: 0,
    keyGroupRange: new KeyGroupRange(0, 127),
    read,
  });
  await assert.rejects(
    operatorRestoreFrom(options([put("chk-1/w", "soon", { kind: "watermark", uid: "u" })])),
    /state file chk-1\/w holds a watermark of operator u that is not a number: "soon"/,
  );
  await assert.rejects(
    operatorRestoreFrom(options([put("chk-1/c", [], { kind: "channel", uid: "u" })])),
    /state file chk-1\/c holds channel state/,
  );
});

Deno.test("a version-1 checkpoint restores: its whole-subtask files are split per operator, keyed parts handed over as keyed handles", async () => {
  const keyed = { version: 2, maxParallelism: 128, keyGroupRange: [0, 127], states: {} };
  const timers = timersOf(3);
  const keyedFile = encode({ count: { keyed, timers } });
  const opFile = encode({
    count: { seen: { mode: "split", items: [7] } },
    [WATERMARK_FLOORS_KEY]: { count: 1_300, print: 1_400 },
  });
  const files = new Map([["chk-7/v1-0-a2.keyed", keyedFile], ["chk-7/v1-0-a2.op", opFile]]);
  const meta = parseCheckpointMetadata({
    version: 1,
    jobId: "old",
    jobName: "demo",
    checkpointId: 7,
    kind: "checkpoint",
    triggeredAt: 1,
    completedAt: 2,
    attempt: 2,
    totalBytes: keyedFile.byteLength + opFile.byteLength,
    vertices: [{
      vertexId: "v1",
      operatorUids: ["count", "print"],
      parallelism: 1,
      maxParallelism: 128,
      subtasks: [{
        subtask: 0,
        keyedHandle: { path: "chk-7/v1-0-a2.keyed", bytes: keyedFile.byteLength },
        operatorHandle: { path: "chk-7/v1-0-a2.op", bytes: opFile.byteLength },
        keyGroupRange: [0, 127],
        stateUids: ["count"],
      }],
    }],
  });
  const reads: string[] = [];
  const vertex = {
    operators: [{ uid: "count" }, { uid: "print" }, { uid: "new" }],
    parallelism: 1,
  } as unknown as JobVertex;
  const restores = await readSubtaskRestore({
    meta,
    read: (h) => {
      reads.push(h.path);
      return Promise.resolve(files.get(h.path)!);
    },
    vertex,
    subtask: 0,
    keyGroupRange: new KeyGroupRange(0, 127),
  });
  const count = restores.get("count")!;
  assert.deepEqual(count.timers, [timers]);
  assert.deepEqual(count.operator, { seen: { mode: "split", items: [7] } });
  assert.equal(count.watermark, 1_300);
  assert.equal(count.keyedHandles.length, 1);
  const handle = count.keyedHandles[0]!;
  assert.equal(handle.kind, "keyed");
  assert.equal(handle.uid, "count");
  assert.deepEqual(handle.keyGroupRange, [0, 127]);
  const { decode } = await import("../actor/codec.ts");
  assert.deepEqual(
    decode(await count.read(handle)),
    keyed,
    "the reader serves the operator's part",
  );
  assert.equal(restores.get("print")!.watermark, 1_400);
  assert.deepEqual(restores.get("print")!.keyedHandles, []);
  assert.equal(restores.has("new"), false, "an operator the checkpoint does not know starts empty");
  assert.deepEqual(
    reads.sort(),
    ["chk-7/v1-0-a2.keyed", "chk-7/v1-0-a2.op"],
    "each file read once",
  );
});
