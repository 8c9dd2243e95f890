/**
 * The chaos run of cluster mode (issue 3): the exactly-once audit job on a
 * coordinator and two worker processes, on a NATS server of its own, while
 * workers are SIGKILLed at random moments and at chosen fault points and
 * the NATS server restarts; then the committed output is audited record by
 * record against the failure-free expectation (per key exactly 1..N, in
 * order).
 *
 *     deno task chaos   # the long run: 1M records, 30 kills, 2 NATS crashes with 3 s outages,
 *                       # 3 SIGKILLs of the leading coordinator (two coordinators)
 *     deno run -A tests/chaos.ts [--keys K] [--per-key N] [--kills N] [--rate R]
 *                                [--checkpoint-interval MS] [--nats-restarts N] [--seed S]
 *                                [--nats-crash] [--nats-outage MS] [--logs FILE]
 *                                [--state-backend heap|sqlite] [--incremental]
 *                                [--materialization-interval MS] [--retain-on-finish]
 *                                [--savepoints] [--coordinator-kills N]
 *
 * `tests/chaos_test.ts` is the short run of `deno task test`.
 *
 * ## The run
 *
 * 1. Setup: `startNatsServer({ jetstream: true })` on a free port, the
 *    repository served over HTTP (`serveDirectory`), a `TestCluster` (one
 *    coordinator, two workers of two slots), the input stream filled with
 *    `keys` × `perKey` records (`publishAuditInput`), and the job
 *    `tests/jobs/audit_chaos_job.ts` submitted by its `http://` URL with a
 *    checkpoint every `checkpointIntervalMs` and its source rate-limited to
 *    `rate` records/s.
 * 2. Faults, one at a time, each once the job has completed a checkpoint
 *    since the previous fault, after a random pause (0..1.5 s): `kills`
 *    worker kills, shuffled, of four kinds: `external` (the run SIGKILLs a
 *    random worker process that runs a slot thread of the job) and three
 *    *armed* kinds, where the run creates `<dir>/arm-<point>` and the job's
 *    fault injector kills its own worker at that point: `alignment`,
 *    `after-snapshot` (after the sink's pre-commit, before the
 *    acknowledgement) and `before-commit` (the checkpoint completed, the
 *    sink has not committed). Each killed worker is replaced by a new
 *    process. The NATS server restarts `natsRestarts` times, spread over
 *    the kills; with `natsOutageMs` it is killed, stays down that long, and
 *    a worker is SIGKILLed while it is down. After the planned kills, one
 *    more armed kill (`before-commit` or `after-snapshot`) is armed as soon
 *    as the coordinator triggers the final checkpoint (FLIP-147).
 * 3. Check: once the job has ended, its output stream is read committed
 *    (`auditCommittedOutput`): lost, duplicated and out-of-order records,
 *    violations flagged by the job's own semantic check, and unexpected
 *    records must all be 0, and no transaction of the sink may be left open.
 *
 * 4. Leftovers: before the cluster stops, the checkpoint bucket is listed
 *    (`tests/_checkpoint_leftovers.ts`): with `retainOnFinish` false
 *    nothing of the job may be left; with it, only the retained
 *    checkpoint's objects and the shared blobs its metadata refers to, and
 *    none of those may be missing.
 *
 * With `coordinatorKills` N > 0 the cluster runs two coordinators (high
 * availability, lease 2 s): N times, spread over the worker kills and once
 * a checkpoint completed since the previous fault, the leading coordinator
 * is SIGKILLed and a new coordinator process started in its place (it
 * stands by); the standby takes over and resumes the job from its latest
 * checkpoint. The `KILLS` line counts them as `coordinator=…`.
 *
 * `stateBackend` / `incremental` / `materializationIntervalMs` run the job
 * on the SQLite backend and/or with incremental checkpoints (the changelog
 * backend), materializing often so that materializations and the
 * retention of shared blobs happen while the faults do.
 *
 * It prints progress lines, then `KILLS external=… alignment=…
 * after-snapshot=… before-commit=… nats_restarts=…` and, last,
 * `RESULT records=… kills=… restarts=… lost=… duplicated=… out_of_order=…
 * violations=… unexpected=… open_txns=…` and a `LEFTOVERS …` line (`restarts`: the job's restarts;
 * `open_txns`: transactions of the sink left open, which would stall
 * read-committed readers). On a failure it prints the cluster's logs.
 * Everything it started or created (processes, the NATS server with its
 * streams and buckets, the temporary directory) is removed, also on
 * failure. The CLI exits with 1 unless the run passed.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { delay } from "../runtime/actor/async.ts";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { auditCommittedOutput, type AuditReport } from "../examples/audit_check.ts";
import { publishAuditInput } from "../examples/exactly_once_audit.ts";
import { ensureStream } from "../examples/_jetstream.ts";
import { join } from "node:path";
import { Proc, REPO_ROOT, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import {
  countOpenTransactions,
  deleteStreams,
  KILL_KINDS,
  killArmed,
  killExternally,
  type KillKind,
  planKills,
  sinkMessages,
  Watch,
} from "./_chaos_kit.ts";
import { mulberry32 } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";
import {
  auditCheckpointLeftovers,
  type CheckpointLeftovers,
  leftoversLine,
} from "./_checkpoint_leftovers.ts";

/** Options of {@linkcode runChaos}; every one has a default. */
export interface ChaosOptions {
  /** Keys of the input. Default 100. */
  readonly keys?: number;
  /** Records per key. Default 2000 (200k records with 100 keys). */
  readonly perKey?: number;
  /** Worker kills to make. Default 12. */
  readonly kills?: number;
  /** NATS server restarts. Default 1. */
  readonly natsRestarts?: number;
  /**
   * Restart NATS after a SIGKILL (a crash: JetStream recovers its store
   * from what reached the files) instead of SIGTERM. Default false.
   */
  readonly natsCrash?: boolean;
  /**
   * Keep NATS down this long (ms) at each restart, and SIGKILL a worker while
   * it is down (counted as an external kill); the server is then killed
   * rather than stopped, since a stopped one loses its store. Default 0: a
   * plain restart.
   */
  readonly natsOutageMs?: number;
  /**
   * The source's rate over its subtasks, in records/s. Default: the records
   * over `kills` × 5 s, so the job lives long enough for every kill.
   */
  readonly rate?: number;
  /**
   * After the planned kills, arm one more kill, `before-commit` or
   * `after-snapshot` at random, as soon as the coordinator triggers the
   * final checkpoint (FLIP-147), to kill a worker between the sink's last
   * pre-commit and its commit (when the arming comes too late, it does not
   * fire). Counted with the kills. Default true.
   */
  readonly endOfInputKill?: boolean;
  /** Checkpoint interval of the job, in ms. Default 300. */
  readonly checkpointIntervalMs?: number;
  /** Seed of the random choices (fault order, victims, pauses). Default: random. */
  readonly seed?: number;
  /** How long one fault may take to be recovered from (a checkpoint completed), in ms. Default 180 000. */
  readonly recoveryTimeoutMs?: number;
  /** The job's keyed state backend. Default `"heap"`. */
  readonly stateBackend?: "heap" | "sqlite";
  /** Incremental checkpoints (the changelog backend, FLIP-158). Default false. */
  readonly incremental?: boolean;
  /** With `incremental`: the materialization interval, in ms. Default 1000. */
  readonly materializationIntervalMs?: number;
  /** Keep the last checkpoint after the job ended. Default false. */
  readonly retainOnFinish?: boolean;
  /**
   * Savepoints under faults: with each planned kill, `weir savepoint JOB`
   * is started 0..300 ms before the kill (a savepoint while a worker is
   * killed); every second one also has its client process SIGKILLed after
   * 0..500 ms (a client killed during a savepoint). Each savepoint must
   * either be stored whole (its metadata and every blob it refers to in the
   * bucket) or fail with a message; the job's output is audited as always.
   * Default false.
   */
  readonly savepoints?: boolean;
  /**
   * Unaligned checkpoints (FLIP-76) with this aligned-checkpoint timeout,
   * in ms (0: unaligned from the start). Default: aligned checkpoints.
   */
  readonly unalignedTimeoutMs?: number;
  /**
   * SIGKILLs of the leading coordinator, spread over the worker kills; the
   * run then has two coordinators (see the module docs). Default 0: one
   * coordinator, never killed.
   */
  readonly coordinatorKills?: number;
  /** Also write the cluster's and the job's logs to this file at the end (pass or fail). */
  readonly logFile?: string;
  /** Receives progress and result lines. Default `console.error` for progress, `console.log` for results. */
  readonly log?: (line: string) => void;
}

