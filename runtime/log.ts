/**
 * Weir's log: one line per event on stderr, `<time> <LEVEL> <component> <message>`,
 * where messages name the job, the vertex/subtask and the checkpoint id they
 * concern. The level comes from `WEIR_LOG_LEVEL` (`debug`, `info`, `warn`,
 * `error`; default `warn`) or {@linkcode setLogLevel}.
 *
 * ## JSON lines
 *
 * With `WEIR_LOG_FORMAT=json` (or {@linkcode setLogFormat}), each line is
 * instead one JSON object, a {@linkcode JsonLogLine}: the same time, level,
 * component and message, plus, for the few lines that carry one, a
 * machine-readable {@linkcode LogEvent} (`{"name": "worker-lost",
 * "workerId": ...}`). Programs that time the cluster (the recovery
 * benchmark) read these events rather than the messages, whose wording may
 * change. An event's name and fields are a contract: rename one only with
 * its readers.
 *
 * | event                  | logged by   | fields                                             |
 * | ---------------------- | ----------- | -------------------------------------------------- |
 * | `worker-joined`        | cluster     | `workerId`, `pid`, `slots`                         |
 * | `worker-lost`          | cluster     | `workerId`, `pid`, `reason`                        |
 * | `job-submitted`        | cluster     | `jobId`, `jobName`                                 |
 * | `attempt-deploying`    | coordinator | `jobId`, `attempt`, `subtasks`, `checkpointId` (of the restore point, or null) |
 * | `attempt-running`      | coordinator | `jobId`, `attempt`                                 |
 * | `checkpoint-completed` | coordinator | `jobId`, `checkpointId`, `durationMs`, `bytes`, `syncMs`, `asyncMs`, `alignmentMs` |
 * | `rest-listening`       | rest        | `port` (the REST API serves on it)                 |
 * | `rest-unavailable`     | rest        | `port` (it could not be bound: the REST API is off) |
 *
 * @module
 */

/** Log levels, most verbose first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** How lines are printed: `text` (the default) or `json` ({@linkcode JsonLogLine}). */
export type LogFormat = "text" | "json";

/**
 * A machine-readable fact attached to a log line, printed in the JSON
 * format only (see the module docs for the events and their fields).
 */
export interface LogEvent {
  /** What happened, e.g. `worker-lost`. */
  readonly name: string;
  /** Ids (strings) and measurements (numbers, in the unit the field's name says). */
  readonly [field: string]: string | number | boolean | null;
}

/** One line of the JSON format. */
export interface JsonLogLine {
  /** ISO 8601 time with ms (`2026-01-01T00:00:01.000Z`). */
  readonly time: string;
  /** The level. */
  readonly level: LogLevel;
  /** The logger's component (`coordinator`, `cluster`, `worker`, ...). */
  readonly component: string;
  /** The message, as in the text format. */
  readonly message: string;
  /** The line's event, when it has one. */
  readonly event?: LogEvent;
}

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function fromEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no env permission: keep the default
  }
}

function initialLevel(): LogLevel {
  const v = fromEnv("WEIR_LOG_LEVEL");
  return v && v in ORDER ? v as LogLevel : "warn";
}

let level: LogLevel = initialLevel();
let format: LogFormat = fromEnv("WEIR_LOG_FORMAT") === "json" ? "json" : "text";

/** Sets the lowest level printed. */
export function setLogLevel(next: LogLevel): void {
  level = next;
}

/** Sets the format of the lines printed from now on. */
export function setLogFormat(next: LogFormat): void {
  format = next;
}

/**
 * One log line, without its newline: `<time> <LEVEL> <component> <message>`
 * in the `text` format (which leaves `event` out), a {@linkcode JsonLogLine}
 * in the `json` format.
 *
 * @example
 * ```ts
 * import { formatLogLine } from "./log.ts";
 * const line = formatLogLine({
 *   format: "json",
 *   time: new Date(0),
 *   level: "warn",
 *   component: "cluster",
 *   message: "worker w0 lost",
 *   event: { name: "worker-lost", workerId: "w0" },
 * });
 * if (JSON.parse(line).event.name !== "worker-lost") throw new Error(line);
 * ```
 */
export function formatLogLine(line: {
  readonly format: LogFormat;
  readonly time: Date;
  readonly level: LogLevel;
  readonly component: string;
  readonly message: string;
  readonly event?: LogEvent | undefined;
}): string {
  const time = line.time.toISOString();
  if (line.format === "text") {
    return `${time} ${line.level.toUpperCase()} ${line.component} ${line.message}`;
  }
  const json: JsonLogLine = {
    time,
    level: line.level,
    component: line.component,
    message: line.message,
    ...(line.event === undefined ? {} : { event: line.event }),
  };
  return JSON.stringify(json);
}

/** A component's logger; `event` is printed in the JSON format only. */
export interface Logger {
  /** Details for debugging. */
  debug(message: string, event?: LogEvent): void;
  /** Normal events (checkpoints completed, restarts). */
  info(message: string, event?: LogEvent): void;
  /** Something unexpected the job survives. */
  warn(message: string, event?: LogEvent): void;
  /** A failure. */
  error(message: string, event?: LogEvent): void;
}

/** The logger of `component` (e.g. `coordinator`, `worker`). */
export function logger(component: string): Logger {
  const write = (l: LogLevel, message: string, event: LogEvent | undefined) => {
    if (ORDER[l] < ORDER[level]) return;
    console.error(formatLogLine({ format, time: new Date(), level: l, component, message, event }));
  };
  return {
    debug: (m, e) => write("debug", m, e),
    info: (m, e) => write("info", m, e),
    warn: (m, e) => write("warn", m, e),
    error: (m, e) => write("error", m, e),
  };
}
