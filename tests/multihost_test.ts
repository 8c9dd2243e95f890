/**
 * Cluster mode across hosts: a coordinator on the machine's side and one
 * worker (one slot) on each of 4 simulated hosts (network namespaces of
 * `_netns.ts`), all on one NATS server reached over the hosts' own links.
 *
 * The job is the savepoint job (`tests/jobs/savepoint_job.ts`): the
 * exactly-once audit (a JetStream source of `{"key","seq"}` records, a
 * keyed-state check that each key's `seq` goes 1, 2, 3, … and a
 * transactional JetStream sink) and a tumbling event-time window counting
 * each key's records. One lineage of three runs, each on a third of the
 * input, published before it starts (the source is unbounded: a run ends
 * only by a stop with savepoint):
 *
 * 1. **2 workers** (hosts 0 and 1), parallelism 2; `weir stop --savepoint`.
 * 2. **4 workers** (hosts 2 and 3 join), parallelism 4, restored with
 *    `weir run -s`: every worker runs a slot thread of the job (it spreads
 *    over the 4 hosts). The source is rate-limited and only half of this
 *    run's input is published; once some of it is committed, host 3's link
 *    is cut: the coordinator declares its worker lost (heartbeat timeout)
 *    and the job fails over to the other three, from its latest checkpoint.
 *    The link is restored (the cut worker's old subtasks come back as
 *    zombies of an older attempt, fenced off) and the other half published,
 *    so the run is mid-input at the cut whatever the timing. Stopped with a
 *    savepoint; its client reports at least one restart.
 * 3. **3 workers** (host 3's worker stopped), parallelism 3, restored from
 *    run 2's savepoint; stopped with `--drain` once all input is committed,
 *    so the last windows fire.
 *
 * At the end the committed output, read committed, must be exactly, record
 * by record, the expected set (every key's `seq` 1..N once: no loss, no
 * duplicate, no violation record, which a key whose check state were lost
 * would produce), and the windows must count every key's records once
 * (per-key counts equal N, every window exactly once): the keyed state of
 * both operators went through the failover and both rescales whole.
 *
 * Needs root and iproute2's `ip`; skipped, saying which is missing,
 * otherwise. Takes about 1-2 minutes; every wait has a generous timeout and
 * nothing is asserted on time.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, REPO_ROOT, TestCluster } from "./_cluster.ts";
import { netnsUnavailable, type SimulatedHosts, withSimulatedHosts } from "./_netns.ts";
import { waitUntil } from "./_wait.ts";
import { auditInput, auditPassed } from "../examples/exactly_once_audit.ts";
import { auditCommittedOutput, type AuditedRecord } from "../examples/audit_check.ts";
import { ensureStream, publishAll } from "../examples/_jetstream.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import type { WindowCount } from "./jobs/savepoint_job.ts";

const KEYS = 12;
const PER_KEY = 150;
const THIRD = PER_KEY / 3;
const WINDOW_S = 10;
/** Records per second of run 2 (all source subtasks together), so records flow at the cut. */
const RUN2_RATE = 30;
/** Run 2's input is published in two halves: up to this seq before the cut, the rest after it. */
const CUT_SEQ = THIRD + THIRD / 2;
const JOB = join(REPO_ROOT, "tests/jobs/savepoint_job.ts");
const CLI = join(REPO_ROOT, "cli.ts");
/** How long one wait (a run's end, output to be committed, workers to join) may take, in ms. */
const WAIT_MS = 120_000;

interface Streams {
  readonly source: string;
  readonly sink: string;
  readonly windows: string;
  readonly txnBucket: string;
}

/** Publishes `seq` `from..to` of every key. */
async function publishPhase(nats: string, s: Streams, from: number, to: number): Promise<void> {
  const all = [...auditInput(s.source, { keys: KEYS, perKey: PER_KEY })];
  await publishAll({ servers: nats }, all.slice((from - 1) * KEYS, to * KEYS));
}

/** `weir run savepoint_job.ts [-s SP] --nats URL -- …`, on the machine's side. */
function run(
  cluster: TestCluster,
  s: Streams,
  o: { parallelism: number; rate?: number; savepoint?: string },
): Proc {
  return new Proc("run", [
    "run",
    "-A",
    CLI,
    "run",
    JOB,
    ...(o.savepoint === undefined ? [] : ["-s", o.savepoint]),
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
    String(o.parallelism),
    "--window",
    String(WINDOW_S),
    "--unbounded",
    ...(o.rate === undefined ? [] : ["--rate", String(o.rate)]),
  ]);
}

async function jobIdOf(p: Proc): Promise<string> {
  await p.waitFor(/submitted job \S+/, WAIT_MS);
  return /submitted job (\S+)/.exec(p.output)![1]!;
}

