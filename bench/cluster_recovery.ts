/**
 * Benchmark (c) of cluster mode: recovery time, from the SIGKILL of a
 * worker process to the first committed output record of the restarted
 * attempt (issue 10 items 5 and 9), for a job with almost no keyed state
 * (the baseline) and ~10 MB, ~100 MB (and, with `--sizes ...,1GB`, ~1 GB)
 * of it, each with local recovery off and on (`cli.ts worker
 * --local-recovery`, `runtime/task/local_state_store.ts`) and incremental
 * checkpoints off and on (`enableCheckpointing(…, { incrementalCheckpoints
 * })`). The cases run interleaved for `--rounds` rounds (default 1: the
 * matrix is 9 runs, several minutes on 2 cores; `runRounds()` of
 * `_rounds.ts`); the report gives every run with its phases and how many
 * keyed handles the restarted attempt read locally and from checkpoint
 * storage, the medians with each case's ratio to the baseline (median of
 * the per-round ratios), and a table of median totals per state size by
 * local recovery x incremental checkpoints.
 *
 *     deno task bench:recovery
 *     deno run -A bench/cluster_recovery.ts [--rounds 1] [--sizes 10MB,100MB[,1GB]]
 *         [--local off,on] [--incremental off,on] [--restart-victim on|off]
 *         [--baseline-keys 10] [--small-keys 100000] [--large-keys 1000000]
 *         [--huge-keys 10000000] [--value-bytes 100] [--rate 200] [--checkpoint-ms 1000]
 *         [--heartbeat-timeout 3000] [--restart-delay-ms 0] [--only "baseline,100MB L+ I-"]
 *         [--nats URL]
 *
 * Case labels are `<size> L± I±` (local recovery, incremental checkpoints).
 *
 * ## The killed worker comes back (`--restart-victim on`, the default)
 *
 * Right after the SIGKILL the benchmark starts a new worker process with
 * the victim's id, as a supervisor (systemd, Kubernetes) would. The
 * coordinator sees a heartbeat of a new instance under a known id and
 * declares the old one lost at once (no heartbeat timeout to wait for),
 * and redeploys over the same workers, so each subtask returns to its slot
 * and, with local recovery, finds its local copy. The restarted process
 * must start slot threads and import the job module again (counted in
 * `restore`). With `--restart-victim off` the surviving worker runs the
 * whole job: its slot threads are reused, but the victim's subtask
 * restores from checkpoint storage whatever local recovery says.

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
 *   (with the victim restarted: the new process's first heartbeat, i.e. its
 *   start-up; otherwise the heartbeat timeout, counted from the last
 *   heartbeat, up to 500 ms before the kill, and the coordinator sweeps
 *   every timeout/4: between timeout − 500 ms and timeout × 1.25);
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
 * attempt (one thread per job and slot); the restarted victim's are new,
 * so its module import is on the recovery path; the report says how many
 * slot threads evaluated the job module after the kill (its `module`
 * marks). Apart from that, the benchmark measures in this process, on an
 * idle cluster after the job was cancelled, the restore of keyed subtask
 * 0's handles of the latest checkpoint: Object Store download, then decode
 * and load into the job's keyed state backend (heap, under the changelog
 * backend for incremental cases). Nothing is asserted on timing.
 *
 * The report (runs, medians, ratios, the matrix, the RESULT line) is
 * `cluster_recovery_report.ts`.
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
import { breakdown, eventsNamed, parseLog, parseMarks } from "./recovery_breakdown.ts";
import { type Rounds, runRounds } from "./_rounds.ts";
import { benchNats } from "./_cluster_bench.ts";
import {
  type Case,
  fmtBytes,
  type IdleRestore,
  printReport,
  type RunResult,
  type Settings,
} from "./cluster_recovery_report.ts";

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
    // Small state travels inside the metadata (memoryThresholdBytes).
    for (const h of handles) blobs.set(h.path, h.inline ?? await storage.readState(jobId, h));
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
  const localDir = await Deno.makeTempDir({ prefix: "weir-bench-local-state-" });
  const nc = await connectNats({ servers: url, name: "weir-bench-recovery" });
  const jsm = await jetstreamApi.jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  const cluster = new TestCluster({
    nats: url,
    workers: 2,
    slots: 2,
    heartbeatTimeoutMs: s.heartbeatTimeoutMs,
    env: { WEIR_LOG_LEVEL: "info", WEIR_LOG_FORMAT: "json" },
    workerArgs: ["--local-recovery", c.local ? "on" : "off", "--local-state-dir", localDir],
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
      ...(c.incremental ? ["--incremental"] : []),
    ]);
    // Committed trickle records of both splits from the latest attempt: a completed checkpoint
    // of that attempt holds the full state.
    let jobEnded = false;
    void job.wait().then(() => jobEnded = true);
    await waitUntil("committed trickle records of both source splits", () => {
      if (f.error) throw f.error;
      if (jobEnded) throw new Error(`the job client ended before its trickle:\n${job!.output}`);
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
    const victimId = `w${cluster.workers.indexOf(victim)}-${Deno.pid}`;
    const killMs = wallClockMs();
    victim.child.kill("SIGKILL");
    await victim.wait();
    // A supervisor restarts the process at once, with its id: the coordinator sees the new
    // instance replace the old one, and local recovery can find the victim's copies.
    const restarting = s.restartVictim ? cluster.startWorker(victimId) : undefined;
    const newer = () => f.arrivals.filter((a) => a.record.att > killedAttempt);
    await waitUntil(
      `committed records of both keyed subtasks after attempt ${killedAttempt}`,
      () => {
        if (f.error) throw f.error;
        return new Set(newer().map((a) => a.record.sub)).size === 2;
      },
      180_000,
    );
    await restarting;
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
    const keyedReads = { local: 0, remote: 0 };
    for (const w of cluster.workers) {
      for (const l of parseLog(w.output)) {
        const path = l.event?.path;
        if (l.ms < killMs || typeof path !== "string" || !/keyed|changelog/.test(path)) continue;
        if (l.event?.name === "local-recovery-read") keyedReads.local++;
        if (l.event?.name === "local-recovery-fallback") keyedReads.remote++;
      }
    }
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
      case: c,
      keyedReads,
      checkpointMs: c.checkpointMs,
      killedAttempt,
      // NaN when attempt 0 failed before it reached the trickle (a spurious restart).
      buildMs: trickles0.length === 0 ? NaN : Math.max(...trickles0) - Math.min(...firsts0),
      threadsAfterKill: modules.filter((ms) => ms >= killMs).length,
      importMs,
      records: f.arrivals.length,
      // The cancelled job's checkpoints may be discarded while they are read: then no figures.
      idle: await idleRestore(url, cluster.bucket, jobId, c.incremental).catch((error) => {
        console.error(`warning: no idle restore of job ${jobId}: ${error}`);
        return { fileBytes: NaN, totalBytes: result.before.bytes, downloadMs: NaN, loadMs: NaN };
      }),
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
    await Deno.remove(localDir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "1" },
      nats: { type: "string" },
      "baseline-keys": { type: "string", default: "10" },
      "small-keys": { type: "string", default: "100000" },
      "large-keys": { type: "string", default: "1000000" },
      "huge-keys": { type: "string", default: "10000000" },
      sizes: { type: "string", default: "10MB,100MB" },
      local: { type: "string", default: "off,on" },
      incremental: { type: "string", default: "off,on" },
      "value-bytes": { type: "string", default: "100" },
      rate: { type: "string", default: "200" },
      "checkpoint-ms": { type: "string", default: "1000" },
      "heartbeat-timeout": { type: "string", default: "3000" },
      "restart-delay-ms": { type: "string", default: "0" },
      "restart-victim": { type: "string", default: "on" },
      only: { type: "string" },
    },
  });
  const onOff = (flag: string, text: string): boolean[] =>
    text.split(",").map((v) => {
      if (v === "on") return true;
      if (v === "off") return false;
      throw new RangeError(`--${flag} takes on, off or on,off: current value is '${text}'`);
    });
  const checkpointMs = Number(values["checkpoint-ms"]);
  const settings: Settings = {
    valueBytes: Number(values["value-bytes"]),
    rate: Number(values.rate),
    heartbeatTimeoutMs: Number(values["heartbeat-timeout"]),
    restartDelayMs: Number(values["restart-delay-ms"]),
    restartVictim: onOff("restart-victim", values["restart-victim"])[0]!,
  };
  const keysOf: Record<string, number> = {
    "10MB": Number(values["small-keys"]),
    "100MB": Number(values["large-keys"]),
    "1GB": Number(values["huge-keys"]),
  };
  const cases: Case[] = [{
    label: "baseline",
    size: "baseline",
    keys: Number(values["baseline-keys"]),
    checkpointMs,
    local: true,
    incremental: false,
  }];
  for (const size of values.sizes.split(",")) {
    const keys = keysOf[size];
    if (keys === undefined) {
      throw new RangeError(`--sizes takes 10MB, 100MB and 1GB: current value is '${size}'`);
    }
    for (const incremental of onOff("incremental", values.incremental)) {
      for (const local of onOff("local", values.local)) {
        const label = `${size} L${local ? "+" : "-"} I${incremental ? "+" : "-"}`;
        cases.push({ label, size, keys, checkpointMs, local, incremental });
      }
    }
  }
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
          }, restored checkpoint #${r.restoredFrom}, keyed reads local/remote ${r.keyedReads.local}/${r.keyedReads.remote})`,
        ),
    });
  } finally {
    await nats.stop();
  }
  printReport(rounds, selected, settings);
  console.log(`(benchmark took ${Math.round((performance.now() - started) / 1000)} s)`);
}
