/**
 * The report of the cluster recovery benchmark (`cluster_recovery.ts`): the
 * cases and settings it runs, what a run measures, and the printed report:
 * one row per run with its phases, the medians per case with their ratios to
 * the baseline (median of the per-round ratios), the checkpoints and idle
 * restore of each run, the matrix of median totals per state size by local
 * recovery x incremental checkpoints, and the RESULT line.
 *
 * @module
 */

import { formatRatio, median, type Rounds, type Sample } from "./_rounds.ts";
import { resultLine } from "./_result.ts";
import type { Breakdown } from "./recovery_breakdown.ts";

/** A state size to measure. */
export interface Case {
  /** `baseline` or `<size> L± I±` (local recovery, incremental checkpoints). */
  readonly label: string;
  /** The state size's name (`baseline`, `10MB`, `100MB`, `1GB`). */
  readonly size: string;
  /** Keys of keyed state the job builds. */
  readonly keys: number;
  /** The checkpoint interval, ms. */
  readonly checkpointMs: number;
  /** Workers run with `--local-recovery on`. */
  readonly local: boolean;
  /** The job runs with `incrementalCheckpoints`. */
  readonly incremental: boolean;
}

/** Settings shared by every run. */
export interface Settings {
  /** Bytes of each key's value. */
  readonly valueBytes: number;
  /** Trickle records per second after the state is built. */
  readonly rate: number;
  /** The coordinator's heartbeat timeout, ms. */
  readonly heartbeatTimeoutMs: number;
  /** The job's fixed restart delay, ms. */
  readonly restartDelayMs: number;
  /** Restart the killed worker at once with its id (a supervisor's restart). */
  readonly restartVictim: boolean;
}

/** What the idle re-read of keyed subtask 0's state file took. */
export interface IdleRestore {
  /** Bytes of subtask 0's keyed handles. */
  readonly fileBytes: number;
  /** Bytes of the whole checkpoint. */
  readonly totalBytes: number;
  /** Object Store download, ms. */
  readonly downloadMs: number;
  /** Decode and load into the backend, ms. */
  readonly loadMs: number;
}

/** What one run measured (see the module docs of `cluster_recovery.ts`). */
export interface RunResult extends Breakdown {
  /** The case's label. */
  readonly label: string;
  /** The case run. */
  readonly case: Case;
  /** Keyed handles the restarted attempt read from local copies, and from checkpoint storage. */
  readonly keyedReads: { readonly local: number; readonly remote: number };
  /** The attempt whose worker was killed. */
  readonly killedAttempt: number;
  /** The checkpoint interval, ms. */
  readonly checkpointMs: number;
  /** Attempt 0's first record to its first trickle record; NaN when it never trickled. */
  readonly buildMs: number;
  /** Slot threads that evaluated the job module after the kill. */
  readonly threadsAfterKill: number;
  /** First deployment: deploy to the job module evaluated on every slot thread, ms. */
  readonly importMs: number;
  /** Committed records the follower read. */
  readonly records: number;
  /** The idle restore of keyed subtask 0's state. */
  readonly idle: IdleRestore;
}

/** `bytes` as B, KiB or MiB, one decimal. */
export function fmtBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const ms = (n: number) => Number.isFinite(n) ? `${Math.round(n)}` : "n/a";

/**
 * One row per run, then medians per case and ratios to the first case (the
 * baseline), as medians of the per-round ratios; then the RESULT line.
 */
