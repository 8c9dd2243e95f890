/**
 * Interleaved rounds, medians and CPU time: the measuring discipline of
 * every benchmark that compares variants (the engine against a baseline).
 *
 * ```ts
 * import { runRounds } from "./_rounds.ts";
 *
 * const sumTo = (n: number) => {
 *   let s = 0;
 *   for (let i = 0; i < n; i++) s += i;
 *   return s;
 * };
 * const rounds = await runRounds({
 *   rounds: 3,
 *   variants: [
 *     { name: "baseline", run: () => sumTo(100_000) },
 *     { name: "candidate", run: () => sumTo(200_000) },
 *   ],
 * });
 * const perCpuSecond = (s: { cpuMs: number }) => 1 / s.cpuMs;
 * const r = rounds.ratio("candidate", "baseline", perCpuSecond);
 * console.log(`candidate/baseline: ${r.medianOfRatios.toFixed(2)} (rounds: ${r.perRound})`);
 * ```
 *
 * ## Design
 *
 * - **Interleaved.** Round 1 runs every variant once in the given order,
 *   then round 2 does, and so on (A B A B ...), never all of A then all of
 *   B: a machine's speed drifts during a run (other load, CPU frequency,
 *   the garbage of earlier runs), and interleaving spreads the drift over
 *   every variant instead of billing it to one.
 * - **Ratios per round.** {@linkcode Rounds.ratio} gives the ratio of each
 *   round (two runs made close together) and the median of those, besides
 *   the ratio of the medians. Report the median of per-round ratios as the
 *   figure to compare across machines; the spread of the per-round ratios
 *   says how far to trust it.
 * - **Medians**, not means: one run disturbed by the machine moves a median
 *   of three by nothing. {@linkcode median} of an even count averages the two
 *   middle values.
 * - **CPU time**, not only wall time: each {@linkcode Sample} carries the CPU
 *   time spent during the run, so a benchmark can report records per
 *   CPU-second, which a busy or idle machine changes far less than records
 *   per wall second. See {@linkcode readCpu} for what it covers.
 *
 * Nothing here asserts on time. Performs no I/O other than reading `/proc`.
 *
 * @module
 */

import process from "node:process";

/** The clock ticks per second of `/proc/<pid>/stat`'s CPU fields (`USER_HZ`, 100 on Linux). */
const USER_HZ = 100;

/** CPU time read at one moment (ms since each process started). */
export interface CpuReading {
  /** User + system CPU time of this process, all its threads, in ms (`process.cpuUsage()`). */
  readonly selfMs: number;
  /**
   * User + system CPU time of this process's descendant processes, in ms:
   * those still running (`/proc/<pid>/stat`) and those that exited and were
   * waited for (this process's `cutime + cstime`), in 10 ms ticks.
   * `undefined` where `/proc` cannot be read (not Linux).
   */
  readonly childrenMs: number | undefined;
}

