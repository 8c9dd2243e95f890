/**
 * A sink that prints each record on a line of stdout or stderr, like
 * Flink's `print()` (`PrintSinkFunction`).
 *
 * ## Delivery guarantee: at-least-once
 *
 * A record is printed as soon as it arrives, not when a checkpoint
 * completes, so after a failure the records since the last completed
 * checkpoint are replayed and **print again**: output may repeat after a
 * failure, never miss a record. Use it for demos and debugging; use a
 * two-phase-commit sink for exactly-once output.
 *
 * ## Format
 *
 * - Each record is one line, formatted by `formatter` or else by
 *   {@linkcode PrintSink.format}: strings as they are, arrays as Flink
 *   tuples `(a,b,c)`, numbers with `String()`, other values as JSON.
 * - With parallelism > 1 each line starts with the 1-based subtask number,
 *   `2> `; with a `prefix` it is `prefix:2> ` (and `prefix> ` at
 *   parallelism 1), as in Flink.
 * - Each line is written whole with a synchronous write, looping until every
 *   byte is out, so lines of different subtasks never interleave.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PrintSink } from "./print_sink.ts";
 *
 * assert.equal(PrintSink.format(["sensor_1", 32.4, 42.4]), "(sensor_1,32.4,42.4)");
 * assert.equal(PrintSink.format({ id: "sensor_1" }), '{"id":"sensor_1"}');
 * ```
 *
 * @module
 */

import type { RuntimeContext } from "./functions.ts";
import type { SinkContext, SinkFunction } from "./sink.ts";

/** Something bytes can be written to synchronously, like `Deno.stdout`. */
export interface SyncWriter {
  /**
   * Writes some of `bytes`.
   * @returns how many bytes were written (at least 1 unless `bytes` is empty).
   */
  writeSync(bytes: Uint8Array): number;
}

/** Options of {@linkcode PrintSink}. */
export interface PrintSinkOptions<T> {
  /** Where lines go: `"stdout"` (default), `"stderr"`, or any {@linkcode SyncWriter}. */
  readonly target?: "stdout" | "stderr" | SyncWriter;
  /** Names this sink's lines: `prefix> ` or, with parallelism > 1, `prefix:<subtask+1>> `. */
  readonly prefix?: string;
  /** Turns a record into its line (without the newline). Default {@linkcode PrintSink.format}. */
  readonly formatter?: (value: T) => string;
}

const encoder = new TextEncoder();

/**
 * Prints each record as a line (see the module docs). At-least-once: after a
 * failure, the records since the last completed checkpoint print again.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PrintSink } from "./print_sink.ts";
 *
 * const lines: string[] = [];
 * const sink = new PrintSink<[string, number]>({
 *   prefix: "alerts",
 *   target: { writeSync: (bytes) => (lines.push(new TextDecoder().decode(bytes)), bytes.length) },
 * });
 * sink.invoke(["sensor_7", 30], { timestamp: undefined });
 * assert.deepEqual(lines, ["alerts> (sensor_7,30)\n"]);
 * ```
 */
export class PrintSink<T> implements SinkFunction<T> {
  /** Always `"simple"`. */
  readonly kind = "simple" as const;
  /** Where lines go. */
  readonly target: "stdout" | "stderr" | SyncWriter;
  /** The sink identifier, if any. */
  readonly prefix: string | undefined;
  /** Turns a record into its line. */
  readonly formatter: (value: T) => string;
  /** What starts every line of this subtask; set by `open`. */
  private linePrefix: string;

  /**
   * Creates a print sink.
   * @param options see {@linkcode PrintSinkOptions}.
   * @throws {TypeError} when `target` is neither `"stdout"`, `"stderr"` nor a writer.
   */
  constructor(options: PrintSinkOptions<T> = {}) {
    const target = options.target ?? "stdout";
    if (
      target !== "stdout" && target !== "stderr" &&
      typeof (target as Partial<SyncWriter>)?.writeSync !== "function"
    ) {
      throw new TypeError(
        `Cannot create a PrintSink as 'target' must be "stdout", "stderr" or a writer: current value is ${
          JSON.stringify(target)
        }`,
      );
    }
    this.target = target;
    this.prefix = options.prefix;
    this.formatter = options.formatter ?? PrintSink.format;
    this.linePrefix = makeLinePrefix(options.prefix, 0, 1);
  }

  /** Computes this subtask's line prefix from its index and the parallelism. */
  open(context: RuntimeContext): void {
    this.linePrefix = makeLinePrefix(this.prefix, context.subtaskIndex, context.parallelism);
  }

  /**
   * Prints `value` as one line.
   * @throws {Error} when the target cannot be written (e.g. a closed pipe); it fails the attempt.
   */
  invoke(value: T, _context: SinkContext): void {
    const bytes = encoder.encode(`${this.linePrefix}${this.formatter(value)}\n`);
    const writer = this.target === "stdout"
      ? Deno.stdout
      : this.target === "stderr"
      ? Deno.stderr
      : this.target;
    let written = 0;
    while (written < bytes.length) {
      const n = writer.writeSync(bytes.subarray(written));
      if (!(n > 0)) {
        throw new Error(
          `PrintSink could not write to ${describe(this.target)}: it wrote ${n} bytes`,
        );
      }
      written += n;
    }
  }

  /**
   * Flink's print format: a string as it is; an array as a tuple `(a,b,c)`
   * with its elements formatted the same way, recursively; a number,
   * bigint, boolean, `undefined` or symbol with `String()`; anything else as
   * JSON (`Map` as an object, `Set` as an array, a bigint as a string), or
   * with `String()` when JSON cannot encode it (e.g. a cycle).
   * @param value any record.
   * @returns its line, without the newline.
   */
  static format(value: unknown): string {
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return `(${value.map((v) => PrintSink.format(v)).join(",")})`;
    if (value === null) return "null";
    if (typeof value !== "object") return String(value);
    try {
      return JSON.stringify(value, jsonReplacer) ?? String(value);
    } catch {
      return String(value);
    }
  }
}

function makeLinePrefix(
  prefix: string | undefined,
  subtaskIndex: number,
  parallelism: number,
): string {
  if (prefix !== undefined && prefix !== "") {
    return parallelism > 1 ? `${prefix}:${subtaskIndex + 1}> ` : `${prefix}> `;
  }
  return parallelism > 1 ? `${subtaskIndex + 1}> ` : "";
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}

function describe(target: "stdout" | "stderr" | SyncWriter): string {
  return typeof target === "string" ? target : "its writer";
}