export function printReport(rounds: Rounds<RunResult>, cases: readonly Case[], s: Settings): void {
  const results = rounds.byRound.flat().map((sample) => sample.value);
  const cols = [
    ["case", 16],
    ["state", 10],
    ["cp every", 8],
    ["detect", 6],
    ["restart", 7],
    ["restore", 7],
    ["open", 5],
    ["1st cp", 6],
    ["commit", 6],
    ["TOTAL", 6],
    ["keyed reads local/remote", 24],
  ] as const;
  const row = (cells: readonly string[]) =>
    cells.map((c, i) => i < 1 ? c.padEnd(cols[i]![1]) : c.padStart(cols[i]![1])).join("  ");
  console.log(
    `\nRecovery time, SIGKILL of a worker -> first committed record of the next attempt (ms); ` +
      `heartbeat timeout ${s.heartbeatTimeoutMs} ms (workers beat every 500 ms), ` +
      `restart delay ${s.restartDelayMs} ms, trickle ${s.rate} records/s, parallelism 2 on 2 ` +
      `workers x 2 slots\n`,
  );
  console.log(row(cols.map(([name]) => name)));
  for (const r of results) {
    console.log(row([
      r.label,
      fmtBytes(r.idle.totalBytes),
      `${r.checkpointMs} ms`,
      ms(r.detectMs),
      ms(r.restartMs),
      ms(r.restoreMs),
      ms(r.openMs),
      ms(r.firstCheckpointMs),
      ms(r.commitMs),
      ms(r.totalMs),
      `${r.keyedReads.local}/${r.keyedReads.remote}`,
    ]));
  }
  console.log(`\nmedians:`);
  const base = cases[0]!.label;
  const total = (sample: Sample<RunResult>) => sample.value.totalMs;
  const result: Record<string, number> = {};
  for (const c of cases) {
    const rs = results.filter((r) => r.label === c.label);
    const m = (f: (r: RunResult) => number) => median(rs.map(f));
    const ratio = rounds.ratio(c.label, base, total);
    const key = c.size === "baseline"
      ? "baseline"
      : `${c.size}_local_${c.local ? "on" : "off"}_incr_${c.incremental ? "on" : "off"}`;
    result[`${key}_ms`] = m((r) => r.totalMs);
    if (c.label !== base) result[`${key}_ratio`] = ratio.medianOfRatios;
    console.log(
      row([
        c.label,
        fmtBytes(m((r) => r.idle.totalBytes)),
        `${c.checkpointMs} ms`,
        ms(m((r) => r.detectMs)),
        ms(m((r) => r.restartMs)),
        ms(m((r) => r.restoreMs)),
        ms(m((r) => r.openMs)),
        ms(m((r) => r.firstCheckpointMs)),
        ms(m((r) => r.commitMs)),
        ms(m((r) => r.totalMs)),
        "",
      ]) +
        (c.label === base ? "" : `  x${formatRatio(ratio, 2)} of ${base}`),
    );
  }
  console.log(
    `\ncheckpoints (coordinator log) and restore of keyed subtask 0's file on an idle cluster:`,
  );
  for (const r of results) {
    const b = r.before;
    const a = r.after;
    const pad = " ".repeat(17);
    const cp = (c: typeof b) =>
      `#${c.id}: ${c.durationMs} ms, ${fmtBytes(c.bytes)} (sync ${c.syncMs}, async ${c.asyncMs})`;
    const between = r.attempt - r.killedAttempt - 1;
    console.log(
      `${r.label.padEnd(16)} build ${ms(r.buildMs)} ms; killed attempt ${r.killedAttempt}, ` +
        `recovered as attempt ${r.attempt}` +
        (between > 0 ? ` (${between} attempt(s) failed in between)` : "") +
        ` from #${r.restoredFrom}\n` +
        `${pad}last checkpoint before the kill ${cp(b)}; first after it ${cp(a)}\n` +
        `${pad}idle restore of subtask 0's ${fmtBytes(r.idle.fileBytes)}: download ` +
        `${ms(r.idle.downloadMs)}, decode and load ${
          ms(r.idle.loadMs)
        } ms; slot threads that loaded the job after the kill: ` +
        `${r.threadsAfterKill} (first deployment: deploy -> job module evaluated on every slot ` +
        `thread ${ms(r.importMs)} ms); ` +
        `${r.records} committed records read`,
    );
  }
  // The matrix: median TOTAL per state size, local recovery x incremental checkpoints.
  const variants = [[false, false], [true, false], [false, true], [true, true]] as const;
  const head = (l: boolean, i: boolean) => `local ${l ? "on" : "off"}, incr ${i ? "on" : "off"}`;
  console.log(
    `\nSIGKILL -> first committed record, median ms (${rounds.count} round(s)):\n` +
      `| state | ${variants.map(([l, i]) => head(l, i)).join(" | ")} |\n` +
      `|---|${variants.map(() => "---|").join("")}`,
  );
  for (const size of [...new Set(cases.map((c) => c.size))]) {
    const cells = variants.map(([l, i]) => {
      const rs = results.filter((r) =>
        r.case.size === size && r.case.local === l && r.case.incremental === i
      );
      return rs.length === 0 ? "-" : ms(median(rs.map((r) => r.totalMs)));
    });
    console.log(`| ${size} | ${cells.join(" | ")} |`);
  }
  console.log(`\n${resultLine({ ...result, rounds: rounds.count })}`);
}
