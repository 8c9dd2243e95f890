/**
 * The pure part of `cluster_recovery.ts`: parses the coordinator's log and
 * the recovery job's marks, and splits a recovery into its phases (see that
 * module's docs for what each phase covers). Performs no I/O.
 *
 * @module
 */

import { MARK_PREFIX, type RecoveryMark } from "./jobs/recovery_job.ts";

/** One line of Weir's log (`<ISO time> <LEVEL> <component> <message>`). */
export interface LogLine {
  /** Its time, in epoch ms. */
  readonly ms: number;
  /** `DEBUG`, `INFO`, `WARN` or `ERROR`. */
  readonly level: string;
  /** The logger's component (`coordinator`, `cluster`, `worker`, ...). */
  readonly component: string;
  /** The rest of the line. */
  readonly message: string;
}

const LOG_LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) (DEBUG|INFO|WARN|ERROR) (\S+) (.*)$/;

/** The log lines of a process's output, in order (other lines are skipped). */
export function parseLog(output: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of output.split("\n")) {
    const m = LOG_LINE.exec(text);
    if (m) lines.push({ ms: Date.parse(m[1]!), level: m[2]!, component: m[3]!, message: m[4]! });
  }
  return lines;
}

/** The {@linkcode RecoveryMark}s printed in a process's output, in order. */
export function parseMarks(output: string): RecoveryMark[] {
  return output.split("\n").filter((l) => l.startsWith(MARK_PREFIX))
    .map((l) => JSON.parse(l.slice(MARK_PREFIX.length)) as RecoveryMark);
}

/** A checkpoint completion, as the coordinator's summary line tells it. */
export interface CheckpointLine {
  /** When it was logged (epoch ms). */
  readonly ms: number;
  /** The checkpoint id. */
  readonly id: number;
  /** Trigger to completion, in ms. */
  readonly durationMs: number;
  /** Its size as logged (`50.3 MiB`). */
  readonly size: string;
  /** The longest synchronous part of a subtask, in ms. */
  readonly syncMs: number;
  /** The longest asynchronous part (upload) of a subtask, in ms. */
  readonly asyncMs: number;
}

const SUMMARY =
  /checkpoints: .*; latest #(\d+) in (\d+) ms, ([\d.]+ \w+) \(sync (\d+) ms, async (\d+) ms/;

/** The checkpoint completions of a coordinator's log, in order. */
export function checkpointLines(log: readonly LogLine[]): CheckpointLine[] {
  const out: CheckpointLine[] = [];
  for (const line of log) {
    const m = SUMMARY.exec(line.message);
    if (!m || out.at(-1)?.id === Number(m[1])) continue;
    out.push({
      ms: line.ms,
      id: Number(m[1]),
      durationMs: Number(m[2]),
      size: m[3]!,
      syncMs: Number(m[4]),
      asyncMs: Number(m[5]),
    });
  }
  return out;
}

/** The phases of one recovery, in ms (see the module docs of `cluster_recovery.ts`). */
export interface Breakdown {
  /** Kill → the coordinator declares the worker lost. */
  readonly detectMs: number;
  /** Lost → deployment of the recovering attempt (including attempts that failed in between). */
  readonly restartMs: number;
  /** Deployment → the last keyed subtask's state is loaded. */
  readonly restoreMs: number;
  /** State loaded → every subtask of the recovering attempt ready (running). */
  readonly openMs: number;
  /** Running → the first checkpoint of the recovering attempt completed. */
  readonly firstCheckpointMs: number;
  /** That completion → the first committed record of the recovering attempt arrives. */
  readonly commitMs: number;
  /** Kill → that arrival. */
  readonly totalMs: number;
  /** The recovering attempt. */
  readonly attempt: number;
  /** The checkpoint it restored from (NaN when it started from scratch). */
  readonly restoredFrom: number;
  /** The last checkpoint completed before the kill. */
  readonly before: CheckpointLine;
  /** The first checkpoint of the recovering attempt. */
  readonly after: CheckpointLine;
}

/**
 * Splits a recovery into phases.
 * @param input the coordinator's log, the job's marks, the kill's time, the
 *   recovering attempt (that of the first committed record after the kill
 *   from an attempt newer than the killed one) and that record's arrival
 *   time, in wall-clock ms.
 * @throws {Error} naming the missing event when the log or the marks lack one.
 */
export function breakdown(input: {
  readonly coordinatorLog: readonly LogLine[];
  readonly marks: readonly RecoveryMark[];
  readonly killMs: number;
  readonly attempt: number;
  readonly firstArrivalMs: number;
}): Breakdown {
  const { coordinatorLog: log, marks, killMs, attempt, firstArrivalMs } = input;
  const find = (what: string, test: (l: LogLine) => boolean) => {
    const line = log.find((l) => l.ms >= Math.floor(killMs) && test(l));
    if (!line) throw new Error(`the coordinator did not log ${what} after the kill`);
    return line;
  };
  const lost = find("a lost worker", (l) => / lost: no heartbeat for \d+ ms/.test(l.message));
  const deploy = find(
    `the deployment of attempt ${attempt}`,
    (l) => l.message.includes(`deploying attempt ${attempt} `),
  );
  const running = find(
    `attempt ${attempt} running`,
    (l) => l.message.endsWith(`: attempt ${attempt} running`),
  );
  const restoredFrom = Number(/ from checkpoint (\d+)/.exec(deploy.message)?.[1] ?? NaN);
  const opens = marks.filter((m) => m.ev === "open" && m.att === attempt);
  if (opens.length === 0) {
    throw new Error(`no keyed subtask of attempt ${attempt} printed its open mark`);
  }
  const restored = Math.max(...opens.map((m) => m.ev === "open" ? m.initMs : 0));
  const checkpoints = checkpointLines(log);
  const before = checkpoints.findLast((c) => c.ms < killMs);
  const after = checkpoints.find((c) => c.ms >= running.ms);
  if (!before) throw new Error("no checkpoint completed before the kill");
  if (!after) throw new Error(`no checkpoint of attempt ${attempt} completed`);
  return {
    detectMs: lost.ms - killMs,
    restartMs: deploy.ms - lost.ms,
    restoreMs: restored - deploy.ms,
    openMs: running.ms - restored,
    firstCheckpointMs: after.ms - running.ms,
    commitMs: firstArrivalMs - after.ms,
    totalMs: firstArrivalMs - killMs,
    attempt,
    restoredFrom,
    before,
    after,
  };
}
