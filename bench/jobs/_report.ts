/**
 * How the benchmark jobs get figures out of the subtasks that measured
 * them: the sources and sinks of a cluster job run in slot threads of worker
 * processes, so each subtask writes one JSON report file, at `close()`, into
 * the directory the job was given (`--report DIR`), and the benchmark reads
 * them after the job finished (a subtask closes before it reports itself
 * finished, so every file is there when `execute()` returns on the client).
 *
 * Times are wall-clock milliseconds from {@linkcode wallClockMs}, comparable
 * across threads and processes of one host. A report's checksum is compared
 * with one the benchmark computes without the engine (for the keyed-sum job,
 * {@linkcode expectedUpdateChecksum}), so a lost or duplicated record fails
 * the run.
 *
 * @module
 */

import { join } from "node:path";

/** What one source or sink subtask measured. */
export interface SubtaskReport {
  /** `"source"` (the map chained to the source, which made the records) or `"sink"`. */
  readonly role: "source" | "sink";
  /** The subtask's index. */
  readonly subtask: number;
  /** The execution attempt (0 unless the job restarted). */
  readonly attempt: number;
  /** The process the subtask ran in (a worker process in cluster mode). */
  readonly pid: number;
  /** Records the subtask saw. */
  readonly records: number;
  /** Wall-clock time of its first record, in ms ({@linkcode wallClockMs}); 0 when it saw none. */
  readonly firstMs: number;
  /** Wall-clock time of its last record, in ms; 0 when it saw none. */
  readonly lastMs: number;
  /**
   * A checksum of the records' `value` fields, which the benchmark compares
   * with one it computes without the engine, so a lost or duplicated record
   * fails the run: their sum, unless the job's docs say otherwise (the
   * keyed-sum job's sinks sum mod 2^32).
   */
  readonly checksum: number;
  /**
   * Sinks of the latency job: end-to-end latencies in microseconds, as an
   * HdrHistogram in its compressed base64 encoding (`hdr-histogram-js`).
   */
  readonly histogram?: string;
}

/**
 * Wall-clock time in ms with sub-millisecond resolution
 * (`performance.timeOrigin + performance.now()`): one host's threads and
 * processes agree on it, so a record stamped in one process can be timed in
 * another.
 */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Writes `report` as `<dir>/<role>-<subtask>-<attempt>.json`, synchronously
 * (it is called from `close()`).
 * @throws {Deno.errors.NotFound} when `dir` does not exist.
 */
export function writeReport(dir: string, report: SubtaskReport): void {
  const file = join(dir, `${report.role}-${report.subtask}-${report.attempt}.json`);
  Deno.writeTextFileSync(file, JSON.stringify(report));
}

/**
 * Reads every report of `dir`.
 * @throws {Error} naming the file when one is not valid JSON.
 */
export async function readReports(dir: string): Promise<SubtaskReport[]> {
  const reports: SubtaskReport[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    const text = await Deno.readTextFile(join(dir, entry.name));
    try {
      reports.push(JSON.parse(text) as SubtaskReport);
    } catch (error) {
      throw new Error(`The report ${join(dir, entry.name)} is not JSON: ${error}`);
    }
  }
  return reports.sort((a, b) => a.role.localeCompare(b.role) || a.subtask - b.subtask);
}

/**
 * What one source or sink subtask counts for its {@linkcode SubtaskReport}.
 * Create it in the function's `open()` (function objects are copied per
 * subtask shallowly, so a tally made in the constructor would be shared).
 */
export class SubtaskTally {
  /** The subtask's index. */
  readonly subtask: number;
  /** The execution attempt. */
  readonly attempt: number;
  /** Records counted. */
  count = 0;
  /** Sum of the counted values. */
  checksum = 0;
  /** Wall-clock time of the first record, ms; 0 before it. */
  firstMs = 0;
  /** Wall-clock time of the last record (or of the `expected`-th), ms. */
  lastMs = 0;

  /**
   * A tally with nothing counted yet.
   * @param ctx the subtask's runtime context (index and attempt).
   * @param expected the record whose time is `lastMs` (Infinity: set `lastMs` yourself).
   */
  constructor(ctx: { subtaskIndex: number; attempt: number }, readonly expected = Infinity) {
    this.subtask = ctx.subtaskIndex;
    this.attempt = ctx.attempt;
  }

  /** Counts one record of `value`, timing the first and the `expected`-th. */
  note(value: number): void {
    if (this.count === 0) this.firstMs = wallClockMs();
    this.count++;
    this.checksum += value;
    if (this.count === this.expected) this.lastMs = wallClockMs();
  }

  /** Writes the report into `dir`, with `extra` fields (e.g. a histogram). */
  write(dir: string, role: SubtaskReport["role"], extra: { histogram?: string } = {}): void {
    writeReport(dir, {
      role,
      subtask: this.subtask,
      attempt: this.attempt,
      pid: Deno.pid,
      records: this.count,
      firstMs: this.firstMs,
      lastMs: this.lastMs,
      checksum: this.checksum,
      ...extra,
    });
  }
}

/**
 * `(checksum + value) mod 2^32`: a checksum of many running sums that stays
 * exact (a plain sum of them passes 2^53 at about 10M records over 10k keys).
 * Exact for integer `value` below 2^53 - 2^32.
 */
export function addToChecksum(checksum: number, value: number): number {
  return (checksum + value) >>> 0;
}

/**
 * The checksum ({@linkcode addToChecksum}) of every update of a keyed
 * running sum over the records `0 .. records - 1` with key `i % keys`,
 * computed with a plain loop, without the engine. The updates' order within
 * a key is the records' order, and the checksum does not depend on how keys
 * are spread over sink subtasks (add their checksums mod 2^32).
 */
export function expectedUpdateChecksum(records: number, keys: number): number {
  const sums = new Float64Array(keys);
  let checksum = 0;
  for (let i = 0; i < records; i++) {
    const key = i % keys;
    sums[key]! += i;
    checksum = addToChecksum(checksum, sums[key]!);
  }
  return checksum;
}