/** Records committed to `stream` so far (read committed, up to its last sequence now). */
async function committed<T>(nats: string, stream: string, txnBucket: string): Promise<T[]> {
  const out: T[] = [];
  const decoder = new TextDecoder();
  for await (
    const r of readCommitted({ connection: { servers: nats }, stream, bounded: true, txnBucket })
  ) out.push(JSON.parse(decoder.decode(r.data)) as T);
  return out;
}

async function waitForCommitted(nats: string, s: Streams, atLeast: number): Promise<void> {
  let seen = 0;
  await waitUntil(
    async () => (seen = (await committed(nats, s.sink, s.txnBucket)).length) >= atLeast,
    {
      timeoutMs: WAIT_MS,
      pollMs: 300,
      missing: () => `${seen} of ${atLeast} records committed to ${s.sink}`,
    },
  );
}

/** `weir <args…>`, which must succeed and print a savepoint path; returns it. */
async function savepointCli(cluster: TestCluster, ...args: string[]): Promise<string> {
  const { code, output } = await cluster.cli(...args);
  assert.equal(code, 0, `weir ${args.join(" ")} failed:\n${output}`);
  const path = output.trim().split("\n").find((l) => l.startsWith("nats-object-store://"));
  assert.ok(path, `weir ${args.join(" ")} printed no savepoint path:\n${output}`);
  return path;
}

/** Waits until the coordinator's live workers are exactly `ids` (`weir list --json`). */
async function waitForWorkers(cluster: TestCluster, ids: readonly string[]): Promise<void> {
  let listed: string[] = [];
  const want = [...ids].sort();
  await waitUntil(
    async () => {
      const { output } = await cluster.cli("list", "--json");
      const json = output.split("\n").find((l) => l.startsWith("{"));
      if (json === undefined) return false;
      listed = (JSON.parse(json) as { workers: { workerId: string }[] }).workers
        .map((w) => w.workerId).sort();
      return JSON.stringify(listed) === JSON.stringify(want);
    },
    {
      timeoutMs: WAIT_MS,
      pollMs: 500,
      missing: () => `the coordinator lists workers ${listed.join(", ")}, not ${want.join(", ")}`,
    },
  );
}

/** The hosts whose worker started a slot thread for `jobId` (its log says so). */
function hostsRunning(workers: readonly Proc[], jobId: string): number[] {
  return workers.flatMap((w, i) =>
    w.output.includes(`starting a thread for job ${jobId} `) ? [i] : []
  );
}

/** Every window a run without stops commits: `k<i>@<end ms>=<count>`. */
function expectedWindows(): string[] {
  const out: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    for (let end = WINDOW_S * 1000; end <= (PER_KEY + WINDOW_S) * 1000; end += WINDOW_S * 1000) {
      const first = Math.max(1, end / 1000 - WINDOW_S);
      const last = Math.min(PER_KEY, end / 1000 - 1);
      if (last >= first) out.push(`k${k}@${end}=${last - first + 1}`);
    }
  }
  return out.sort();
}

/** Starts the worker of host `host` (one slot) and waits until it is connected. */
async function startWorker(
  lab: SimulatedHosts,
  cluster: TestCluster,
  host: number,
  id: string,
): Promise<Proc> {
  const w = lab.deno(host, `h${host}`, [
    "run",
    "-A",
    CLI,
    "worker",
    "--nats",
    lab.natsUrl,
    "--slots",
    "1",
    "--id",
    id,
    "--local-state-dir",
    lab.hostDirectory(host),
  ]);
  cluster.workers.push(w);
  await w.waitFor(/weir worker .*slots/, WAIT_MS);
  return w;
}

const skip = netnsUnavailable();
if (skip !== undefined) console.warn(`multihost_test.ts is skipped: ${skip}`);