/** What became of the savepoints a run triggered (see `ChaosOptions.savepoints`). */
export interface SavepointOutcomes {
  /** Triggered. */
  triggered: number;
  /** Stored: the client printed a path. */
  stored: number;
  /** Refused or failed: the client exited non-zero, saying why. */
  failed: number;
  /** The client was SIGKILLed before it answered. */
  clientKilled: number;
  /** Clients that exited non-zero without a message (`weir:` or `error:` line): each fails the run. */
  silent: number;
  /** Stored savepoints whose metadata or a blob it refers to is missing: each fails the run. */
  broken: number;
  /** Failure messages seen, deduplicated (for the report). */
  messages: string[];
}

/** What {@linkcode runChaos} found. */
export interface ChaosResult {
  /** The seed used (to repeat the fault plan). */
  readonly seed: number;
  /** Records in the input. */
  readonly expectedRecords: number;
  /** Worker kills made, by kind. */
  readonly kills: Readonly<Record<KillKind, number>>;
  /**
   * Kills of the plan made (at most `kills`): the ones of step 2, without the
   * kill during a NATS outage and the end-of-input kill.
   */
  readonly plannedKills: number;
  /** Total worker kills: the planned ones, the one during each NATS outage, the end-of-input one. */
  readonly totalKills: number;
  /** NATS server restarts made. */
  readonly natsRestarts: number;
  /** SIGKILLs of the leading coordinator made. */
  readonly coordinatorKills: number;
  /** The job's restarts (failovers), from its result. */
  readonly restarts: number;
  /** The audit of the committed output. */
  readonly report: AuditReport;
  /** Transactions of the sink still open after the job finished (each would stall readers). */
  readonly openTransactions: number;
  /** Wall time of the whole run, in ms. */
  readonly durationMs: number;
  /** The checkpoint bucket's objects after the job ended, checked against retention. */
  readonly leftovers: CheckpointLeftovers;
  /** Savepoints triggered under faults, by outcome (all 0 without `savepoints`). */
  readonly savepoints: SavepointOutcomes;
  /** The `KILLS …` line. */
  readonly killsLine: string;
  /** The `RESULT …` line. */
  readonly resultLine: string;
}

