/**
 * Benchmark (c) of cluster mode: recovery time, from the SIGKILL of a
 * worker process to the first committed output record of the restarted
 * attempt, for a job with almost no keyed state (the baseline), ~10 MB and
 * ~100 MB of it (the latter with a checkpoint every second and every 3 s).
 * The cases run interleaved for `--rounds` rounds (default 3: baseline,
 * ~10MB, ~100MB, ~100MB/3s, baseline, ...; `runRounds()` of `_rounds.ts`);
 * the report gives every run, the medians, and each case's ratio to the
 * baseline as the median of the per-round ratios. About 45 s per round on
 * 2 cores.
 *
 *     deno task bench:recovery
 *     deno run -A bench/cluster_recovery.ts [--rounds 3] [--baseline-keys 10]
 *         [--small-keys 100000] [--large-keys 1000000] [--value-bytes 100] [--rate 200]
 *         [--checkpoint-ms 1000] [--large-checkpoint-ms 1000,3000] [--heartbeat-timeout 1000]
 *         [--restart-delay-ms 0] [--only baseline,~10MB,~100MB,~100MB/3s] [--nats URL]
 *
 * ## Setup, per run
 *
 * A nats-server of the benchmark's own (JetStream, free port; or the server
 * given by `--nats`), shared by the runs; per run a fresh coordinator
 * (`--heartbeat-timeout`, workers heartbeat every 500 ms) and two workers of
 * two slots each, a target
 * stream and a transaction bucket with unique names. The job is
 * `bench/jobs/recovery_job.ts` at parallelism 2 (source and keyed operator
 * with its chained `JetStreamSink`), so each worker holds one keyed subtask:
 * half the state. A read-committed follower (`readCommitted`, `bounded:
 * false`) in this process timestamps each committed record's arrival.
 *
 * 1. The job builds its state (one record per key, at full speed), then
 *    trickles `--rate` records per second to the sink.
 * 2. Once committed trickle records of both source splits arrived, a
 *    completed checkpoint holds the full state: the worker running keyed
 *    subtask 0 gets SIGKILL at once.
 * 3. Recovery time = arrival of the first committed record stamped with
 *    attempt >= 1, minus the kill. Every record of attempt >= 1 must have
 *    found its key in the restored state (`hit`), else the run fails.
 *
 * ## Breakdown
 *
 * From the coordinator's structured log events (it runs with
 * `WEIR_LOG_LEVEL=info` and `WEIR_LOG_FORMAT=json`, see `runtime/log.ts`;
 * `recovery_breakdown.ts` reads them), the job's marks on the workers'
 * stdout and the follower:
 *
 * - **detect**: kill → the `worker-lost` event of the killed worker's pid
 *   (the heartbeat timeout counts from the last heartbeat, up to 500 ms
 *   before the kill, and the coordinator sweeps every timeout/4: between
 *   timeout − 500 ms and timeout × 1.25);
 * - **restart**: lost → `attempt-deploying` of the recovering attempt
 *   (restart delay, reading the checkpoint's metadata);
 * - **restore**: deploy → the last keyed subtask's `initializeState` (deploy
 *   message, task set-up, Object Store download, MessagePack decode, load
 *   into the heap backend);
 * - **open**: → `attempt-running` (every subtask ready: operators opened,
 *   the sink connected, fenced and committed the restored transactions);
 * - **1st cp**: running → first checkpoint of attempt 1 completed (at least
 *   one checkpoint interval, plus a full snapshot of the restored state);
 * - **commit**: → the first committed record arrives (commit of the
 *   transactions, the follower's KV watch).
 *
 * The slot threads of the surviving worker are reused by the restarted
 * attempt (one thread per job and slot), so no module import is on the
 * recovery path; the table says how many slot threads evaluated the job
 * module after the kill (its `module` marks). Apart from that, the benchmark measures in this process, on an idle
 * cluster after the job was cancelled, the restore of keyed subtask 0's
 * file of the latest checkpoint: Object Store download, MessagePack decode,
 * and load into a `HeapKeyedStateBackend`. Nothing is asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { Proc, TestCluster } from "../tests/_cluster.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import { createKeyedStateBackend } from "../runtime/state/state_backend_factory.ts";
import { KeyGroupRange } from "../runtime/state/key_group.ts";
import { readCommitted } from "../connectors/jetstream/mod.ts";
import { type RecoveryRecord, wallClockMs } from "./jobs/recovery_job.ts";
import {
  type Breakdown,
  breakdown,
  eventsNamed,
  parseLog,
  parseMarks,
} from "./recovery_breakdown.ts";
import { formatRatio, median, type Rounds, runRounds, type Sample } from "./_rounds.ts";
import { benchNats } from "./_cluster_bench.ts";
import { resultLine } from "./_result.ts";

const JOB = fileURLToPath(new URL("./jobs/recovery_job.ts", import.meta.url));

/** A committed record and when it arrived at the follower. */
interface Arrival {
  readonly ms: number;
  readonly record: RecoveryRecord;
}

