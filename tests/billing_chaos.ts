/**
 * The chaos run of the seeds' billing case (DESIGN §10 case 6, issue 9):
 * the billing job of `examples/billing.ts` (dedup with event-time TTL,
 * per-account totals, MariaDB XA sink) on a coordinator and two worker
 * processes, while workers are SIGKILLed at random moments and at armed
 * fault points; then the MariaDB table is compared with the failure-free
 * result, computed from the input without any engine. The seeds' naive
 * scheme (`examples/billing_naive.ts`) then runs on the same input under
 * the same kind of kills, for comparison.
 *
 *     deno task billing:chaos   # the long run: 100k bills, 10% copies, 30 kills
 *     deno run -A tests/billing_chaos.ts [--bills N] [--accounts A] [--kills N] [--rate R]
 *        [--checkpoint-interval MS] [--batch-size B] [--naive-rate R] [--seed S]
 *        [--mariadb URL] [--logs FILE]
 *
 * `tests/billing_chaos_test.ts` is the short run of `deno task test`.
 *
 * ## The run
 *
 * 1. Setup: a NATS server of its own (`startNatsServer`), the repository
 *    served over HTTP, a `TestCluster` (one coordinator, two workers of two
 *    slots), the bill stream filled by `publishBillingInput` (`bills`
 *    bills, a tenth of them published again 1–5 minutes of event time
 *    later, over 4 partitions), and MariaDB tables with names unique to the
 *    run, `billing_chaos_<id>` (the job's) and `billing_naive_<id>` (the
 *    naive scheme's), on the server at `--mariadb` (default
 *    `mariadb://root@127.0.0.1:3306/test`).
 * 2. Weir: the job `tests/jobs/billing_chaos_job.ts` is submitted by its
 *    `http://` URL, its source limited to `rate` messages/s (default: the
 *    input over `kills` × 5 s). Then `kills` worker kills, one at a time,
 *    each after a checkpoint completed since the previous one and a random
 *    pause (0..1.5 s), of four kinds (`planKills` of `_chaos_kit.ts`):
 *    `external` (SIGKILL of a random worker running a slot of the job) and
 *    the armed `alignment`, `after-snapshot` (after `XA PREPARE`, before
 *    the acknowledgement) and `before-commit` (checkpoint complete, before
 *    `XA COMMIT`), each at least twice from 12 kills. A killed worker is
 *    replaced. When the coordinator triggers the final checkpoint, one more
 *    `before-commit` or `after-snapshot` kill is armed (when it comes in
 *    time).
 * 3. Check: once the job ended, the table is read (read committed) and
 *    checked by `checkUpdateRows` of `examples/billing_check.ts`, which
 *    defines `lost`, `duplicated`, `unexpected`, `inconsistent` and
 *    `wrong_totals` precisely; the copies table (the copies the dedup
 *    rejected) by `checkCopyIds` (`copies_lost`, `copies_duplicated`). The
 *    run's XA transactions still prepared (`XA RECOVER`, xids of the run's
 *    prefixes) are counted as `open_xa`, and rolled back.
 * 4. Naive: `examples/billing_naive.ts` reads the same stream in batches of
 *    `batchSize` messages at `naiveRate` messages/s, and is SIGKILLed at
 *    random moments (uniform over two batches' time after each start) and
 *    restarted, as often as the Weir job's workers were killed, then runs
 *    to its end. Its totals table
 *    is checked by `checkTotalRows` (per-account counts: see
 *    `billing_check.ts`); `cross_batch` is the part of `duplicated` the
 *    naive scheme makes without any failure (copies in another batch than
 *    their bill, `naiveFailureFreeTotals`), `replayed` the rest (batches
 *    partly written before a kill and written again).
 *
 * It prints progress lines, then `KILLS external=… alignment=…
 * after-snapshot=… before-commit=…`, `CHECK rows=… unexpected=…
 * inconsistent=… copies=… copies_lost=… copies_duplicated=… open_xa=…
 * restarts=…`, `NAIVE bills=… kills=… lost=…
 * duplicated=… wrong_totals=… cross_batch=… replayed=…` and, last, `RESULT
 * bills=… kills=… lost=… duplicated=… wrong_totals=…` for the Weir job
 * (`bills`: distinct bills of the input; `kills`: worker kills made). The
 * run passed when the RESULT and CHECK counts are all 0, the table holds
 * one row per bill, and every planned kill was made; the CLI exits with 1
 * otherwise. Everything it created (processes, NATS server, tables, the
 * temporary directory) is removed, also on failure; on a failure it prints
 * the cluster's logs.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { delay } from "../runtime/actor/async.ts";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import {
  type BillingReport,
  checkCopyIds,
  checkTotalRows,
  checkUpdateRows,
  type CopiesReport,
  naiveFailureFreeTotals,
  type TotalsReport,
} from "../examples/billing_check.ts";
import { billingInput, expectedTotals, publishBillingInput } from "../examples/billing_input.ts";
import {
  createBillingTable,
  DEFAULT_MARIADB_URL,
  dropBillingTables,
  type MariaDbConfig,
  parseMariaDbUrl,
  readCopyIds,
  readTotalRows,
  readUpdateRows,
  withMariaDb,
} from "../examples/billing_tables.ts";
import { Proc, REPO_ROOT, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import {
  deleteStreams,
  KILL_KINDS,
  killArmed,
  killExternally,
  type KillKind,
  planKills,
  Watch,
} from "./_chaos_kit.ts";
import { mulberry32 } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";

/** Options of {@linkcode runBillingChaos}; every one has a default. */
export interface BillingChaosOptions {
  /** Distinct bills of the input. Default 100 000. */
  readonly bills?: number;
  /** Accounts. Default 1000. */
  readonly accounts?: number;
  /** Worker kills to make (and naive-process kills). Default 12. */
  readonly kills?: number;
  /** Source rate (and naive rate), in messages/s. Default: the input over `kills` × 5 s. */
  readonly rate?: number;
  /** Checkpoint interval of the job, in ms. Default 300. */
  readonly checkpointIntervalMs?: number;
  /** Messages per batch of the naive scheme. Default 1000. */
  readonly batchSize?: number;
  /**
   * The naive scheme's rate, in messages/s. Default: `rate`, or the input
   * over `kills` × 2 s when that is faster (so its run lasts about as long
   * as its kills need).
   */
  readonly naiveRate?: number;
  /** Seed of the input and of every random choice. Default: random. */
  readonly seed?: number;
  /** The MariaDB server. Default {@linkcode DEFAULT_MARIADB_URL}. */
  readonly mariadb?: MariaDbConfig;
  /** Arm one more kill at the final checkpoint. Default true. */
  readonly endOfInputKill?: boolean;
  /** How long one fault may take to be recovered from, in ms. Default 180 000. */
  readonly recoveryTimeoutMs?: number;
  /** Also write the cluster's and the job's logs to this file at the end. */
  readonly logFile?: string;
  /** Receives progress and result lines. Default `console.error` / `console.log`. */
  readonly log?: (line: string) => void;
}