/**
 * Runs the chaos scenario (see the module docs).
 * @returns the kills made and the audit; the run passed when every audit
 *   count but `records` is 0 (see {@linkcode chaosPassed}).
 * @throws {Error} when the job fails, hangs, or a process cannot start
 *   (after printing the cluster's logs).
 */
export async function runChaos(options: ChaosOptions = {}): Promise<ChaosResult> {
  const keys = options.keys ?? 100;
  const perKey = options.perKey ?? 2000;
  const kills = options.kills ?? 12;
  const natsRestarts = options.natsRestarts ?? 1;
  const records = keys * perKey;
  const rate = options.rate ?? Math.max(50, Math.round(records / (kills * 5)));
  const intervalMs = options.checkpointIntervalMs ?? 300;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const recoveryTimeoutMs = options.recoveryTimeoutMs ?? 180_000;
  const progress = options.log ?? ((line: string) => console.error(line));
  const emit = options.log ?? ((line: string) => console.log(line));
  const rand = mulberry32(seed);
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  progress(
    `chaos: seed ${seed}, ${keys} keys × ${perKey} records, ${kills} kills, ` +
      `${natsRestarts} NATS restarts, ${rate} records/s, checkpoints every ${intervalMs} ms, ` +
      `state backend ${options.stateBackend ?? "heap"}` +
      (options.incremental
        ? `, incremental (materialization every ${options.materializationIntervalMs ?? 1000} ms)`
        : "") +
      (options.retainOnFinish ? ", retained on finish" : ""),
  );

  const suffix = crypto.randomUUID().slice(0, 8);
  const source = `chaos-in-${suffix}`;
  const sink = `chaos-out-${suffix}`;
  const txnBucket = `chaos-txn-${suffix}`;
  const nats = await startNatsServer({ jetstream: true });
  const connection: NatsConnectionOptions = { servers: nats.url, name: "weir-chaos" };
  const files = serveDirectory();
  const armDir = await Deno.makeTempDir({ prefix: "weir-chaos-" });
  const coordinatorKills = options.coordinatorKills ?? 0;
  const cluster = new TestCluster({
    nats: nats.url,
    workers: 2,
    slots: 2,
    ...(coordinatorKills > 0 ? { coordinators: 2, coordinatorArgs: ["--lease-ms", "2000"] } : {}),
  });
  let job: Proc | undefined;
  let failed = true;
  try {
    await cluster.start();
    await publishAuditInput(connection, source, { keys, perKey, partitions: 4 });
    await ensureStream(connection, sink);
    progress(`chaos: ${records} records published (${elapsed()}); submitting the job`);
    job = new Proc("job", [
      "run",
      "-A",
      `${files.url}tests/jobs/audit_chaos_job.ts`,
      "--nats",
      nats.url,
      "--source-stream",
      source,
      "--sink-stream",
      sink,
      "--txn-bucket",
      txnBucket,
      "--arm-dir",
      armDir,
      "--rate",
      String(rate),
      "--checkpoint-interval",
      String(intervalMs),
      "--state-backend",
      options.stateBackend ?? "heap",
      "--materialization-interval",
      String(options.materializationIntervalMs ?? 1000),
      ...(options.incremental ? ["--incremental"] : []),
      ...(options.retainOnFinish ? ["--retain-on-finish"] : []),
      ...(options.unalignedTimeoutMs === undefined ? [] : [
        "--unaligned",
        "--aligned-checkpoint-timeout",
        String(options.unalignedTimeoutMs),
      ]),
    ]);
    const watch = new Watch(cluster, job);
    for (const w of cluster.workers) watch.track(w);
    const made: Record<KillKind, number> = {
      external: 0,
      alignment: 0,
      "after-snapshot": 0,
      "before-commit": 0,
    };
    let restartsMade = 0;
    let coordinatorKillsMade = 0;
    const spOutcomes: SavepointOutcomes = {
      triggered: 0,
      stored: 0,
      failed: 0,
      clientKilled: 0,
      silent: 0,
      broken: 0,
      messages: [],
    };
    const spRuns: Promise<void>[] = [];
    const spPaths: string[] = [];
    const triggerSavepoint = async (jobId: string, killAfterMs: number | undefined) => {
      spOutcomes.triggered++;
      const client = new Proc(`savepoint ${spOutcomes.triggered}`, [
        "run",
        "-A",
        join(REPO_ROOT, "cli.ts"),
        "savepoint",
        jobId,
        "--nats",
        nats.url,
      ]);
      let killedIt = false;
      const timer = killAfterMs === undefined ? undefined : setTimeout(() => {
        killedIt = true;
        client.child.kill("SIGKILL");
      }, killAfterMs);
      const status = await client.wait();
      clearTimeout(timer);
      const path = client.output.split("\n").find((l) => l.startsWith("nats-object-store://"));
      if (status.code === 0 && path !== undefined) {
        spOutcomes.stored++;
        spPaths.push(path.trim());
      } else if (killedIt) {
        spOutcomes.clientKilled++;
      } else {
        const message = client.output.split("\n").find((l) => /^(weir|error)/.test(l.trim()));
        if (message === undefined) spOutcomes.silent++;
        else spOutcomes.failed++;
        const text = (message ?? `exit ${status.code}, no message`).trim().slice(0, 200);
        if (!spOutcomes.messages.includes(text)) spOutcomes.messages.push(text);
      }
      progress(
        `chaos: ${client.name}: ${
          status.code === 0 ? path : killedIt ? "client killed" : `failed (exit ${status.code})`
        } (${elapsed()})`,
      );
    };
    const restartAfter = new Set(
      Array.from(
        { length: natsRestarts },
        (_, i) => Math.floor(((i + 1) * kills) / (natsRestarts + 1)),
      ),
    );
    const killCoordinatorAfter = new Set(
      Array.from(
        { length: coordinatorKills },
        (_, i) => Math.max(1, Math.floor(((i + 0.5) * kills) / coordinatorKills)),
      ),
    );
    let mark = 0;
    const plan = planKills(kills, rand);
    let done = 0;
    // A fault that did not fire (the job was between attempts) is tried again later, a few times.
    for (let i = 0, retries = 0; i < plan.length; i++) {
      if (!await watch.checkpointAfter(mark, recoveryTimeoutMs, `before kill ${done + 1}`)) break;
      await delay(Math.floor(rand() * 1500));
      if (watch.jobEnded) break;
      const kind = plan[i]!;
      mark = watch.mark();
      if (options.savepoints) {
        const killClient = spOutcomes.triggered % 2 === 1;
        spRuns.push(triggerSavepoint(jobIdOf(job), killClient ? rand() * 500 : undefined));
        await delay(Math.floor(rand() * 300));
      }
      const killed = kind === "external"
        ? await killExternally(watch, rand)
        : await killArmed(watch, armDir, kind);
      if (killed === undefined) {
        progress(`chaos: a ${kind} kill did not fire (${elapsed()})`);
        if (retries++ < kills) plan.push(kind);
        continue;
      }
      made[kind]++;
      done++;
      progress(
        `chaos: kill ${done}/${kills}: ${kind}, ${killed}; the sink stream holds ` +
          `${await sinkMessages(connection, sink)} messages (${elapsed()})`,
      );
      watch.track(await cluster.startWorker());
      if (killCoordinatorAfter.has(done)) {
        killCoordinatorAfter.delete(done);
        if (!await watch.checkpointAfter(mark, recoveryTimeoutMs, `after kill ${done}`)) break;
        mark = watch.mark();
        const leader = cluster.leader();
        if (leader === undefined) {
          progress(
            `chaos: no coordinator leads now; the coordinator kill is skipped (${elapsed()})`,
          );
        } else {
          await leader.kill("SIGKILL");
          coordinatorKillsMade++;
          progress(
            `chaos: coordinator kill ${coordinatorKillsMade}/${coordinatorKills}: SIGKILL of the ` +
              `leader ${leader.name} (${elapsed()})`,
          );
          await cluster.startCoordinator();
        }
      }
      if (restartAfter.has(done)) {
        if (!await watch.checkpointAfter(mark, recoveryTimeoutMs, `after kill ${done}`)) break;
        mark = watch.mark();
        const outageMs = options.natsOutageMs ?? 0;
        if (options.natsCrash || outageMs > 0) await nats.kill();
        if (outageMs > 0) {
          const victim = await killExternally(watch, rand);
          if (victim !== undefined) {
            made.external++;
            progress(`chaos: kill during the NATS outage: external, ${victim} (${elapsed()})`);
          }
          await delay(outageMs);
        }
        await nats.restart();
        restartsMade++;
        progress(
          `chaos: NATS server ${
            options.natsCrash || outageMs > 0 ? "killed and " : ""
          }restarted after ${outageMs} ms (${elapsed()})`,
        );
        while (watch.live().length < 2) watch.track(await cluster.startWorker());
      }
    }
    // The whole input at the rate limit, twice, and five minutes more.
    const finishMs = (2 * records / rate) * 1000 + 300_000;
    if (options.endOfInputKill ?? true) {
      // Near the end, wait for the coordinator to trigger the final checkpoint, then arm at once.
      let held = 0;
      await waitUntil(
        async () => watch.jobEnded || (held = await sinkMessages(connection, sink)) >= records,
        {
          timeoutMs: finishMs,
          pollMs: 100,
          missing: () => `the sink stream holds ${held} of ${records} messages, the job runs on`,
        },
      );
      const finalLine = /all sources ended; final checkpoint \d+/;
      await waitUntil(
        () => watch.jobEnded || finalLine.test(cluster.coordinatorLog.slice(mark)),
        {
          timeoutMs: finishMs,
          pollMs: 5,
          missing: () => "the coordinator did not trigger the final checkpoint",
        },
      );
      const endKind = rand() < 0.5 ? "before-commit" : "after-snapshot";
      const killed = watch.jobEnded ? undefined : await killArmed(watch, armDir, endKind);
      if (killed === undefined) {
        progress(`chaos: the end-of-input kill did not fire (${elapsed()})`);
      } else {
        made[endKind]++;
        const final = /all sources ended; final checkpoint (\d+)/.exec(
          cluster.coordinatorLog.slice(mark),
        )?.[1];
        progress(
          `chaos: end-of-input kill: ${endKind}, ${killed}` +
            (final === undefined ? "" : ` (the final checkpoint was ${final})`) + ` (${elapsed()})`,
        );
        watch.track(await cluster.startWorker());
      }
    }
    progress(`chaos: faults done (${elapsed()}); waiting for the job to finish`);
    const ticker = setInterval(() => {
      sinkMessages(connection, sink).then((n) =>
        progress(`chaos: the sink stream holds ${n} messages (${elapsed()})`)
      );
    }, 10_000);
    const deadline = setTimeout(() => {
      progress(`chaos: the job did not finish within ${finishMs} ms of the last fault; killing it`);
      job?.child.kill("SIGKILL");
    }, finishMs);
    const status = await job.wait().finally(() => {
      clearInterval(ticker);
      clearTimeout(deadline);
    });
    if (status.code !== 0) {
      throw new Error(
        `the audit job ended with exit code ${status.code}` +
          (status.signal === null ? "" : ` (signal ${status.signal})`),
      );
    }
    const restarts = Number(/RESULT restarts=(\d+)/.exec(job.output)?.[1] ?? NaN);
    const report = await auditCommittedOutput({
      connection,
      stream: sink,
      txnBucket,
      keys,
      perKey,
    });
    const openTransactions = await countOpenTransactions(connection, txnBucket);
    await Promise.all(spRuns);
    const leftovers = await auditCheckpointLeftovers(nats.url, cluster.bucket);
    for (const path of spPaths) {
      const id = /\/(savepoint-[^/]+)\/?$/.exec(path)?.[1];
      const kept = id === undefined ? undefined : leftovers.retained[id];
      const damaged = leftovers.missing.some((m) => m.startsWith(`${id}/`)) ||
        leftovers.strayCheckpointObjects.some((m) => m.startsWith(`${id}/`));
      if (kept === undefined || kept.length !== 1 || damaged) spOutcomes.broken++;
    }
    const totalKills = KILL_KINDS.reduce((n, k) => n + made[k], 0);
    const killsLine = `KILLS ${KILL_KINDS.map((k) => `${k}=${made[k]}`).join(" ")} ` +
      `nats_restarts=${restartsMade} coordinator=${coordinatorKillsMade}`;
    const resultLine =
      `RESULT records=${report.records} kills=${totalKills} restarts=${restarts} ` +
      `lost=${report.lost} duplicated=${report.duplicated} out_of_order=${report.outOfOrder} ` +
      `violations=${report.violations} unexpected=${report.unexpected} open_txns=${openTransactions}`;
    const result: ChaosResult = {
      seed,
      expectedRecords: records,
      kills: made,
      plannedKills: done,
      totalKills,
      natsRestarts: restartsMade,
      coordinatorKills: coordinatorKillsMade,
      restarts,
      report,
      openTransactions,
      leftovers,
      savepoints: spOutcomes,
      durationMs: performance.now() - started,
      killsLine,
      resultLine,
    };
    failed = !chaosPassed(result, {
      kills,
      natsRestarts,
      coordinatorKills,
      retainOnFinish: options.retainOnFinish ?? false,
    });
    progress(`chaos: done in ${elapsed()}, seed ${seed}`);
    emit(killsLine);
    emit(resultLine);
    emit(leftoversLine(leftovers));
    if (options.savepoints) {
      const o = spOutcomes;
      emit(
        `SAVEPOINTS triggered=${o.triggered} stored=${o.stored} failed=${o.failed} ` +
          `client_killed=${o.clientKilled} silent=${o.silent} broken=${o.broken}`,
      );
      for (const m of o.messages) emit(`SAVEPOINT-FAILURE ${m}`);
    }
    return result;
  } finally {
    const logs = `${cluster.logs()}\n----- job\n${job?.output ?? "(not started)"}`;
    if (failed) {
      progress(`chaos: FAILED (seed ${seed}); cluster logs follow`);
      progress(logs);
    }
    if (options.logFile !== undefined) {
      await Deno.writeTextFile(options.logFile, logs).catch((e) =>
        progress(`chaos: cannot write ${options.logFile}: ${e}`)
      );
    }
    await job?.kill().catch(() => {});
    await cluster.stop().catch((e) => progress(`chaos: cannot stop the cluster: ${e}`));
    await deleteStreams(connection, [source, sink, `KV_${txnBucket}`]);
    await files.close().catch(() => {});
    await nats.stop();
    await Deno.remove(armDir, { recursive: true }).catch(() => {});
  }
}

