/**
 * Savepoints in cluster mode, through the `weir` CLI, on a NATS server of
 * the test's own with a coordinator and two worker processes:
 *
 * - `weir savepoint JOB` stores a savepoint of a running keyed job in the
 *   checkpoint bucket and prints its path;
 * - `weir stop JOB --savepoint` ends the job FINISHED with a final savepoint,
 *   without firing event-time windows; `weir run job.ts -s PATH` resumes it at
 *   parallelism 2 -> 4 -> 3, each run on one third of the input, published
 *   before it starts (the source is unbounded, so no run ends before the
 *   test stops it; the last run is stopped with --drain once all input is
 *   committed, so its last windows fire as at the end of a bounded input),
 *   and the committed output (the audit records,
 *   read committed, and the windows' counts) is exactly, record by record,
 *   what a run without stops commits: every key's `seq` 1..N once and in
 *   order (a key whose state were lost would be flagged as a violation), and
 *   every window's count once;
 * - retention never deletes a savepoint: all three outlive their jobs;
 * - `weir stop JOB --savepoint --drain` fires every window (the maximum
 *   watermark) before the savepoint: the windows' counts then add up to the
 *   records committed, per key (the source is unbounded: without the drain
 *   its last windows would never fire).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, REPO_ROOT, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";
import { auditInput, auditPassed } from "../examples/exactly_once_audit.ts";
import { auditCommittedOutput } from "../examples/audit_check.ts";
import { ensureStream, publishAll } from "../examples/_jetstream.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { parseSavepointPath } from "../runtime/checkpoint/savepoint_storage.ts";
import type { WindowCount } from "./jobs/savepoint_job.ts";

const KEYS = 12;
const PER_KEY = 150;
const WINDOW_S = 10;
const JOB = join(REPO_ROOT, "tests/jobs/savepoint_job.ts");
/** How long one job run may take before the test fails, in ms. */
const RUN_TIMEOUT_MS = 120_000;

interface Streams {
  readonly source: string;
  readonly sink: string;
  readonly windows: string;
  readonly txnBucket: string;
}

/** Publishes `seq` `from..to` of every key (in `auditInput`'s order: seq by seq). */
async function publishPhase(nats: string, s: Streams, from: number, to: number): Promise<void> {
  const all = [...auditInput(s.source, { keys: KEYS, perKey: PER_KEY })];
  await publishAll({ servers: nats }, all.slice((from - 1) * KEYS, to * KEYS));
}

/** Unique streams, created empty. */
async function streams(nats: string, tag: string): Promise<Streams> {
  const id = crypto.randomUUID().slice(0, 8);
  const s = {
    source: `sp-${tag}-in-${id}`,
    sink: `sp-${tag}-out-${id}`,
    windows: `sp-${tag}-win-${id}`,
    txnBucket: `sp-${tag}-txn-${id}`,
  };
  await ensureStream({ servers: nats }, s.source);
  await ensureStream({ servers: nats }, s.sink);
  await ensureStream({ servers: nats }, s.windows);
  return s;
}

/** `weir run savepoint_job.ts [-s SP] --nats URL -- …`, as a process. */
function run(
  cluster: TestCluster,
  s: Streams,
  options: { parallelism: number; rate?: number; savepoint?: string },
): Proc {
  return new Proc("run", [
    "run",
    "-A",
    join(REPO_ROOT, "cli.ts"),
    "run",
    JOB,
    ...(options.savepoint === undefined ? [] : ["-s", options.savepoint]),
    "--nats",
    cluster.options.nats,
    "--",
    "--source-stream",
    s.source,
    "--sink-stream",
    s.sink,
    "--windows-stream",
    s.windows,
    "--txn-bucket",
    s.txnBucket,
    "--parallelism",
    String(options.parallelism),
    "--window",
    String(WINDOW_S),
    "--unbounded",
    ...(options.rate === undefined ? [] : ["--rate", String(options.rate)]),
  ]);
}

async function jobIdOf(p: Proc): Promise<string> {
  await p.waitFor(/submitted job \S+/, 60_000);
  return /submitted job (\S+)/.exec(p.output)![1]!;
}