/** What the naive scheme produced under kills. */
export interface NaiveOutcome {
  /** The check of its totals table. */
  readonly report: TotalsReport;
  /** Kills of its process made. */
  readonly kills: number;
  /** Extra contributions it makes without failures (copies across batches). */
  readonly crossBatch: number;
  /** Extra contributions beyond those: batches written again after a kill. */
  readonly replayed: number;
  /** The `NAIVE …` line. */
  readonly line: string;
}

/** What {@linkcode runBillingChaos} found. */
export interface BillingChaosResult {
  /** The seed used. */
  readonly seed: number;
  /** Worker kills made, by kind. */
  readonly kills: Readonly<Record<KillKind, number>>;
  /** Kills of the plan made (at most `kills`), without the end-of-input kill. */
  readonly plannedKills: number;
  /** All worker kills made. */
  readonly totalKills: number;
  /** The job's restarts. */
  readonly restarts: number;
  /** The check of the job's table. */
  readonly report: BillingReport;
  /** The check of the job's copies table (the copies its dedup rejected). */
  readonly copies: CopiesReport;
  /** Prepared XA transactions of the run left after the job ended (rolled back by the run). */
  readonly openXa: number;
  /** The naive scheme's outcome. */
  readonly naive: NaiveOutcome;
  /** Wall time, in ms. */
  readonly durationMs: number;
  /** The `KILLS …` line. */
  readonly killsLine: string;
  /** The `CHECK …` line. */
  readonly checkLine: string;
  /** The `RESULT …` line. */
  readonly resultLine: string;
}