/** The job id the submitting process printed (`weir: submitted job <id> …`). */
function jobIdOf(job: Proc): string {
  const id = /submitted job (\S+)/.exec(job.output)?.[1];
  if (id === undefined) throw new Error(`the job process printed no job id:\n${job.output}`);
  return id;
}

/**
 * Whether the run passed: every count but records 0, every planned fault
 * made, and the checkpoint bucket holds what retention promises (nothing
 * without `retainOnFinish`; else one retained checkpoint, nothing missing,
 * no unreferenced shared blob, no stray object).
 */
export function chaosPassed(
  result: ChaosResult,
  expected: {
    readonly kills: number;
    readonly natsRestarts: number;
    readonly coordinatorKills?: number;
    readonly retainOnFinish?: boolean;
  },
): boolean {
  const r = result.report;
  const l = result.leftovers;
  // Savepoints are never deleted (checked on their own, as `broken`).
  const isJob = (name: string) => !name.startsWith("savepoint-");
  const storageClean = expected.retainOnFinish
    ? l.jobs.filter(isJob).length === 1 && l.missing.length === 0 &&
      l.unreferencedShared.length === 0 && l.strayCheckpointObjects.length === 0 &&
      Object.values(l.retained).every((ids) => ids.length >= 1)
    : l.objects.filter(isJob).length === 0 && l.missing.length === 0;
  const sp = result.savepoints;
  return storageClean && sp.broken === 0 && sp.silent === 0 && r.lost === 0 && r.duplicated === 0 &&
    r.outOfOrder === 0 &&
    r.violations === 0 &&
    r.unexpected === 0 && r.records === result.expectedRecords && result.openTransactions === 0 &&
    result.plannedKills >= expected.kills && result.natsRestarts >= expected.natsRestarts &&
    result.coordinatorKills >= (expected.coordinatorKills ?? 0);
}