Deno.test({
  name:
    "multihost: a job on 4 simulated hosts fails over when a host's link is cut and rescales 2 -> 4 -> 3 workers through savepoints, committing every record exactly once with every key's state",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withSimulatedHosts({ hosts: 4 }, async (lab) => {
      const nats = lab.natsUrl;
      const cluster = new TestCluster({ nats, workers: 0, slots: 1, heartbeatTimeoutMs: 3000 });
      try {
        await cluster.start();
        const suffix = crypto.randomUUID().slice(0, 8);
        const ids = [0, 1, 2, 3].map((i) => `mh-h${i}-${suffix}`);
        const id = crypto.randomUUID().slice(0, 8);
        const s: Streams = {
          source: `mh-in-${id}`,
          sink: `mh-out-${id}`,
          windows: `mh-win-${id}`,
          txnBucket: `mh-txn-${id}`,
        };
        for (const stream of [s.source, s.sink, s.windows]) {
          await ensureStream({ servers: nats }, stream);
        }

        // Run 1: 2 workers, parallelism 2.
        const workers = [
          await startWorker(lab, cluster, 0, ids[0]!),
          await startWorker(lab, cluster, 1, ids[1]!),
        ];
        await waitForWorkers(cluster, ids.slice(0, 2));
        await publishPhase(nats, s, 1, THIRD);
        const run1 = run(cluster, s, { parallelism: 2 });
        const job1 = await jobIdOf(run1);
        await waitForCommitted(nats, s, THIRD * KEYS);
        const sp1 = await savepointCli(cluster, "stop", job1, "--savepoint");
        assert.equal((await run1.endWithin(WAIT_MS)).code, 0, run1.output);
        assert.deepEqual(hostsRunning(workers, job1), [0, 1]);

        // Run 2: 4 workers, parallelism 4, rate-limited so that host 3's link is cut mid-run.
        workers.push(await startWorker(lab, cluster, 2, ids[2]!));
        workers.push(await startWorker(lab, cluster, 3, ids[3]!));
        await waitForWorkers(cluster, ids);
        await publishPhase(nats, s, THIRD + 1, CUT_SEQ);
        const run2 = run(cluster, s, { parallelism: 4, rate: RUN2_RATE, savepoint: sp1 });
        const job2 = await jobIdOf(run2);
        await waitForCommitted(nats, s, THIRD * KEYS + 3 * RUN2_RATE);
        assert.deepEqual(
          hostsRunning(workers, job2),
          [0, 1, 2, 3],
          "the job spreads over every host",
        );
        await lab.cutLink(3);
        await cluster.coordinator.waitFor(
          new RegExp(`worker ${ids[3]} \\(.*\\) lost: it sent no heartbeat`),
          WAIT_MS,
        );
        await cluster.coordinator.waitFor(
          new RegExp(`job ${job2} .*deploying attempt [1-9]`),
          WAIT_MS,
        );
        await lab.restoreLink(3);
        // The rest of run 2's input comes after the cut, whatever the timing.
        await publishPhase(nats, s, CUT_SEQ + 1, 2 * THIRD);
        await waitForCommitted(nats, s, 2 * THIRD * KEYS);
        const sp2 = await savepointCli(cluster, "stop", job2, "--savepoint");
        assert.equal((await run2.endWithin(WAIT_MS)).code, 0, run2.output);
        const restarts = Number(/RESULT restarts=(\d+)/.exec(run2.output)?.[1]);
        assert.ok(restarts >= 1, `run 2 failed over after the cut:\n${run2.output}`);

        // Run 3: host 3's worker stops; 3 workers, parallelism 3.
        workers[3]!.child.kill("SIGTERM");
        await workers[3]!.endWithin(WAIT_MS);
        await waitForWorkers(cluster, ids.slice(0, 3));
        await publishPhase(nats, s, 2 * THIRD + 1, PER_KEY);
        const run3 = run(cluster, s, { parallelism: 3, savepoint: sp2 });
        const job3 = await jobIdOf(run3);
        await waitForCommitted(nats, s, KEYS * PER_KEY);
        await savepointCli(cluster, "stop", job3, "--savepoint", "--drain");
        assert.equal((await run3.endWithin(WAIT_MS)).code, 0, run3.output);
        assert.deepEqual(hostsRunning(workers, job3), [0, 1, 2]);

        // Exactly once, record by record: every key's seq 1..N once, no violation record.
        const records = await committed<AuditedRecord>(nats, s.sink, s.txnBucket);
        const expected: string[] = [];
        for (let k = 0; k < KEYS; k++) {
          for (let seq = 1; seq <= PER_KEY; seq++) expected.push(`k${k}#${seq}`);
        }
        assert.deepEqual(
          records.map((r) => `${r.key}#${r.seq}${r.violation ? ` ${r.violation}` : ""}`).sort(),
          expected.sort(),
        );
        const report = await auditCommittedOutput({
          connection: { servers: nats },
          stream: s.sink,
          txnBucket: s.txnBucket,
          keys: KEYS,
          perKey: PER_KEY,
        });
        assert.ok(auditPassed(report), JSON.stringify(report));
        // Window state: every window once, and per key the counts add up to its records.
        const windows = await committed<WindowCount>(nats, s.windows, s.txnBucket);
        assert.deepEqual(
          windows.map((w) => `${w.key}@${w.end}=${w.count}`).sort(),
          expectedWindows(),
        );
        const perKey = new Map<string, number>();
        for (const w of windows) perKey.set(w.key, (perKey.get(w.key) ?? 0) + w.count);
        assert.deepEqual(
          [...perKey].sort(),
          Array.from({ length: KEYS }, (_, k) => [`k${k}`, PER_KEY] as const).sort(),
        );
      } catch (error) {
        console.error(cluster.logs());
        throw error;
      } finally {
        await cluster.stop();
      }
    }),
});