/**
 * Counts the prepared XA transactions of the run's sinks (their xid
 * prefixes are the run's table and `<table>.c`, see `billingSinks`) and
 * rolls them back.
 */
async function rollBackLeftovers(config: MariaDbConfig, table: string): Promise<number> {
  return await withMariaDb(config, async (conn) => {
    const rows = await conn.query("XA RECOVER") as {
      formatID: number;
      gtrid_length: number;
      data: Uint8Array | string;
    }[];
    const hex = (bytes: Uint8Array) =>
      `X'${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}'`;
    let found = 0;
    for (const row of rows) {
      const data = typeof row.data === "string" ? new TextEncoder().encode(row.data) : row.data;
      const gtrid = data.subarray(0, row.gtrid_length);
      const name = new TextDecoder().decode(gtrid);
      if (!name.startsWith(`weir:${table}:`) && !name.startsWith(`weir:${table}.c:`)) continue;
      found++;
      await conn.query(
        `XA ROLLBACK ${hex(gtrid)}, ${hex(data.subarray(row.gtrid_length))}, ${row.formatID}`,
      );
    }
    return found;
  });
}

/**
 * Runs the billing chaos scenario (see the module docs).
 * @returns the kills made, the checks of both schemes and the printed lines.
 * @throws {Error} when the job fails, hangs, or a process cannot start
 *   (after printing the cluster's logs).
 */