/** Records committed to `stream` so far (read committed, up to its last sequence now). */
async function committed<T>(nats: string, stream: string, txnBucket: string): Promise<T[]> {
  const out: T[] = [];
  const decoder = new TextDecoder();
  try {
    for await (
      const r of readCommitted({
        connection: { servers: nats },
        stream,
        bounded: true,
        txnBucket,
      })
    ) out.push(JSON.parse(decoder.decode(r.data)) as T);
  } catch (error) {
    if (/not found|does not exist/i.test(String(error))) return [];
    throw error;
  }
  return out;
}

async function cli(cluster: TestCluster, ...args: string[]): Promise<string> {
  const { code, output } = await cluster.cli(...args);
  assert.equal(code, 0, `weir ${args.join(" ")} failed:\n${output}`);
  const path = output.trim().split("\n").find((l) => l.startsWith("nats-object-store://"));
  assert.ok(path, `weir ${args.join(" ")} printed no savepoint path:\n${output}`);
  return path;
}

async function listStatus(cluster: TestCluster, jobId: string): Promise<string | undefined> {
  const { output } = await cluster.cli("list", "--json");
  const overview = JSON.parse(output.trim().split("\n").at(-1)!) as {
    jobs: { jobId: string; status: string }[];
  };
  return overview.jobs.find((j) => j.jobId === jobId)?.status;
}

async function waitForCommitted(
  nats: string,
  s: Streams,
  atLeast: number,
): Promise<void> {
  let seen = 0;
  await waitUntil(
    async () => (seen = (await committed(nats, s.sink, s.txnBucket)).length) >= atLeast,
    {
      timeoutMs: 60_000,
      pollMs: 300,
      missing: () => `${seen} of ${atLeast} records committed to ${s.sink}`,
    },
  );
}

/** Sum of window counts and records per key. */
function perKey(records: readonly { key: string }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of records) out.set(r.key, (out.get(r.key) ?? 0) + 1);
  return out;
}

async function withCluster(fn: (cluster: TestCluster, nats: string) => Promise<void>) {
  const server = await startNatsServer({ jetstream: true });
  const cluster = new TestCluster({ nats: server.url, workers: 2, slots: 4 });
  try {
    await cluster.start();
    await fn(cluster, server.url);
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await server.stop();
  }
}

