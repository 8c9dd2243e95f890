/**
 * The pure part of `cluster_recovery.ts`: reads the coordinator's structured
 * log events and the recovery job's marks, and splits a recovery into its
 * phases (see that module's docs for what each phase covers). Performs no
 * I/O.
 *
 * The coordinator runs with `WEIR_LOG_FORMAT=json`, so each of its log lines
 * is a `JsonLogLine` of `runtime/log.ts`; the breakdown reads only their
 * {@linkcode LogEvent}s (`worker-lost`, `attempt-deploying`,
 * `attempt-running`, `checkpoint-completed`) and their times, never the
 * wording of a message, which may change.
 *
 * @module
 */

import type { JsonLogLine, LogEvent } from "../runtime/log.ts";
import { MARK_PREFIX, type RecoveryMark } from "./jobs/recovery_job.ts";

export type { RecoveryMark };

/** One JSON log line of a process, with its time in epoch ms. */
export interface LogLine {
  /** Its time, in epoch ms. */
  readonly ms: number;
  /** `debug`, `info`, `warn` or `error`. */
  readonly level: string;
  /** The logger's component (`coordinator`, `cluster`, `worker`, ...). */
  readonly component: string;
  /** The message (for people; read `event` instead). */
  readonly message: string;
  /** The line's machine-readable event, when it has one. */
  readonly event?: LogEvent;
}

/**
 * The JSON log lines ({@linkcode JsonLogLine}) of a process's output, in
 * order; other lines (text log lines, marks, banners) are skipped.
 */
export function parseLog(output: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of output.split("\n")) {
    if (!text.startsWith("{")) continue;
    let json: Partial<JsonLogLine>;
    try {
      json = JSON.parse(text) as Partial<JsonLogLine>;
    } catch {
      continue;
    }
    if (typeof json.time !== "string" || typeof json.message !== "string") continue;
    lines.push({
      ms: Date.parse(json.time),
      level: String(json.level),
      component: String(json.component),
      message: json.message,
      ...(json.event === undefined ? {} : { event: json.event }),
    });
  }
  return lines;
}

/** The lines of `log` whose event is named `name`, in order. */
export function eventsNamed(log: readonly LogLine[], name: string): LogLine[] {
  return log.filter((l) => l.event?.name === name);
}

/**
 * Field `field` of `line`'s event as a number.
 * @throws {Error} naming the event and field when it is not a number.
 */
export function numberField(line: LogLine, field: string): number {
  const v = line.event?.[field];
  if (typeof v !== "number") {
    throw new Error(
      `event ${line.event?.name} has no number '${field}': current value is ${JSON.stringify(v)}`,
    );
  }
  return v;
}

/** The {@linkcode RecoveryMark}s printed in a process's output, in order. */
export function parseMarks(output: string): RecoveryMark[] {
  return output.split("\n").filter((l) => l.startsWith(MARK_PREFIX))
    .map((l) => JSON.parse(l.slice(MARK_PREFIX.length)) as RecoveryMark);
}

/** A checkpoint completion, as the coordinator's `checkpoint-completed` event tells it. */
export interface CheckpointLine {
  /** When it was logged (epoch ms). */
  readonly ms: number;
  /** The checkpoint id. */
  readonly id: number;
  /** Trigger to completion, in ms. */
  readonly durationMs: number;
  /** Its size, in bytes. */
  readonly bytes: number;
  /** The longest synchronous part of a subtask, in ms. */
  readonly syncMs: number;
  /** The longest asynchronous part (upload) of a subtask, in ms. */
  readonly asyncMs: number;
}

/** The checkpoint completions of a coordinator's log, in order. */
export function checkpointLines(log: readonly LogLine[]): CheckpointLine[] {
  return eventsNamed(log, "checkpoint-completed").map((l) => ({
    ms: l.ms,
    id: numberField(l, "checkpointId"),
    durationMs: numberField(l, "durationMs"),
    bytes: numberField(l, "bytes"),
    syncMs: numberField(l, "syncMs"),
    asyncMs: numberField(l, "asyncMs"),
  }));
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
 *   pid of the killed worker process, the recovering attempt (that of the
 *   first committed record after the kill from an attempt newer than the
 *   killed one) and that record's arrival time, in wall-clock ms.
 * @throws {Error} naming the missing event when the log or the marks lack one.
 */
export function breakdown(input: {
  readonly coordinatorLog: readonly LogLine[];
  readonly marks: readonly RecoveryMark[];
  readonly killMs: number;
  readonly killedPid: number;
  readonly attempt: number;
  readonly firstArrivalMs: number;
}): Breakdown {
  const { coordinatorLog: log, marks, killMs, killedPid, attempt, firstArrivalMs } = input;
  const find = (what: string, name: string, test: (l: LogLine) => boolean) => {
    const line = eventsNamed(log, name).find((l) => l.ms >= Math.floor(killMs) && test(l));
    if (!line) throw new Error(`the coordinator logged no ${name} event of ${what} after the kill`);
    return line;
  };
  const lost = find(`pid ${killedPid}`, "worker-lost", (l) => l.event?.pid === killedPid);
  const deploy = find(
    `attempt ${attempt}`,
    "attempt-deploying",
    (l) => l.event?.attempt === attempt,
  );
  const running = find(
    `attempt ${attempt}`,
    "attempt-running",
    (l) => l.event?.attempt === attempt,
  );
  const from = deploy.event?.checkpointId;
  const restoredFrom = typeof from === "number" ? from : NaN;
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
