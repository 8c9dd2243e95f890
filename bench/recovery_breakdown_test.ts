/**
 * Unit tests of the recovery benchmark's breakdown: parsing the
 * coordinator's log and the job's marks, and the phases computed from them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { breakdown, checkpointLines, parseLog, parseMarks } from "./recovery_breakdown.ts";
import { MARK_PREFIX, type RecoveryMark } from "./jobs/recovery_job.ts";

const LOG = `weir coordinator: listening on nats://127.0.0.1:1
2026-01-01T00:00:01.000Z INFO cluster job j1 'x' submitted from file:///job.ts
2026-01-01T00:00:05.000Z INFO coordinator job j1: checkpoints: 1 triggered, 1 completed, 0 failed, 0 in progress; latest #1 in 300 ms, 50.0 MiB (sync 20 ms, async 250 ms, alignment 0 ms)
2026-01-01T00:00:06.000Z INFO coordinator job j1: checkpoints: 2 triggered, 2 completed, 0 failed, 0 in progress; latest #2 in 310 ms, 50.1 MiB (sync 21 ms, async 260 ms, alignment 1 ms)
2026-01-01T00:00:07.600Z WARN cluster worker w0 (h, pid 7) lost: no heartbeat for 1100 ms
2026-01-01T00:00:07.600Z WARN coordinator job j1: attempt 0 failed: WorkerLostError: ...
2026-01-01T00:00:07.620Z WARN coordinator job j1: restarting as attempt 1 (restart 1) from checkpoint 2
2026-01-01T00:00:07.630Z INFO coordinator job j1 'x': deploying attempt 1 (4 subtasks) from checkpoint 2
2026-01-01T00:00:09.000Z INFO coordinator job j1: attempt 1 running
2026-01-01T00:00:10.500Z INFO coordinator job j1: checkpoints: 4 triggered, 3 completed, 1 failed, 0 in progress; latest #4 in 500 ms, 50.2 MiB (sync 30 ms, async 400 ms, alignment 0 ms)`;

const KILL_MS = Date.parse("2026-01-01T00:00:07.000Z");

const MARKS: RecoveryMark[] = [
  { ev: "open", att: 0, sub: 0, pid: 7, restored: false, initMs: 1, ms: 2 },
  { ev: "open", att: 1, sub: 0, pid: 8, restored: true, initMs: KILL_MS + 1_500, ms: 0 },
  { ev: "open", att: 1, sub: 1, pid: 8, restored: true, initMs: KILL_MS + 1_800, ms: 0 },
];

Deno.test("breakdown() splits a recovery into phases from the coordinator's log and the marks", () => {
  const output = `noise\n${MARKS.map((m) => MARK_PREFIX + JSON.stringify(m)).join("\n")}\n`;
  assert.deepEqual(parseMarks(output), MARKS);
  const log = parseLog(LOG);
  assert.equal(log.length, 9);
  assert.deepEqual(checkpointLines(log).map((c) => [c.id, c.durationMs, c.size, c.asyncMs]), [
    [1, 300, "50.0 MiB", 250],
    [2, 310, "50.1 MiB", 260],
    [4, 500, "50.2 MiB", 400],
  ]);
  const b = breakdown({
    coordinatorLog: log,
    marks: MARKS,
    killMs: KILL_MS,
    attempt: 1,
    firstArrivalMs: KILL_MS + 3_600,
  });
  assert.deepEqual(
    [b.detectMs, b.restartMs, b.restoreMs, b.openMs, b.firstCheckpointMs, b.commitMs, b.totalMs],
    [600, 30, 1170, 200, 1500, 100, 3600],
  );
  assert.equal(b.restoredFrom, 2);
  assert.equal(b.before.id, 2);
  assert.equal(b.after.id, 4);
});

Deno.test("breakdown() names the event the coordinator did not log", () => {
  const log = parseLog(LOG.replace(/.*attempt 1 running\n/, ""));
  assert.throws(
    () =>
      breakdown({
        coordinatorLog: log,
        marks: MARKS,
        killMs: KILL_MS,
        attempt: 1,
        firstArrivalMs: 0,
      }),
    /did not log attempt 1 running after the kill/,
  );
  assert.throws(
    () =>
      breakdown({
        coordinatorLog: parseLog(LOG),
        marks: MARKS.slice(0, 1),
        killMs: KILL_MS,
        attempt: 1,
        firstArrivalMs: 0,
      }),
    /no keyed subtask of attempt 1/,
  );
});

Deno.test("breakdown() counts an attempt that failed during the recovery in its restart phase", () => {
  const log = parseLog(
    LOG.replace(
      /.*attempt 1 running\n/,
      `2026-01-01T00:00:08.000Z WARN coordinator job j1: attempt 1 failed: fenced
2026-01-01T00:00:08.100Z INFO coordinator job j1 'x': deploying attempt 2 (4 subtasks) from checkpoint 2
2026-01-01T00:00:09.000Z INFO coordinator job j1: attempt 2 running\n`,
    ),
  );
  const marks: RecoveryMark[] = [
    ...MARKS,
    { ev: "open", att: 2, sub: 0, pid: 8, restored: true, initMs: KILL_MS + 1_900, ms: 0 },
  ];
  const b = breakdown({
    coordinatorLog: log,
    marks,
    killMs: KILL_MS,
    attempt: 2,
    firstArrivalMs: KILL_MS + 3_600,
  });
  assert.deepEqual(
    [b.detectMs, b.restartMs, b.restoreMs, b.openMs, b.firstCheckpointMs, b.totalMs],
    [600, 500, 800, 100, 1500, 3600],
  );
  assert.equal(b.attempt, 2);
});