/** The fields after the `(comm)` of `/proc/<pid>/stat`, or undefined when it is gone. */
function statFields(pid: number | "self"): string[] | undefined {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The pids of the children of `pid`, by `/proc/<pid>/task/<tid>/children`. */
function childPids(pid: number | "self"): number[] {
  const out: number[] = [];
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`).trim();
        if (text !== "") out.push(...text.split(" ").map(Number));
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process ended
  }
  return out;
}

/** CPU ticks of the live descendants of `pid` (each counts its own exited children too). */
function descendantTicks(pid: number | "self"): number {
  let ticks = 0;
  for (const child of childPids(pid)) {
    // Fields 14-17 of stat (utime, stime, cutime, cstime) are at 11-14 after `(comm) `.
    const f = statFields(child);
    if (f === undefined) continue; // exited meanwhile: now in our cutime/cstime, or soon
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    ticks += descendantTicks(child);
  }
  return ticks;
}

/**
 * Reads the CPU time of this process and of its descendants (see
 * {@linkcode CpuReading}). A descendant that exits between two readings
 * but is not yet waited for is missed (up to its whole CPU time), so read
 * after the processes of a run were waited for.
 */
export function readCpu(): CpuReading {
  const usage = process.cpuUsage();
  const selfMs = (usage.user + usage.system) / 1000;
  const self = statFields("self");
  if (self === undefined) return { selfMs, childrenMs: undefined };
  const exited = Number(self[13]) + Number(self[14]);
  return { selfMs, childrenMs: ((exited + descendantTicks("self")) * 1000) / USER_HZ };
}

/** `end - start` of each field (`childrenMs` undefined when either is). */
export function cpuBetween(start: CpuReading, end: CpuReading): CpuReading {
  return {
    selfMs: end.selfMs - start.selfMs,
    childrenMs: start.childrenMs === undefined || end.childrenMs === undefined
      ? undefined
      : end.childrenMs - start.childrenMs,
  };
}

/** One run of one variant. */
export interface Sample<M> {
  /** The variant's name. */
  readonly variant: string;
  /** The round, from 1. */
  readonly round: number;
  /** Wall time of the run, in ms. */
  readonly wallMs: number;
  /** CPU time during the run: this process and its descendants ({@linkcode readCpu}), in ms. */
  readonly cpuMs: number;
  /** The parts of `cpuMs`. */
  readonly cpu: CpuReading;
  /** What the variant's `run` returned (its own measurements). */
  readonly value: M;
}

/** What a variant's `run` is told. */
export interface RoundContext<M> {
  /** The round, from 1. */
  readonly round: number;
  /** The samples of the variants run before it in this round, in order. */
  readonly earlier: readonly Sample<M>[];
}

/** One thing to measure. */
export interface Variant<M> {
  /** Its name, unique among the variants; the key of {@linkcode Rounds} queries. */
  readonly name: string;
  /**
   * Runs it once and returns its own measurements (e.g. a rate it timed
   * itself). It throws when one of its checks fails, which ends the rounds.
   */
  run(context: RoundContext<M>): M | Promise<M>;
}

/** Options of {@linkcode runRounds}. */
export interface RoundsOptions<M> {
  /** Rounds to run, a positive integer. */
  readonly rounds: number;
  /** The variants, run in this order in every round. */
  readonly variants: readonly Variant<M>[];
  /** Runs before each run, untimed (e.g. a garbage collection). */
  readonly before?: () => void | Promise<void>;
  /** Called with each sample as soon as it is taken (e.g. to print it). */
  readonly onSample?: (sample: Sample<M>) => void;
}

/**
 * Runs the variants interleaved for `rounds` rounds (see the module docs).
 * @returns the samples, to query with {@linkcode Rounds}.
 * @throws {RangeError} when `rounds` is not a positive integer, or the
 *   variants are none or share a name.
 * @throws whatever a variant's `run` throws (a failed check).
 */
export async function runRounds<M>(options: RoundsOptions<M>): Promise<Rounds<M>> {
  const { rounds, variants } = options;
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new RangeError(`'rounds' must be a positive integer: current value is ${rounds}`);
  }
  const names = variants.map((v) => v.name);
  if (names.length === 0 || new Set(names).size !== names.length) {
    throw new RangeError(
      `the variants need distinct names: current names are ${JSON.stringify(names)}`,
    );
  }
  const all: Sample<M>[][] = [];
  for (let round = 1; round <= rounds; round++) {
    const earlier: Sample<M>[] = [];
    for (const v of variants) {
      await options.before?.();
      const cpu0 = readCpu();
      const t0 = performance.now();
      const value = await v.run({ round, earlier: [...earlier] });
      const wallMs = performance.now() - t0;
      const cpu = cpuBetween(cpu0, readCpu());
      const sample = {
        variant: v.name,
        round,
        wallMs,
        cpuMs: cpu.selfMs + (cpu.childrenMs ?? 0),
        cpu,
        value,
      };
      earlier.push(sample);
      options.onSample?.(sample);
    }
    all.push(earlier);
  }
  return new Rounds(all);
}

/** A ratio of two variants' metric: per round, and summarized. */
export interface RatioSummary {
  /** `numerator / denominator` of each round, in round order. */
  readonly perRound: readonly number[];
  /** The median of `perRound`: the figure to report. */
  readonly medianOfRatios: number;
  /** `median(numerator) / median(denominator)`. */
  readonly ratioOfMedians: number;
}

/** The samples of {@linkcode runRounds}, by round and variant. */
export class Rounds<M> {
  /** `byRound[r][v]`: round `r + 1`, variant `v` in the given order. */
  readonly byRound: readonly (readonly Sample<M>[])[];

  /** Keeps the samples of each round. */
  constructor(byRound: readonly (readonly Sample<M>[])[]) {
    this.byRound = byRound;
  }

  /** Number of rounds. */
  get count(): number {
    return this.byRound.length;
  }

  /**
   * The samples of `variant`, in round order.
   * @throws {RangeError} naming the variants when there is none of that name.
   */
  samples(variant: string): Sample<M>[] {
    const out = this.byRound.flatMap((r) => r.filter((s) => s.variant === variant));
    if (out.length === 0) {
      const names = this.byRound[0]?.map((s) => s.variant) ?? [];
      throw new RangeError(`no variant '${variant}': the variants are ${names.join(", ")}`);
    }
    return out;
  }

  /** The median over the rounds of `metric` of `variant`'s samples. */
  median(variant: string, metric: (s: Sample<M>) => number): number {
    return median(this.samples(variant).map(metric));
  }

  /** `metric(numerator) / metric(denominator)`, per round and summarized. */
  ratio(
    numerator: string,
    denominator: string,
    metric: (s: Sample<M>) => number,
  ): RatioSummary {
    const a = this.samples(numerator).map(metric);
    const b = this.samples(denominator).map(metric);
    const perRound = a.map((x, i) => x / b[i]!);
    return {
      perRound,
      medianOfRatios: median(perRound),
      ratioOfMedians: median(a) / median(b),
    };
  }
}

/**
 * The median of `values`: the middle one, or the mean of the two middle
 * ones for an even count; NaN for none.
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `1.23M records/s` (from 100k up) or `12.3k records/s`, for records per second (wall or CPU). */
export function formatRate(recordsPerSecond: number, unit = "records/s"): string {
  return recordsPerSecond >= 1e5
    ? `${(recordsPerSecond / 1e6).toFixed(2)}M ${unit}`
    : `${(recordsPerSecond / 1e3).toFixed(1)}k ${unit}`;
}

/** `0.912 (rounds 0.901 0.912 0.950)`: a ratio's median and its per-round values. */
export function formatRatio(r: RatioSummary, digits = 3): string {
  return `${r.medianOfRatios.toFixed(digits)} (rounds ${
    r.perRound.map((x) => x.toFixed(digits)).join(" ")
  })`;
}
