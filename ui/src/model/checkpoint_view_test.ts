import assert from "node:assert/strict";
import type { Checkpoint } from "./api_types.ts";
import { checkpointTimings, configRows, durationSizeSeries } from "./checkpoint_view.ts";

const cp = (id: number, status: string, ms: number): Checkpoint => ({
  id,
  status,
  is_savepoint: false,
  trigger_timestamp: 0,
  latest_ack_timestamp: 0,
  checkpointed_size: id * 10,
  state_size: id * 100,
  end_to_end_duration: ms,
  num_subtasks: 1,
  num_acknowledged_subtasks: 1,
});

Deno.test("durationSizeSeries charts completed checkpoints by id", () => {
  const s = durationSizeSeries([
    cp(3, "COMPLETED", 30),
    cp(1, "COMPLETED", 10),
    cp(2, "FAILED", 5),
  ]);
  assert.deepEqual(s.times, [1, 3]);
  assert.deepEqual(s.lines, [[10, 30], [10, 30], [100, 300]]);
});

Deno.test("configRows labels known keys, reads interval 0 as off and keeps unknown keys", () => {
  const rows = configRows({
    interval: 0,
    timeout: 600_000,
    unaligned_checkpoints: false,
    externalization: { enabled: true, delete_on_cancellation: false },
    something_new: 3,
  });
  assert.deepEqual(rows, [
    ["Checkpoint interval", "Off (periodic checkpoints disabled)"],
    ["Checkpoint timeout", "10m 00s"],
    ["Unaligned checkpoints", "Disabled"],
    ["Persist checkpoints externally", "Enabled (retained on cancellation)"],
    ["something_new", "3"],
  ]);
});

Deno.test("checkpointTimings takes the longest alignment and start delay over all vertices", () => {
  assert.deepEqual(
    checkpointTimings([
      {
        subtasks: [
          { alignment: { duration: 3 }, start_delay: 10 },
          { alignment: { duration: 7 }, start_delay: 2 },
        ],
      },
      { subtasks: [{ alignment: { duration: 5 }, start_delay: 12 }, {}] },
    ]),
    { alignmentMs: 7, startDelayMs: 12 },
  );
  assert.deepEqual(checkpointTimings([{ subtasks: [{}] }]), {
    alignmentMs: undefined,
    startDelayMs: undefined,
  });
});
