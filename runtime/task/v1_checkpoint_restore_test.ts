/**
 * A checkpoint written by Weir before metadata version 2 (one keyed and one
 * operator file per subtask, `_metadata` version 1) still restores: read from
 * a real local checkpoint directory, through `readSubtaskRestore`, into a
 * keyed operator whose heap backend reads the keyed part as a `keyed` handle.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { decode, encode } from "../actor/codec.ts";
import type { AggregateFunction } from "../api/functions.ts";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { JobVertex } from "../graph/job_graph.ts";
import { KeyGroupRange } from "../state/key_group.ts";
import { WATERMARK_FLOORS_KEY } from "../time/watermark.ts";
import { OperatorTestHarness } from "./operators/_operator_test_harness.ts";
import type { OperatorRestore } from "./operators/operator.ts";
import { AggregateOperator } from "./operators/transform_operators.ts";
import { readSubtaskRestore } from "./subtask_state.ts";

const sum: AggregateFunction<number, number, number> = {
  createAccumulator: () => 0,
  add: (v, acc) => acc + v,
  getResult: (acc) => acc,
  merge: (a, b) => a + b,
};

function sumOperator(restore?: OperatorRestore) {
  return OperatorTestHarness.open((env, output) =>
    new AggregateOperator({
      uid: "sum",
      name: "Aggregate",
      fn: sum as AggregateFunction<unknown, unknown, unknown>,
      env,
      output,
      keySelector: (v) => `k${(v as number) % 2}`,
    }), restore === undefined ? {} : { restore });
}

Deno.test("a version-1 checkpoint on disk restores keyed state and the watermark floor into a keyed operator", async () => {
  // The canonical keyed snapshot, as the version-1 keyed file held it per uid.
  const before = await sumOperator();
  for (const v of [1, 2, 3, 4]) before.processElement(v, undefined); // k1: 4, k0: 6
  const canonical = decode(encode((await before.snapshot()).keyed));

  const dir = await Deno.makeTempDir({ prefix: "weir-v1-restore-" });
  try {
    const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
    const keyed = await storage.writeState(
      "old-job",
      3,
      "v1-0-a0.keyed",
      encode({ sum: { keyed: canonical } }),
    );
    const op = await storage.writeState(
      "old-job",
      3,
      "v1-0-a0.op",
      encode({ [WATERMARK_FLOORS_KEY]: { sum: 1_234 } }),
    );
    await Deno.writeTextFile(
      join(dir, "old-job", "chk-3", "_metadata"),
      JSON.stringify({
        version: 1,
        jobId: "old-job",
        jobName: "sums",
        checkpointId: 3,
        kind: "checkpoint",
        triggeredAt: 1,
        completedAt: 2,
        attempt: 0,
        totalBytes: keyed.bytes + op.bytes,
        vertices: [{
          vertexId: "v1",
          operatorUids: ["sum"],
          parallelism: 1,
          maxParallelism: 128,
          subtasks: [{
            subtask: 0,
            keyedHandle: keyed,
            operatorHandle: op,
            keyGroupRange: [0, 127],
            stateUids: ["sum"],
          }],
        }],
      }),
    );
    const meta = await storage.readMetadata("old-job", 3);
    assert.equal(meta.version, 2, "read as version 2");
    const restores = await readSubtaskRestore({
      meta,
      read: (h) => storage.readState("old-job", h),
      vertex: { operators: [{ uid: "sum" }], parallelism: 1 } as unknown as JobVertex,
      subtask: 0,
      keyGroupRange: new KeyGroupRange(0, 127),
    });
    const restore = restores.get("sum")!;
    assert.equal(restore.watermark, 1_234);
    const after = await sumOperator(restore);
    after.processElement(5, undefined);
    after.processElement(6, undefined);
    assert.deepEqual(after.values(), [9, 12], "k1: 4 + 5, k0: 6 + 6");
    // Taken again, it is a version-2 snapshot of the same state.
    const again = await after.snapshot(4);
    assert.deepEqual(again.handles.map((h) => h.kind).sort(), ["keyed", "watermark"]);
    assert.equal(again.watermark, 1_234);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
