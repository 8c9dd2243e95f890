/**
 * Weir's log: one line per event on stderr, `<time> <LEVEL> <component> <message>`,
 * where messages name the job, the vertex/subtask and the checkpoint id they
 * concern. The level comes from `WEIR_LOG_LEVEL` (`debug`, `info`, `warn`,
 * `error`; default `warn`) or {@linkcode setLogLevel}.
 *
 * @module
 */

/** Log levels, most verbose first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function initialLevel(): LogLevel {
  try {
    const v = Deno.env.get("WEIR_LOG_LEVEL");
    if (v && v in ORDER) return v as LogLevel;
  } catch {
    // no env permission: keep the default
  }
  return "warn";
}

let level: LogLevel = initialLevel();

/** Sets the lowest level printed. */
export function setLogLevel(next: LogLevel): void {
  level = next;
}

/** A component's logger. */
export interface Logger {
  /** Details for debugging. */
  debug(message: string): void;
  /** Normal events (checkpoints completed, restarts). */
  info(message: string): void;
  /** Something unexpected the job survives. */
  warn(message: string): void;
  /** A failure. */
  error(message: string): void;
}

/** The logger of `component` (e.g. `coordinator`, `worker`). */
export function logger(component: string): Logger {
  const write = (l: LogLevel, message: string) => {
    if (ORDER[l] < ORDER[level]) return;
    console.error(`${new Date().toISOString()} ${l.toUpperCase()} ${component} ${message}`);
  };
  return {
    debug: (m) => write("debug", m),
    info: (m) => write("info", m),
    warn: (m) => write("warn", m),
    error: (m) => write("error", m),
  };
}