export async function runBillingChaos(
  options: BillingChaosOptions = {},
): Promise<BillingChaosResult> {
  const bills = options.bills ?? 100_000;
  const accounts = options.accounts ?? 1000;
  const kills = options.kills ?? 12;
  const intervalMs = options.checkpointIntervalMs ?? 300;
  const batchSize = options.batchSize ?? 1000;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const mariadb = options.mariadb ?? parseMariaDbUrl(DEFAULT_MARIADB_URL);
  const recoveryTimeoutMs = options.recoveryTimeoutMs ?? 180_000;
  const progress = options.log ?? ((line: string) => console.error(line));
  const emit = options.log ?? ((line: string) => console.log(line));
  const rand = mulberry32(seed);
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;

  const suffix = crypto.randomUUID().slice(0, 8);
  const stream = `billing-in-${suffix}`;
  const table = `billing_chaos_${suffix}`;
  const naiveTable = `billing_naive_${suffix}`;
  const shape = { bills, accounts, seed };
  const input = [...billingInput(stream, shape)];
  const expected = expectedTotals(input);
  const rate = options.rate ?? Math.max(50, Math.round(input.length / (kills * 5)));
  progress(
    `billing chaos: seed ${seed}, ${bills} bills (${input.length} messages with copies) over ` +
      `${accounts} accounts, ${kills} kills, ${rate} messages/s, checkpoints every ${intervalMs} ms`,
  );

  const nats = await startNatsServer({ jetstream: true });
  const connection: NatsConnectionOptions = { servers: nats.url, name: "weir-billing-chaos" };
  const files = serveDirectory();
  const armDir = await Deno.makeTempDir({ prefix: "weir-billing-chaos-" });
  const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
  const mariadbUrl = `mariadb://${encodeURIComponent(mariadb.user)}${
    mariadb.password === "" ? "" : `:${encodeURIComponent(mariadb.password)}`
  }@${mariadb.host}:${mariadb.port}/${encodeURIComponent(mariadb.database)}`;
  let job: Proc | undefined;
  let naiveProc: Proc | undefined;
  const naiveLogs: string[] = [];
  let failed = true;
  try {
    await cluster.start();
    await publishBillingInput(connection, stream, shape);
    await createBillingTable(mariadb, table);
    progress(
      `billing chaos: ${input.length} messages published (${elapsed()}); submitting the job`,
    );
    job = new Proc("job", [
      "run",
      "-A",
      `${files.url}tests/jobs/billing_chaos_job.ts`,
      "--nats",
      nats.url,
      "--stream",
      stream,
      "--table",
      table,
      "--mariadb",
      mariadbUrl,
      "--arm-dir",
      armDir,
      "--rate",
      String(rate),
      "--checkpoint-interval",
      String(intervalMs),
    ]);
    const watch = new Watch(cluster, job);
    for (const w of cluster.workers) watch.track(w);
    const made: Record<KillKind, number> = {
      external: 0,
      alignment: 0,
      "after-snapshot": 0,
      "before-commit": 0,
    };
    let mark = 0;
    const plan = planKills(kills, rand);
    let done = 0;
    for (let i = 0, retries = 0; i < plan.length; i++) {
      if (!await watch.checkpointAfter(mark, recoveryTimeoutMs, `before kill ${done + 1}`)) break;
      await delay(Math.floor(rand() * 1500));
      if (watch.jobEnded) break;
      const kind = plan[i]!;
      mark = watch.mark();
      const killed = kind === "external"
        ? await killExternally(watch, rand)
        : await killArmed(watch, armDir, kind);
      if (killed === undefined) {
        progress(`billing chaos: a ${kind} kill did not fire (${elapsed()})`);
        if (retries++ < kills) plan.push(kind);
        continue;
      }
      made[kind]++;
      done++;
      progress(`billing chaos: kill ${done}/${kills}: ${kind}, ${killed} (${elapsed()})`);
      watch.track(await cluster.startWorker());
    }
    const finishMs = (2 * input.length / rate) * 1000 + 300_000;
    if (options.endOfInputKill ?? true) {
      const finalLine = /all sources ended; final checkpoint \d+/;
      await waitUntil(
        () => watch.jobEnded || finalLine.test(cluster.coordinator.output.slice(mark)),
        {
          timeoutMs: finishMs,
          pollMs: 5,
          missing: () => "the coordinator did not trigger the final checkpoint",
        },
      );
      const endKind = rand() < 0.5 ? "before-commit" : "after-snapshot";
      const killed = watch.jobEnded ? undefined : await killArmed(watch, armDir, endKind);
      if (killed === undefined) {
        progress(`billing chaos: the end-of-input kill did not fire (${elapsed()})`);
      } else {
        made[endKind]++;
        progress(`billing chaos: end-of-input kill: ${endKind}, ${killed} (${elapsed()})`);
        watch.track(await cluster.startWorker());
      }
    }
    progress(`billing chaos: faults done (${elapsed()}); waiting for the job to finish`);
    const deadline = setTimeout(() => {
      progress(`billing chaos: the job did not finish within ${finishMs} ms; killing it`);
      job?.child.kill("SIGKILL");
    }, finishMs);
    const status = await job.wait().finally(() => clearTimeout(deadline));
    if (status.code !== 0) {
      throw new Error(
        `the billing job ended with exit code ${status.code}` +
          (status.signal === null ? "" : ` (signal ${status.signal})`),
      );
    }
    const restarts = Number(/RESULT restarts=(\d+)/.exec(job.output)?.[1] ?? NaN);
    const report = checkUpdateRows(await readUpdateRows(mariadb, table), expected);
    const copies = checkCopyIds(await readCopyIds(mariadb, table), expected);
    const openXa = await rollBackLeftovers(mariadb, table);
    const totalKills = KILL_KINDS.reduce((n, k) => n + made[k], 0);
    progress(`billing chaos: the job's table checked (${elapsed()}); running the naive scheme`);

    // The naive scheme, same input, same kind of kills: each at a random moment of two batches' time.
    const naiveRate = options.naiveRate ?? Math.max(rate, Math.round(input.length / (kills * 2)));
    const killWindowMs = (2 * batchSize / naiveRate) * 1000;
    let naiveKills = 0;
    let finished = false;
    const naiveArgs = [
      "run",
      "-A",
      `${REPO_ROOT}/examples/billing_naive.ts`,
      "--nats",
      nats.url,
      "--stream",
      stream,
      "--table",
      naiveTable,
      "--mariadb",
      mariadbUrl,
      "--batch-size",
      String(batchSize),
      "--rate",
      String(naiveRate),
    ];
    for (let round = 0; !finished; round++) {
      const proc = naiveProc = new Proc(`naive-${round}`, naiveArgs);
      let exited = false;
      proc.child.status.then(() => exited = true);
      if (naiveKills < totalKills) {
        // Kill it at a random moment once it runs (unless it ends first).
        await waitUntil(() => exited || /naive: started at offset/.test(proc.output), {
          timeoutMs: 120_000,
          missing: () => `naive-${round} did not start:\n${proc.output}`,
        });
        await delay(Math.floor(rand() * killWindowMs));
        if (!exited) {
          await proc.kill("SIGKILL");
          naiveKills++;
          const last = /offset (\d+)\n$/.exec(proc.output)?.[1];
          progress(
            `billing chaos: naive kill ${naiveKills}/${totalKills}` +
              (last === undefined ? "" : `, its last recorded offset ${last}`) + ` (${elapsed()})`,
          );
          naiveLogs.push(`----- ${proc.name}\n${proc.output}`);
          continue;
        }
      }
      const s = await proc.endWithin(finishMs);
      naiveLogs.push(`----- ${proc.name}\n${proc.output}`);
      if (s.code !== 0 || !/NAIVE_DONE/.test(proc.output)) {
        throw new Error(`the naive scheme failed with exit code ${s.code}:\n${proc.output}`);
      }
      finished = true;
    }
    const naiveReport = checkTotalRows(await readTotalRows(mariadb, naiveTable), {
      bills: expected.bills.size,
      accounts: expected.accounts,
    });
    const failureFree = naiveFailureFreeTotals(input, batchSize);
    let crossBatch = 0;
    for (const [account, want] of expected.accounts) {
      crossBatch += (failureFree.get(account)?.count ?? 0) - want.count;
    }
    const naiveLine =
      `NAIVE bills=${naiveReport.bills} kills=${naiveKills} lost=${naiveReport.lost} ` +
      `duplicated=${naiveReport.duplicated} wrong_totals=${naiveReport.wrongTotals} ` +
      `cross_batch=${crossBatch} replayed=${naiveReport.duplicated - crossBatch}`;

    const killsLine = `KILLS ${KILL_KINDS.map((k) => `${k}=${made[k]}`).join(" ")}`;
    const checkLine = `CHECK rows=${report.rows} unexpected=${report.unexpected} ` +
      `inconsistent=${report.inconsistent} copies=${copies.copies} copies_lost=${copies.lost} ` +
      `copies_duplicated=${copies.duplicated} open_xa=${openXa} restarts=${restarts}`;
    const resultLine = `RESULT bills=${report.bills} kills=${totalKills} lost=${report.lost} ` +
      `duplicated=${report.duplicated} wrong_totals=${report.wrongTotals}`;
    const result: BillingChaosResult = {
      seed,
      kills: made,
      plannedKills: done,
      totalKills,
      restarts,
      report,
      copies,
      openXa,
      naive: {
        report: naiveReport,
        kills: naiveKills,
        crossBatch,
        replayed: naiveReport.duplicated - crossBatch,
        line: naiveLine,
      },
      durationMs: performance.now() - started,
      killsLine,
      checkLine,
      resultLine,
    };
    failed = !billingChaosPassed(result, { kills });
    progress(`billing chaos: done in ${elapsed()}, seed ${seed}`);
    emit(killsLine);
    emit(checkLine);
    emit(naiveLine);
    emit(resultLine);
    return result;
  } finally {
    const logs = `${cluster.logs()}\n----- job\n${job?.output ?? "(not started)"}\n${
      naiveLogs.join("\n")
    }`;
    if (failed) {
      progress(`billing chaos: FAILED (seed ${seed}); logs follow`);
      progress(logs);
    }
    if (options.logFile !== undefined) {
      await Deno.writeTextFile(options.logFile, logs).catch((e) =>
        progress(`billing chaos: cannot write ${options.logFile}: ${e}`)
      );
    }
    await job?.kill().catch(() => {});
    await naiveProc?.kill().catch(() => {});
    await cluster.stop().catch((e) => progress(`billing chaos: cannot stop the cluster: ${e}`));
    await rollBackLeftovers(mariadb, table).catch((e) =>
      progress(`billing chaos: cannot roll back XA leftovers: ${e}`)
    );
    await dropBillingTables(mariadb, [table, naiveTable]).catch((e) =>
      progress(`billing chaos: cannot drop tables ${table}, ${naiveTable}: ${e}`)
    );
    await deleteStreams(connection, [stream]);
    await files.close().catch(() => {});
    await nats.stop();
    await Deno.remove(armDir, { recursive: true }).catch(() => {});
  }
}