Deno.test({
  name:
    "cluster: weir savepoint, stop --savepoint and run -s at parallelism 2 -> 4 -> 3 commit exactly the output of a run without stops, and keep every savepoint",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withCluster(async (cluster, nats) => {
      const s = await streams(nats, "rescale");
      const total = KEYS * PER_KEY;
      const third = PER_KEY / 3;

      // Run 1 at parallelism 2 on the first third of the input: a savepoint
      // while it runs, then stop with a savepoint once that third is committed.
      await publishPhase(nats, s, 1, third);
      const run1 = run(cluster, s, { parallelism: 2 });
      const job1 = await jobIdOf(run1);
      await waitForCommitted(nats, s, 10);
      const sp1 = await cli(cluster, "savepoint", job1);
      const where = parseSavepointPath(sp1);
      assert.ok(where.kind === "object-store" && where.bucket === cluster.bucket, sp1);
      assert.ok(where.savepointId.startsWith(`savepoint-${job1}-`), sp1);
      await waitForCommitted(nats, s, third * KEYS);
      const sp2 = await cli(cluster, "stop", job1, "--savepoint");
      assert.equal((await run1.endWithin(RUN_TIMEOUT_MS)).code, 0, run1.output);
      assert.equal(await listStatus(cluster, job1), "FINISHED");
      const after1 = await committed<{ key: string }>(nats, s.sink, s.txnBucket);
      const windows1 = await committed<WindowCount>(nats, s.windows, s.txnBucket);
      assert.equal(after1.length, third * KEYS);
      const counted1 = windows1.reduce((n, w) => n + w.count, 0);
      assert.ok(
        counted1 < after1.length,
        `without --drain the open windows did not fire (${counted1} counted of ${after1.length})`,
      );

      // Run 2 at parallelism 4 from the stop's savepoint, on the second third.
      await publishPhase(nats, s, third + 1, 2 * third);
      const run2 = run(cluster, s, { parallelism: 4, savepoint: sp2 });
      const job2 = await jobIdOf(run2);
      await waitForCommitted(nats, s, 2 * third * KEYS);
      const sp3 = await cli(cluster, "stop", job2, "--savepoint");
      assert.equal((await run2.endWithin(RUN_TIMEOUT_MS)).code, 0, run2.output);

      // Run 3 at parallelism 3 on the rest; once all is committed, a stop with
      // --drain fires the last windows, as the end of a bounded input would.
      await publishPhase(nats, s, 2 * third + 1, PER_KEY);
      const run3 = run(cluster, s, { parallelism: 3, savepoint: sp3 });
      const job3 = await jobIdOf(run3);
      await waitForCommitted(nats, s, total);
      await cli(cluster, "stop", job3, "--savepoint", "--drain");
      assert.equal((await run3.endWithin(RUN_TIMEOUT_MS)).code, 0, run3.output);

      const report = await auditCommittedOutput({
        connection: { servers: nats },
        stream: s.sink,
        txnBucket: s.txnBucket,
        keys: KEYS,
        perKey: PER_KEY,
      });
      assert.ok(auditPassed(report), JSON.stringify(report));
      assert.equal(report.records, total);
      // Windows: each key's windows exactly once, with the counts of a run without stops.
      const windows = await committed<WindowCount>(nats, s.windows, s.txnBucket);
      const expected: string[] = [];
      for (let k = 0; k < KEYS; k++) {
        for (
          let end = WINDOW_S * 1000;
          end <= (PER_KEY + WINDOW_S) * 1000;
          end += WINDOW_S * 1000
        ) {
          const first = Math.max(1, end / 1000 - WINDOW_S);
          const last = Math.min(PER_KEY, end / 1000 - 1);
          if (last >= first) expected.push(`k${k}@${end}=${last - first + 1}`);
        }
      }
      assert.deepEqual(
        windows.map((w) => `${w.key}@${w.end}=${w.count}`).sort(),
        expected.sort(),
      );

      // Retention never deletes a savepoint: all three outlive their jobs.
      const nc = await connectNats({ servers: nats });
      try {
        const storage = await ObjectStoreCheckpointStorage.open({
          connection: nc,
          bucket: cluster.bucket,
        });
        for (const path of [sp1, sp2, sp3]) {
          const id = parseSavepointPath(path).savepointId;
          assert.equal((await storage.listCompleted(id)).length, 1, `${path} is gone`);
        }
      } finally {
        await nc.close();
      }
    }),
});

Deno.test({
  name:
    "cluster: weir stop --savepoint --drain fires every event-time window before the savepoint and ends the job FINISHED",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withCluster(async (cluster, nats) => {
      const s = await streams(nats, "drain");
      await publishPhase(nats, s, 1, PER_KEY);
      const p = run(cluster, s, { parallelism: 2, rate: 150 });
      const jobId = await jobIdOf(p);
      await waitForCommitted(nats, s, 150);
      const sp = await cli(cluster, "stop", jobId, "--savepoint", "--drain");
      assert.equal((await p.endWithin(RUN_TIMEOUT_MS)).code, 0, p.output);
      assert.equal(await listStatus(cluster, jobId), "FINISHED");
      assert.match(sp, new RegExp(`/savepoint-${jobId}-\\d+/$`));
      const records = await committed<{ key: string }>(nats, s.sink, s.txnBucket);
      const windows = await committed<WindowCount>(nats, s.windows, s.txnBucket);
      const counted = new Map<string, number>();
      for (const w of windows) counted.set(w.key, (counted.get(w.key) ?? 0) + w.count);
      // The maximum watermark fired every window: each record is counted in one.
      assert.deepEqual(
        new Map([...counted].sort()),
        new Map([...perKey(records)].sort()),
      );
    }),
});
