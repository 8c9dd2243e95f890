/**
 * The Nexmark harness's figures: a query's rounds (`../_rounds.ts`) reduced
 * to medians, as `RESULT` fields and a markdown table. Pure: no I/O.
 *
 * ## Figures
 *
 * Per round, from the engine's sample and the baseline's sample of that
 * round (`events` generated; CPU time as `readCpu()` of `../_rounds.ts`
 * measures it around each run):
 *
 * | field                   | per round                                        |
 * | ----------------------- | ------------------------------------------------ |
 * | `eps`                   | events / the engine's own wall time (`seconds`)  |
 * | `cores`                 | engine run's CPU time / its wall time            |
 * | `eps_per_core`          | events / engine run's CPU seconds                |
 * | `baseline_eps`          | events / the baseline loop's wall time           |
 * | `baseline_eps_per_core` | events / baseline run's CPU seconds              |
 * | `ratio`                 | `eps_per_core / baseline_eps_per_core`           |
 *
 * A query's figure is the median over its rounds (the mean of the two
 * middle values for an even count), and `ratio` is the median of the
 * rounds' ratios, not the ratio of two medians; `ratioMin` and `ratioMax`
 * give their spread. The engine and the baseline are compared per CPU
 * second on both sides: what a machine busy with other work changes little.
 *
 * ```ts
 * import { Rounds } from "../_rounds.ts";
 * import { summarize } from "./report.ts";
 * const sample = (variant: string, wallMs: number, cpuMs: number) => ({
 *   variant, round: 1, wallMs, cpuMs,
 *   cpu: { selfMs: cpuMs, childrenMs: 0 },
 *   value: { count: 90, seconds: wallMs / 1000, checkpoints: 1 },
 * });
 * const rounds = new Rounds([[sample("engine", 2000, 1000), sample("baseline", 500, 500)]]);
 * const r = summarize({ query: "q1", events: 100, rounds });
 * // r.epsPerCore === 100, r.baselineEpsPerCore === 200, r.ratio === 0.5
 * ```
 *
 * @module
 */

import { median, type Rounds, type Sample } from "../_rounds.ts";

/** What one run (the engine's or the baseline's) reports of itself. */
export interface RunFigures {
  /** Records output (the engine: committed by its sinks). */
  readonly count: number;
  /**
   * Wall time, seconds, as the run measured it: `execute()` in local mode,
   * the job's duration as the coordinator reports it in cluster mode, the
   * loop for the baseline.
   */
  readonly seconds: number;
  /** Checkpoints completed (0 for the baseline). */
  readonly checkpoints: number;
}

/** The engine's variant name in a query's rounds. */
export const ENGINE = "engine";
/** The baseline's variant name in a query's rounds. */
export const BASELINE = "baseline";

/** A query's figures: medians over its rounds (see the module docs). */
export interface QueryResult {
  /** The query's name. */
  readonly query: string;
  /** Events generated per run. */
  readonly events: number;
  /** Rounds run. */
  readonly rounds: number;
  /** Records output, the same in every round and on both sides. */
  readonly count: number;
  /** Engine events per wall second. */
  readonly eps: number;
  /** Engine CPU seconds per wall second. */
  readonly cores: number;
  /** Engine events per CPU second. */
  readonly epsPerCore: number;
  /** Baseline events per wall second. */
  readonly baselineEps: number;
  /** Baseline events per CPU second. */
  readonly baselineEpsPerCore: number;
  /** Median of the rounds' `epsPerCore / baselineEpsPerCore`. */
  readonly ratio: number;
  /** The least round's ratio. */
  readonly ratioMin: number;
  /** The greatest round's ratio. */
  readonly ratioMax: number;
  /** Checkpoints the engine completed (median). */
  readonly checkpoints: number;
}

