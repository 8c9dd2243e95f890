/**
 * Small state inline in the checkpoint metadata, on the Object Store
 * checkpoint storage of cluster mode: storage writes and checkpoint duration
 * of a small keyed job with `memoryThresholdBytes` 0 (every blob written,
 * the baseline) and the default 20 480 (blobs under 20 KiB inline), in
 * interleaved rounds on one cluster.
 *
 *     deno run -A bench/inline_state.ts [--nats URL] [--rounds 3] [--records 200000]
 *         [--rate 50000] [--keys 100] [--checkpoint-ms 200]
 *
 * The job is `bench/jobs/keyed_sum_job.ts` (sequence source -> map ->
 * keyBy -> running sum -> sink, parallelism 2) on a coordinator and two
 * worker processes of one slot each (`_cluster_bench.ts`), checkpointing
 * every `--checkpoint-ms` ms into the cluster's Object Store bucket. Each
 * run is checked as `cluster_keyed_sum.ts` checks it (records and checksums
 * at sources and sinks, no restart).
 *
 * Figures, per run, over its completed checkpoints:
 *
 * - **state objects written per checkpoint**: objects put into the bucket
 *   other than `_metadata` (counted from the Object Store's metadata
 *   messages seen on `$O.<bucket>.M.>`, tombstones of deletions excluded),
 *   divided by the checkpoints completed;
 * - **bucket messages per checkpoint**: every message published into the
 *   bucket's stream (object metadata, chunks, tombstones), per checkpoint;
 * - **checkpoint duration**: median and p90 of the coordinator's
 *   `checkpoint-completed` `durationMs` (trigger to completion).
 *
 * The ratios inline/baseline are medians of per-round ratios. The last line
 * is `RESULT writes_base=… writes_inline=… msgs_base=… msgs_inline=…
 * dur_p50_base_ms=… dur_p50_inline_ms=… dur_ratio=… rounds=…`. Nothing is
 * asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { BenchCluster, benchNats, parseResultLine, runDeno } from "./_cluster_bench.ts";
import { median, runRounds } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { addToChecksum, expectedUpdateChecksum, readReports } from "./jobs/_report.ts";
import { checkpointLines, parseLog } from "./recovery_breakdown.ts";
import { connect } from "../runtime/actor/nats_deps.ts";

const JOB = fileURLToPath(new URL("./jobs/keyed_sum_job.ts", import.meta.url));

/** One run's figures. */
interface Run {
  readonly checkpoints: number;
  readonly stateObjectsPerCheckpoint: number;
  readonly messagesPerCheckpoint: number;
  readonly durationP50Ms: number;
  readonly durationP90Ms: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      rounds: { type: "string", default: "3" },
      records: { type: "string", default: "200000" },
      rate: { type: "string", default: "50000" },
      keys: { type: "string", default: "100" },
      "checkpoint-ms": { type: "string", default: "200" },
    },
  });
  const records = Number(values.records);
  const keys = Number(values.keys);
  for (const [name, v] of [["records", records], ["keys", keys]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) {
      throw new RangeError(`--${name} must be a positive integer: current value is ${v}`);
    }
  }
  const nats = await benchNats(values.nats);
  const cluster = new BenchCluster({
    nats: nats.url,
    workers: 2,
    slots: 1,
    env: { WEIR_LOG_LEVEL: "info", WEIR_LOG_FORMAT: "json" },
  });
  const nc = await connect({ servers: nats.url });
  try {
    await cluster.start();
    const objects = { state: 0, messages: 0 };
    const sub = nc.subscribe(`$O.${cluster.bucket}.>`, {
      callback: (_err, msg) => {
        objects.messages++;
        if (!msg.subject.startsWith(`$O.${cluster.bucket}.M.`)) return;
        const info = msg.json<{ name: string; deleted?: boolean }>();
        if (info.deleted !== true && !info.name.endsWith("/_metadata")) objects.state++;
      },
    });
    const runJob = async (threshold: number): Promise<Run> => {
      const dir = await Deno.makeTempDir({ prefix: "weir-bench-inline-" });
      try {
        await nc.flush();
        const before = { ...objects };
        const logFrom = cluster.coordinator!.output.length;
        const out = await runDeno("keyed sum job", [
          "run",
          "-A",
          JOB,
          "--nats",
          nats.url,
          "--records",
          String(records),
          "--rate",
          String(values.rate),
          "--keys",
          String(keys),
          "--checkpoint-ms",
          String(values["checkpoint-ms"]),
          "--memory-threshold",
          String(threshold),
          "--report",
          dir,
        ]);
        await nc.flush();
        const result = parseResultLine<{ restarts: number; checkpoints: number }>(out);
        expectEqual("restarts of the job", 0, result.restarts);
        const reports = await readReports(dir);
        const sinks = reports.filter((r) => r.role === "sink");
        expectEqual(
          "updates the sinks received",
          records,
          sinks.reduce((n, r) => n + r.records, 0),
        );
        expectEqual(
          "checksum of the sinks",
          expectedUpdateChecksum(records, keys),
          sinks.reduce((c, r) => addToChecksum(c, r.checksum), 0),
        );
        // The coordinator logs asynchronously: give the last completion a moment to appear.
        await new Promise((r) => setTimeout(r, 300));
        const lines = checkpointLines(parseLog(cluster.coordinator!.output.slice(logFrom)));
        const n = lines.length;
        if (n === 0) throw new Error(`no checkpoint completed (threshold ${threshold})`);
        const durations = lines.map((l) => l.durationMs);
        return {
          checkpoints: n,
          stateObjectsPerCheckpoint: (objects.state - before.state) / n,
          messagesPerCheckpoint: (objects.messages - before.messages) / n,
          durationP50Ms: median(durations),
          durationP90Ms: percentile(durations, 90),
        };
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    };
    const show = (r: Run) =>
      `${r.checkpoints} checkpoints; ${r.stateObjectsPerCheckpoint.toFixed(2)} state objects ` +
      `and ${r.messagesPerCheckpoint.toFixed(1)} bucket messages per checkpoint; duration ` +
      `p50 ${r.durationP50Ms.toFixed(1)} ms, p90 ${r.durationP90Ms.toFixed(1)} ms`;
    console.log(`load average before: ${(await Deno.readTextFile("/proc/loadavg")).trim()}`);
    const rounds = await runRounds<Run>({
      rounds: Number(values.rounds),
      variants: [
        { name: "threshold 0 (baseline)", run: () => runJob(0) },
        { name: "threshold 20480", run: () => runJob(20_480) },
      ],
      onSample: (s) => console.log(`round ${s.round} ${s.variant}: ${show(s.value)}`),
    });
    sub.unsubscribe();
    console.log(`load average after: ${(await Deno.readTextFile("/proc/loadavg")).trim()}`);
    const base = rounds.samples("threshold 0 (baseline)").map((s) => s.value);
    const inline = rounds.samples("threshold 20480").map((s) => s.value);
    const ratio = median(base.map((b, i) => inline[i]!.durationP50Ms / b.durationP50Ms));
    const m = (rs: Run[], f: (r: Run) => number) => median(rs.map(f));
    console.log(
      `median duration ratio inline/baseline ${ratio.toFixed(3)} (per round: ${
        base.map((b, i) => (inline[i]!.durationP50Ms / b.durationP50Ms).toFixed(3)).join(", ")
      })`,
    );
    console.log(`\n${
      resultLine({
        writes_base: m(base, (r) => r.stateObjectsPerCheckpoint),
        writes_inline: m(inline, (r) => r.stateObjectsPerCheckpoint),
        msgs_base: m(base, (r) => r.messagesPerCheckpoint),
        msgs_inline: m(inline, (r) => r.messagesPerCheckpoint),
        dur_p50_base_ms: m(base, (r) => r.durationP50Ms),
        dur_p50_inline_ms: m(inline, (r) => r.durationP50Ms),
        dur_ratio: ratio,
        rounds: rounds.count,
      })
    }`);
  } catch (error) {
    console.error(cluster.logs().slice(-5000));
    throw error;
  } finally {
    await nc.close();
    await cluster.stop();
    await nats.stop();
  }
}

if (import.meta.main) await main();