/**
 * Whether the Weir run passed: RESULT and CHECK counts 0 (every copy in
 * the copies table once), one row per bill, no XA transaction left
 * prepared, and every planned kill made.
 */
export function billingChaosPassed(
  result: BillingChaosResult,
  expected: { readonly kills: number },
): boolean {
  const r = result.report;
  return r.lost === 0 && r.duplicated === 0 && r.wrongTotals === 0 && r.unexpected === 0 &&
    r.inconsistent === 0 && r.rows === r.bills && result.openXa === 0 &&
    result.copies.lost === 0 && result.copies.duplicated === 0 &&
    result.plannedKills >= expected.kills;
}

if (import.meta.main) {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      bills: text,
      accounts: text,
      kills: text,
      rate: text,
      "checkpoint-interval": text,
      "batch-size": text,
      "naive-rate": text,
      seed: text,
      mariadb: text,
      logs: text,
    },
  });
  const number = (v: string | undefined) => v === undefined ? undefined : Number(v);
  const kills = number(values.kills) ?? 12;
  const options: BillingChaosOptions = Object.fromEntries(
    Object.entries({
      bills: number(values.bills),
      accounts: number(values.accounts),
      kills,
      rate: number(values.rate),
      checkpointIntervalMs: number(values["checkpoint-interval"]),
      batchSize: number(values["batch-size"]),
      naiveRate: number(values["naive-rate"]),
      seed: number(values.seed),
      mariadb: values.mariadb === undefined ? undefined : parseMariaDbUrl(values.mariadb),
      logFile: values.logs,
    }).filter(([, v]) => v !== undefined),
  );
  try {
    const result = await runBillingChaos(options);
    Deno.exit(billingChaosPassed(result, { kills }) ? 0 : 1);
  } catch (error) {
    console.error(`error: ${error instanceof Error ? error.stack : error}`);
    Deno.exit(1);
  }
}