if (import.meta.main) {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      keys: text,
      "per-key": text,
      kills: text,
      rate: text,
      "checkpoint-interval": text,
      "nats-restarts": text,
      seed: text,
      logs: text,
      "nats-crash": { type: "boolean" },
      "nats-outage": text,
      "state-backend": text,
      incremental: { type: "boolean" },
      "materialization-interval": text,
      "retain-on-finish": { type: "boolean" },
      savepoints: { type: "boolean" },
      "coordinator-kills": text,
    },
  });
  const number = (v: string | undefined) => v === undefined ? undefined : Number(v);
  const kills = number(values.kills) ?? 12;
  const natsRestarts = number(values["nats-restarts"]) ?? 1;
  const options: ChaosOptions = Object.fromEntries(
    Object.entries({
      keys: number(values.keys),
      perKey: number(values["per-key"]),
      kills,
      natsRestarts,
      rate: number(values.rate),
      checkpointIntervalMs: number(values["checkpoint-interval"]),
      seed: number(values.seed),
      logFile: values.logs,
      natsCrash: values["nats-crash"],
      natsOutageMs: number(values["nats-outage"]),
      stateBackend: values["state-backend"],
      incremental: values.incremental,
      materializationIntervalMs: number(values["materialization-interval"]),
      retainOnFinish: values["retain-on-finish"],
      savepoints: values.savepoints,
      coordinatorKills: number(values["coordinator-kills"]),
    }).filter(([, v]) => v !== undefined),
  );
  try {
    const result = await runChaos(options);
    const retainOnFinish = values["retain-on-finish"] ?? false;
    const coordinatorKills = number(values["coordinator-kills"]) ?? 0;
    Deno.exit(
      chaosPassed(result, { kills, natsRestarts, coordinatorKills, retainOnFinish }) ? 0 : 1,
    );
  } catch (error) {
    console.error(`error: ${error instanceof Error ? error.stack : error}`);
    Deno.exit(1);
  }
}
