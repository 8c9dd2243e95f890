/**
 * Unit tests of the recovery benchmark's breakdown: reading the
 * coordinator's structured log events and the job's marks, and the phases
 * computed from them. The log is written with `runtime/log.ts`'s own
 * `formatLogLine`, so a change of the JSON format shows here.
 *
 * @module
 */

import assert from "node:assert/strict";
import { formatLogLine, type LogEvent, type LogLevel } from "../runtime/log.ts";
import { breakdown, checkpointLines, parseLog, parseMarks } from "./recovery_breakdown.ts";
import { MARK_PREFIX, type RecoveryMark } from "./jobs/recovery_job.ts";

/** One JSON log line at `time` (seconds after 2026-01-01T00:00:00Z). */
function line(seconds: number, level: LogLevel, message: string, event?: LogEvent): string {
  return formatLogLine({
    format: "json",
    time: new Date(Date.parse("2026-01-01T00:00:00.000Z") + seconds * 1000),
    level,
    component: "coordinator",
    message,
    event,
  });
}

const checkpoint = (seconds: number, id: number, durationMs: number, asyncMs: number) =>
  line(seconds, "info", `job j1: checkpoints ... latest #${id}`, {
    name: "checkpoint-completed",
    jobId: "j1",
    checkpointId: id,
    durationMs,
    bytes: 50_000_000 + id,
    syncMs: 20,
    asyncMs,
    alignmentMs: 0,
  });
const deploying = (seconds: number, attempt: number) =>
  line(seconds, "info", `job j1 'x': deploying attempt ${attempt}`, {
    name: "attempt-deploying",
    jobId: "j1",
    attempt,
    subtasks: 4,
    checkpointId: 2,
  });
const running = (seconds: number, attempt: number) =>
  line(seconds, "info", `job j1: attempt ${attempt} running`, {
    name: "attempt-running",
    jobId: "j1",
    attempt,
  });

const LOG = [
  "weir coordinator: listening on nats://127.0.0.1:1",
  line(1, "info", "job j1 'x' submitted", { name: "job-submitted", jobId: "j1", jobName: "x" }),
  checkpoint(5, 1, 300, 250),
  checkpoint(6, 2, 310, 260),
  line(7.5, "warn", "worker w1 lost (another one)", {
    name: "worker-lost",
    workerId: "w1",
    pid: 9,
    reason: "x",
  }),
  line(7.6, "warn", "worker w0 lost: whatever the wording", {
    name: "worker-lost",
    workerId: "w0",
    pid: 7,
    reason: "sent no heartbeat for 1100 ms",
  }),
  line(7.6, "warn", "job j1: attempt 0 failed: WorkerLostError: ..."),
  deploying(7.63, 1),
  running(9, 1),
  checkpoint(10.5, 4, 500, 400),
];

const KILL_MS = Date.parse("2026-01-01T00:00:07.000Z");

const MARKS: RecoveryMark[] = [
  { ev: "open", att: 0, sub: 0, pid: 7, restored: false, initMs: 1, ms: 2 },
  { ev: "open", att: 1, sub: 0, pid: 8, restored: true, initMs: KILL_MS + 1_500, ms: 0 },
  { ev: "open", att: 1, sub: 1, pid: 8, restored: true, initMs: KILL_MS + 1_800, ms: 0 },
];

Deno.test("breakdown() splits a recovery into phases from the coordinator's events and the marks", () => {
  const output = `noise\n${MARKS.map((m) => MARK_PREFIX + JSON.stringify(m)).join("\n")}\n`;
  assert.deepEqual(parseMarks(output), MARKS);
  const log = parseLog(LOG.join("\n"));
  assert.equal(log.length, 9);
  assert.deepEqual(checkpointLines(log).map((c) => [c.id, c.durationMs, c.bytes, c.asyncMs]), [
    [1, 300, 50_000_001, 250],
    [2, 310, 50_000_002, 260],
    [4, 500, 50_000_004, 400],
  ]);
  const b = breakdown({
    coordinatorLog: log,
    marks: MARKS,
    killMs: KILL_MS,
    killedPid: 7,
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
  const input = {
    coordinatorLog: parseLog(LOG.filter((l) => !l.includes("attempt-running")).join("\n")),
    marks: MARKS,
    killMs: KILL_MS,
    killedPid: 7,
    attempt: 1,
    firstArrivalMs: 0,
  };
  assert.throws(() => breakdown(input), /no attempt-running event of attempt 1 after the kill/);
  assert.throws(
    () => breakdown({ ...input, coordinatorLog: parseLog(LOG.join("\n")), killedPid: 8 }),
    /no worker-lost event of pid 8 after the kill/,
  );
  assert.throws(
    () =>
      breakdown({ ...input, coordinatorLog: parseLog(LOG.join("\n")), marks: MARKS.slice(0, 1) }),
    /no keyed subtask of attempt 1/,
  );
});

Deno.test("breakdown() counts an attempt that failed during the recovery in its restart phase", () => {
  const log = parseLog(
    [
      ...LOG.filter((l) => !l.includes("attempt-running")),
      line(8, "warn", "job j1: attempt 1 failed: fenced"),
      deploying(8.1, 2),
      running(9, 2),
    ].sort().join("\n"),
  );
  const marks: RecoveryMark[] = [
    ...MARKS,
    { ev: "open", att: 2, sub: 0, pid: 8, restored: true, initMs: KILL_MS + 1_900, ms: 0 },
  ];
  const b = breakdown({
    coordinatorLog: log,
    marks,
    killMs: KILL_MS,
    killedPid: 7,
    attempt: 2,
    firstArrivalMs: KILL_MS + 3_600,
  });
  assert.deepEqual(
    [b.detectMs, b.restartMs, b.restoreMs, b.openMs, b.firstCheckpointMs, b.totalMs],
    [600, 500, 800, 100, 1500, 3600],
  );
  assert.equal(b.attempt, 2);
});

Deno.test("parseLog() skips text log lines and lines that are not log lines", () => {
  const text = "2026-01-01T00:00:07.600Z WARN cluster worker w0 lost: it sent no heartbeat";
  assert.deepEqual(parseLog(`${text}\n{"not": "a log line"}\n{broken`), []);
});