/** What {@linkcode summarize} takes. */
export interface SummarizeOptions {
  /** The query's name. */
  readonly query: string;
  /** Events generated per run. */
  readonly events: number;
  /** The rounds, variants {@linkcode ENGINE} and {@linkcode BASELINE}, each round checked. */
  readonly rounds: Rounds<RunFigures>;
}

/**
 * The medians over `o.rounds` (see the module docs).
 * @throws {RangeError} when a run measured no CPU time, or the engine's
 *   count differs between rounds.
 */
export function summarize(o: SummarizeOptions): QueryResult {
  const engine = o.rounds.samples(ENGINE);
  const all = [...engine, ...o.rounds.samples(BASELINE)];
  const still = all.find((s) => !(s.cpuMs > 0));
  if (still !== undefined) {
    throw new RangeError(
      `nexmark ${o.query}: the ${still.variant} run of round ${still.round} measured no CPU ` +
        `time: current value is ${still.cpuMs} ms`,
    );
  }
  const count = engine[0]!.value.count;
  const other = engine.find((s) => s.value.count !== count);
  if (other !== undefined) {
    throw new RangeError(
      `nexmark ${o.query}: round ${other.round} counted ${other.value.count} records, ` +
        `round 1 ${count}`,
    );
  }
  const perWallSecond = (s: Sample<RunFigures>) => o.events / s.value.seconds;
  const perCpuSecond = (s: Sample<RunFigures>) => o.events / (s.cpuMs / 1000);
  const ratio = o.rounds.ratio(ENGINE, BASELINE, perCpuSecond);
  return {
    query: o.query,
    events: o.events,
    rounds: o.rounds.count,
    count,
    eps: o.rounds.median(ENGINE, perWallSecond),
    cores: o.rounds.median(ENGINE, (s) => s.cpuMs / s.wallMs),
    epsPerCore: o.rounds.median(ENGINE, perCpuSecond),
    baselineEps: o.rounds.median(BASELINE, perWallSecond),
    baselineEpsPerCore: o.rounds.median(BASELINE, perCpuSecond),
    ratio: ratio.medianOfRatios,
    ratioMin: Math.min(...ratio.perRound),
    ratioMax: Math.max(...ratio.perRound),
    checkpoints: median(engine.map((s) => s.value.checkpoints)),
  };
}

/**
 * The fields of a query's `RESULT` line, in order: `query events output eps
 * eps_per_core baseline_eps baseline_eps_per_core ratio rounds`.
 */
export function resultFields(r: QueryResult): Record<string, number | string> {
  return {
    query: r.query,
    events: r.events,
    output: r.count,
    eps: Math.round(r.eps),
    eps_per_core: Math.round(r.epsPerCore),
    baseline_eps: Math.round(r.baselineEps),
    baseline_eps_per_core: Math.round(r.baselineEpsPerCore),
    ratio: r.ratio,
    rounds: r.rounds,
  };
}

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The results as a markdown table, one row per query. */
export function table(rows: readonly QueryResult[]): string {
  const header: [string, string][] = [
    ["query", "-----"],
    ["events", "-----:"],
    ["output", "-----:"],
    ["engine events/s", "-----:"],
    ["engine CPU s/s", "-----:"],
    ["engine events/CPU s", "-----:"],
    ["baseline events/s", "-----:"],
    ["baseline events/CPU s", "-----:"],
    ["engine / baseline (per CPU s)", "-----:"],
    ["rounds' range", "-----:"],
    ["checkpoints", "-----:"],
  ];
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [
    line(header.map((h) => h[0])),
    line(header.map((h) => h[1])),
    ...rows.map((r) =>
      line([
        r.query,
        r.events,
        r.count,
        Math.round(r.eps),
        r.cores.toFixed(2),
        Math.round(r.epsPerCore),
        Math.round(r.baselineEps),
        Math.round(r.baselineEpsPerCore),
        percent(r.ratio),
        `${percent(r.ratioMin)}–${percent(r.ratioMax)}`,
        r.checkpoints,
      ])
    ),
  ].join("\n");
}