/** Reads the target stream read-committed, following it, and timestamps each arrival. */
class Follower {
  readonly arrivals: Arrival[] = [];
  readonly done: Promise<void>;
  error: unknown;
  #stop = false;

  constructor(url: string, stream: string, txnBucket: string) {
    this.done = this.#run(url, stream, txnBucket);
  }

  async #run(url: string, stream: string, txnBucket: string): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (
        const r of readCommitted({
          connection: { servers: url, name: "weir-bench-follower" },
          stream,
          txnBucket,
          bounded: false,
        })
      ) {
        const ms = wallClockMs();
        if (this.#stop) return;
        if (r.subject.endsWith(".out")) {
          this.arrivals.push({ ms, record: JSON.parse(decoder.decode(r.data)) as RecoveryRecord });
        }
      }
    } catch (error) {
      this.error = error;
    }
  }

  /** Ends the read at the next record (publish one non-transactional record to make sure). */
  stop(): void {
    this.#stop = true;
  }
}

/** Polls `test` every 50 ms; rejects with `what` after `timeoutMs`. */
async function waitUntil(what: string, test: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves with whether `p` settled within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((r) => timer = setTimeout(() => r(false), ms));
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A state size to measure. */
interface Case {
  readonly label: string;
  readonly keys: number;
  readonly checkpointMs: number;
}

/** Settings shared by every run. */
interface Settings {
  readonly valueBytes: number;
  readonly rate: number;
  readonly heartbeatTimeoutMs: number;
  readonly restartDelayMs: number;
}

/** What the idle re-read of keyed subtask 0's state file took. */
interface IdleRestore {
  readonly fileBytes: number;
  readonly totalBytes: number;
  readonly downloadMs: number;
  /** Decode and load into the backend, ms. */
  readonly loadMs: number;
}

interface RunResult extends Breakdown {
  readonly label: string;
  readonly killedAttempt: number;
  readonly checkpointMs: number;
  /** Attempt 0's first record to its first trickle record; NaN when it never trickled. */
  readonly buildMs: number;
  readonly threadsAfterKill: number;
  readonly importMs: number;
  readonly records: number;
  readonly idle: IdleRestore;
}

/**
 * Reads keyed subtask 0's handles of the job's latest checkpoint (metadata
 * version 2: every handle of uid `state` of kind `keyed` or
 * `keyed-incremental`), and restores them into the job's keyed state
 * backend (heap, wrapped in the changelog backend when `incremental`):
 * download, then decode and load.
 */
async function idleRestore(
  url: string,
  bucket: string,
  jobId: string,
  incremental: boolean,
): Promise<IdleRestore> {
  const nc = await connectNats({ servers: url, name: "weir-bench-restore" });
  try {
    const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
    const meta = await storage.latestCompleted(jobId);
    if (!meta) throw new Error(`job ${jobId} has no completed checkpoint in bucket ${bucket}`);
    const vertex = meta.vertices.find((v) => v.operatorUids.includes("state"));
    const sub = vertex?.subtasks.find((s) => s.subtask === 0);
    const handles = (sub?.handles ?? []).filter((h) =>
      h.uid === "state" && (h.kind === "keyed" || h.kind === "keyed-incremental")
    );
    const range = handles[0]?.keyGroupRange;
    if (!vertex || handles.length === 0 || range === undefined) {
      throw new Error(
        `checkpoint ${meta.checkpointId} of job ${jobId} has no keyed state of uid 'state' ` +
          `for subtask 0`,
      );
    }
    const t0 = performance.now();
    const blobs = new Map<string, Uint8Array>();
    for (const h of handles) blobs.set(h.path, await storage.readState(jobId, h));
    const t1 = performance.now();
    const backend = await createKeyedStateBackend(
      incremental ? { kind: "heap", changelog: {} } : { kind: "heap" },
      {
        keyGroupRange: new KeyGroupRange(range[0], range[1]),
        maxParallelism: vertex.maxParallelism,
      },
    );
    try {
      await backend.restore(handles, (h) => Promise.resolve(blobs.get(h.path)!));
    } finally {
      await backend.dispose();
    }
    const t2 = performance.now();
    let fileBytes = 0;
    for (const b of blobs.values()) fileBytes += b.length;
    return {
      fileBytes,
      totalBytes: meta.totalBytes,
      downloadMs: t1 - t0,
      loadMs: t2 - t1,
    };
  } finally {
    await nc.close();
  }
}

/** One run: start a cluster, run the job, kill a worker, measure, clean up. */
async function runOnce(url: string, c: Case, s: Settings): Promise<RunResult> {
  const suffix = crypto.randomUUID().slice(0, 8);
  const stream = `weir-bench-rec-${suffix}`;
  const txnBucket = `weir-bench-rectxn-${suffix}`;
  const nc = await connectNats({ servers: url, name: "weir-bench-recovery" });
  const jsm = await jetstreamApi.jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  const cluster = new TestCluster({
    nats: url,
    workers: 2,
    slots: 2,
    heartbeatTimeoutMs: s.heartbeatTimeoutMs,
    env: { WEIR_LOG_LEVEL: "info", WEIR_LOG_FORMAT: "json" },
  });
  let job: Proc | undefined;
  let follower: Follower | undefined;
  try {
    await cluster.start();
    await waitUntil(
      "the coordinator to know both workers",
      () => eventsNamed(parseLog(cluster.coordinator.output), "worker-joined").length >= 2,
      30_000,
    );
    follower = new Follower(url, stream, txnBucket);
    const f = follower;
    job = new Proc("job", [
      "run",
      "-A",
      JOB,
      "--nats",
      url,
      "--stream",
      stream,
      "--txn-bucket",
      txnBucket,
      "--keys",
      String(c.keys),
      "--value-bytes",
      String(s.valueBytes),
      "--rate",
      String(s.rate),
      "--checkpoint-ms",
      String(c.checkpointMs),
      "--restart-delay-ms",
      String(s.restartDelayMs),
    ]);
    // Committed trickle records of both splits from the latest attempt: a completed checkpoint
    // of that attempt holds the full state.
    await waitUntil("committed trickle records of both source splits", () => {
      if (f.error) throw f.error;
      const latest = Math.max(...f.arrivals.map((a) => a.record.att));
      const parities = new Set(
        f.arrivals.filter((a) => a.record.att === latest).map((a) => a.record.i % 2),
      );
      return parities.size === 2;
    }, 180_000);
    const workerMarks = () => cluster.workers.flatMap((w) => parseMarks(w.output));
    // The job may have restarted before (e.g. a heartbeat missed during start-up).
    const killedAttempt = Math.max(...workerMarks().map((m) => m.ev === "module" ? 0 : m.att));
    const open0 = workerMarks().find((m) =>
      m.ev === "open" && m.att === killedAttempt && m.sub === 0
    );
    const victim = cluster.workers.find((w) => w.child.pid === open0?.pid);
    if (!victim) throw new Error("cannot tell which worker runs keyed subtask 0");
    const killMs = wallClockMs();
    victim.child.kill("SIGKILL");
    await victim.wait();
    const newer = () => f.arrivals.filter((a) => a.record.att > killedAttempt);
    await waitUntil(
      `committed records of both keyed subtasks after attempt ${killedAttempt}`,
      () => {
        if (f.error) throw f.error;
        return new Set(newer().map((a) => a.record.sub)).size === 2;
      },
      180_000,
    );
    const restarted = newer();
    const lost = restarted.filter((a) => !a.record.hit);
    if (lost.length > 0) {
      throw new Error(
        `${lost.length} of ${restarted.length} records of the attempts after ${killedAttempt} ` +
          `found no state for their key (first: ${JSON.stringify(lost[0]!.record)}): keyed ` +
          `state was not restored`,
      );
    }
    const marks = workerMarks();
    const firsts0 = marks.filter((m) => m.ev === "first" && m.att === 0).map((m) => m.ms);
    const trickles0 = marks.filter((m) => m.ev === "trickle" && m.att === 0).map((m) => m.ms);
    const coordinatorLog = parseLog(cluster.coordinator.output);
    const result = breakdown({
      coordinatorLog,
      marks,
      killMs,
      killedPid: victim.child.pid,
      attempt: restarted[0]!.record.att,
      firstArrivalMs: restarted[0]!.ms,
    });
    // The first deployment's slot threads: deploy -> job module evaluated (for reference).
    const modules = marks.filter((m) => m.ev === "module").map((m) => m.ms);
    const firstDeploy = eventsNamed(coordinatorLog, "attempt-deploying")[0]!.ms;
    const importMs = Math.max(...modules.filter((ms) => ms < killMs)) - firstDeploy;
    // Stop the follower before the job: a cancelled job leaves its pre-committed transaction
    // open, which would block a read-committed reader for good. It stops at the next record
    // (the next commit, or this non-transactional one once the transactions before it are).
    f.stop();
    await jetstreamApi.jetstream(nc).publish(`${stream}.end`, new Uint8Array());
    if (!await within(f.done, 3 * c.checkpointMs + 30_000)) {
      throw new Error(`the follower of stream ${stream} did not stop`);
    }
    if (f.error) throw f.error;
    const jobId = eventsNamed(coordinatorLog, "job-submitted")[0]?.event?.jobId;
    if (typeof jobId !== "string") throw new Error("the coordinator logged no job-submitted event");
    const cancel = await cluster.cli("cancel", jobId);
    if (cancel.code !== 0) throw new Error(`cannot cancel job ${jobId}: ${cancel.output}`);
    await job.wait();
    return {
      ...result,
      label: c.label,
      checkpointMs: c.checkpointMs,
      killedAttempt,
      // NaN when attempt 0 failed before it reached the trickle (a spurious restart).
      buildMs: trickles0.length === 0 ? NaN : Math.max(...trickles0) - Math.min(...firsts0),
      threadsAfterKill: modules.filter((ms) => ms >= killMs).length,
      importMs,
      records: f.arrivals.length,
      idle: await idleRestore(url, cluster.bucket, jobId, false),
    };
  } catch (error) {
    console.error(cluster.logs());
    if (job) console.error(`----- job\n${job.output}`);
    throw error;
  } finally {
    follower?.stop();
    if (job) {
      try {
        job.child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await job.wait();
    }
    await cluster.stop();
    // Deleting the stream ends a follower still blocked behind an open transaction.
    for (const name of [stream, `KV_${txnBucket}`]) await jsm.streams.delete(name).catch(() => {});
    if (follower && !await within(follower.done, 5_000)) {
      console.error(`warning: the follower of stream ${stream} did not stop`);
    }
    await nc.close();
  }
}

function fmtBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

const ms = (n: number) => Number.isFinite(n) ? `${Math.round(n)}` : "n/a";

/**
 * One row per run, then medians per case and ratios to the first case (the
 * baseline), as medians of the per-round ratios; then the RESULT line.
 */
function printReport(rounds: Rounds<RunResult>, cases: readonly Case[], s: Settings): void {
  const results = rounds.byRound.flat().map((sample) => sample.value);
  const cols = [
    ["case", 10],
    ["state", 10],
    ["cp every", 8],
    ["detect", 6],
    ["restart", 7],
    ["restore", 7],
    ["open", 5],
    ["1st cp", 6],
    ["commit", 6],
    ["TOTAL", 6],
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
    const key = c.label.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "");
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
    const pad = " ".repeat(11);
    const cp = (c: typeof b) =>
      `#${c.id}: ${c.durationMs} ms, ${fmtBytes(c.bytes)} (sync ${c.syncMs}, async ${c.asyncMs})`;
    const between = r.attempt - r.killedAttempt - 1;
    console.log(
      `${r.label.padEnd(10)} build ${ms(r.buildMs)} ms; killed attempt ${r.killedAttempt}, ` +
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
  console.log(`\n${resultLine({ ...result, rounds: rounds.count })}`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "3" },
      nats: { type: "string" },
      "baseline-keys": { type: "string", default: "10" },
      "small-keys": { type: "string", default: "100000" },
      "large-keys": { type: "string", default: "1000000" },
      "value-bytes": { type: "string", default: "100" },
      rate: { type: "string", default: "200" },
      "checkpoint-ms": { type: "string", default: "1000" },
      "large-checkpoint-ms": { type: "string", default: "1000,3000" },
      "heartbeat-timeout": { type: "string", default: "1000" },
      "restart-delay-ms": { type: "string", default: "0" },
      only: { type: "string" },
    },
  });
  const checkpointMs = Number(values["checkpoint-ms"]);
  const settings: Settings = {
    valueBytes: Number(values["value-bytes"]),
    rate: Number(values.rate),
    heartbeatTimeoutMs: Number(values["heartbeat-timeout"]),
    restartDelayMs: Number(values["restart-delay-ms"]),
  };
  const cases: Case[] = [
    { label: "baseline", keys: Number(values["baseline-keys"]), checkpointMs },
    { label: "~10MB", keys: Number(values["small-keys"]), checkpointMs },
    ...values["large-checkpoint-ms"].split(",").map((text) => {
      const ms = Number(text);
      const label = ms === checkpointMs ? "~100MB" : `~100MB/${ms / 1000}s`;
      return { label, keys: Number(values["large-keys"]), checkpointMs: ms };
    }),
  ];
  const only = values.only?.split(",");
  const selected = only === undefined ? cases : cases.filter((c) => only.includes(c.label));
  const nats = await benchNats(values.nats);
  const started = performance.now();
  let rounds: Rounds<RunResult>;
  try {
    rounds = await runRounds<RunResult>({
      rounds: Number(values.rounds),
      variants: selected.map((c) => ({
        name: c.label,
        run: () => runOnce(nats.url, c, settings),
      })),
      onSample: ({ round, value: r }) =>
        console.log(
          `round ${round} ${r.label}: ${Math.round(r.totalMs)} ms (state ${
            fmtBytes(r.idle.totalBytes)
          }, restored checkpoint #${r.restoredFrom})`,
        ),
    });
  } finally {
    await nats.stop();
  }
  printReport(rounds, selected, settings);
  console.log(`(benchmark took ${Math.round((performance.now() - started) / 1000)} s)`);
}
