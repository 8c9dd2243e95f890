/**
 * A highly available coordinator (DESIGN §14; Flink's JobManager high
 * availability), end to end: two `cli.ts coordinator` processes and two
 * workers on a NATS server of the test's own, running the exactly-once
 * audit job (`tests/jobs/audit_chaos_job.ts`: JetStream source, keyed
 * state, transactional JetStream sink).
 *
 * - With two coordinators, only the leader deploys; the other says it
 *   stands by; the job runs one attempt and commits exactly the input.
 * - SIGKILL of the leader: the standby takes over (lease 2 s), resumes the
 *   job from its latest completed checkpoint with a higher attempt, and the
 *   job's committed output resumes. The test prints the time from the kill
 *   to the first record committed by the resumed job (a transaction of a
 *   new sink producer epoch), bounded only generously (30 s), and checks
 *   the output is still exactly the input, the waiting client never
 *   heard `no job`, and the new leader never warned that no worker was
 *   registered (it waits for their heartbeats first). A savepoint taken
 *   through the old leader's REST API before the kill is answered by the
 *   new leader for the same trigger id (the job store keeps completed
 *   savepoint locations), and an unknown trigger id of the old leader's
 *   epoch gets a 404 naming it.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { kvApi } from "../runtime/actor/nats_deps.ts";
import { auditCommittedOutput } from "../examples/audit_check.ts";
import { publishAuditInput } from "../examples/exactly_once_audit.ts";
import { ensureStream } from "../examples/_jetstream.ts";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { deleteStreams } from "./_chaos_kit.ts";
import { waitUntil } from "./_wait.ts";
import { deadline } from "../runtime/actor/async.ts";

const KEYS = 20;

interface Run {
  readonly cluster: TestCluster;
  readonly connection: NatsConnectionOptions;
  readonly sink: string;
  readonly txnBucket: string;
  readonly job: Proc;
  readonly perKey: number;
}

async function withHaCluster(
  perKey: number,
  rate: number,
  fn: (run: Run) => Promise<void>,
): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const files = serveDirectory();
  const connection: NatsConnectionOptions = { servers: nats.url, name: "weir-ha-test" };
  const suffix = crypto.randomUUID().slice(0, 8);
  const source = `ha-in-${suffix}`;
  const sink = `ha-out-${suffix}`;
  const txnBucket = `ha-txn-${suffix}`;
  const armDir = await Deno.makeTempDir({ prefix: "weir-ha-" });
  const cluster = new TestCluster({
    nats: nats.url,
    workers: 2,
    slots: 2,
    coordinators: 2,
    coordinatorArgs: ["--lease-ms", "2000", "--rest-port", "0"],
  });
  let job: Proc | undefined;
  try {
    await cluster.start();
    await publishAuditInput(connection, source, { keys: KEYS, perKey, partitions: 2 });
    await ensureStream(connection, sink);
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
      "300",
    ]);
    await fn({ cluster, connection, sink, txnBucket, job, perKey });
  } catch (error) {
    console.error(`${cluster.logs()}\n----- job\n${job?.output ?? "(not started)"}`);
    throw error;
  } finally {
    const logFile = Deno.env.get("WEIR_TEST_LOGS");
    if (logFile !== undefined) {
      await Deno.writeTextFile(logFile, `${cluster.logs()}\n----- job\n${job?.output ?? ""}`);
    }
    await job?.kill().catch(() => {});
    await cluster.stop();
    await deleteStreams(connection, [source, sink, `KV_${txnBucket}`]);
    await files.close();
    await nats.stop();
    await Deno.remove(armDir, { recursive: true }).catch(() => {});
  }
}

/** The sink's transactions: producer, producer epoch, state and records. */
async function transactions(
  connection: NatsConnectionOptions,
  bucket: string,
): Promise<{ producer: string; epoch: number; state: string; records: number }[]> {
  const nc = await connectNats(connection);
  try {
    const kv = await new kvApi.Kvm(nc).open(bucket);
    const out = [];
    for await (const key of await kv.keys("txn.>")) {
      const entry = await kv.get(key);
      if (entry !== null && entry.operation === "PUT") out.push(entry.json());
    }
    return out as { producer: string; epoch: number; state: string; records: number }[];
  } finally {
    await nc.close();
  }
}

/** The REST port `coordinator` serves on now (its latest `REST API on port N` line). */
function restPort(coordinator: Proc): number {
  const ports = [...coordinator.output.matchAll(/weir coordinator: REST API on port (\d+)/g)];
  const port = ports.at(-1)?.[1];
  if (port === undefined) throw new Error(`${coordinator.name} serves no REST API`);
  return Number(port);
}

/** `GET path` on `coordinator`'s REST API: status and JSON body. */
async function restGet(
  coordinator: Proc,
  path: string,
): Promise<[number, Record<string, unknown>]> {
  const res = await fetch(`http://127.0.0.1:${restPort(coordinator)}${path}`);
  return [res.status, await res.json()];
}

async function expectExactOutput(run: Run): Promise<void> {
  const status = await run.job.endWithin(240_000);
  assert.equal(status.code, 0, `the job client failed:\n${run.job.output}`);
  const report = await auditCommittedOutput({
    connection: run.connection,
    stream: run.sink,
    txnBucket: run.txnBucket,
    keys: KEYS,
    perKey: run.perKey,
  });
  const line = JSON.stringify(report);
  assert.equal(report.records, KEYS * run.perKey, line);
  assert.equal(report.lost, 0, line);
  assert.equal(report.duplicated, 0, line);
  assert.equal(report.outOfOrder, 0, line);
  assert.equal(report.violations, 0, line);
  assert.equal(report.unexpected, 0, line);
  assert.doesNotMatch(run.job.output, /no job/, "the waiting client heard 'no job'");
}

Deno.test({
  name: "ha coordinator: a second coordinator stands by and never deploys while the first leads",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withHaCluster(50, 400, async (run) => {
      const [first, second] = run.cluster.coordinators;
      assert.match(first!.output, /weir coordinator: leading \(epoch 1\)/);
      assert.match(
        second!.output,
        /weir coordinator: standby; coordinator \S+ .* leads with epoch 1/,
      );
      await expectExactOutput(run);
      assert.match(first!.output, /deploying attempt 0 /);
      assert.doesNotMatch(first!.output, /deploying attempt [1-9]/, "only one attempt ran");
      assert.doesNotMatch(second!.output, /deploying attempt|leading/, second!.output);
      assert.match(run.job.output, /RESULT restarts=0 /);
    });
  },
});

Deno.test({
  name: "ha coordinator: after a SIGKILL of the leader the standby resumes the job exactly-once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    // 20 keys x 300 records at 400 records/s: ~15 s of input.
    await withHaCluster(300, 400, async (run) => {
      const { cluster } = run;
      const leader = cluster.leader();
      assert.ok(leader !== undefined, "no coordinator leads");
      await waitUntil(() => /: checkpoints: .* latest #\d+/.test(leader.output), {
        timeoutMs: 120_000,
        pollMs: 50,
        missing: () => "the leader completed no checkpoint",
      });
      await waitUntil(
        async () =>
          (await transactions(run.connection, run.txnBucket)).some((t) =>
            t.state === "committed" && t.records > 0
          ),
        { timeoutMs: 60_000, pollMs: 100, missing: () => "nothing committed before the kill" },
      );
      // A savepoint through the leader's REST API, completed before the kill.
      const jobId = /submitted job (\S+)/.exec(run.job.output)?.[1];
      assert.ok(jobId !== undefined, run.job.output);
      const posted = await fetch(
        `http://127.0.0.1:${restPort(leader)}/jobs/${jobId}/savepoints`,
        { method: "POST" },
      );
      assert.equal(posted.status, 202);
      const triggerId = ((await posted.json()) as Record<string, string>)["request-id"]!;
      let location: unknown;
      await waitUntil(async () => {
        const [, body] = await restGet(leader, `/jobs/${jobId}/savepoints/${triggerId}`);
        location = (body.operation as { location?: unknown } | undefined)?.location;
        return location !== undefined;
      }, { timeoutMs: 60_000, pollMs: 100, missing: () => "the savepoint did not complete" });
      const before = await transactions(run.connection, run.txnBucket);
      const epochAtKill = new Map<string, number>();
      for (const t of before) {
        epochAtKill.set(t.producer, Math.max(epochAtKill.get(t.producer) ?? 0, t.epoch));
      }
      // Watch the sink's transactions on one connection: the first record committed by the
      // resumed job is a committed transaction of a producer epoch started after the kill.
      const nc = await connectNats(run.connection);
      const kv = await new kvApi.Kvm(nc).open(run.txnBucket);
      const watch = await kv.watch({ key: "txn.>", include: kvApi.KvWatchInclude.UpdatesOnly });
      const firstCommit = (async () => {
        for await (const e of watch) {
          if (e.operation !== "PUT") continue;
          const t = e.json<{ producer: string; epoch: number; state: string; records: number }>();
          const fresh = t.epoch > (epochAtKill.get(t.producer) ?? 0);
          if (t.state === "committed" && t.records > 0 && fresh) return performance.now();
        }
        throw new Error("the watch of the sink's transactions ended");
      })();
      const killedAt = performance.now();
      const killedAtIso = new Date().toISOString();
      await leader.kill("SIGKILL");
      let committedAt: number;
      try {
        committedAt = await deadline(firstCommit, 60_000, "a record committed by the resumed job");
      } finally {
        watch.stop();
        await nc.close();
      }
      const resumedMs = committedAt - killedAt;
      console.log(
        `HA leader SIGKILL (at ${killedAtIso}) -> next committed record: ` +
          `${Math.round(resumedMs)} ms`,
      );
      assert.ok(resumedMs < 30_000, `committed output resumed only after ${resumedMs} ms`);
      const next = cluster.leader();
      assert.ok(next !== undefined && next !== leader, "the standby did not take over");
      assert.match(next.output, /weir coordinator: leading \(epoch 2\)/);
      assert.match(next.output, /taken over from the previous leader; resuming as attempt [1-9]/);
      await expectExactOutput(run);
      // Trigger ids outlive the leader: a completed savepoint is answered from the job
      // store, an unknown id of the earlier leader gets a 404 that says so.
      assert.deepEqual(await restGet(next, `/jobs/${jobId}/savepoints/${triggerId}`), [200, {
        status: { id: "COMPLETED" },
        operation: { location },
      }]);
      const [status, body] = await restGet(
        next,
        `/jobs/${jobId}/savepoints/00000001${"0".repeat(24)}`,
      );
      assert.equal(status, 404);
      assert.match(
        String(body.errors),
        /triggered under a previous leading coordinator \(leader epoch 1; epoch 2 leads now\)/,
      );
      // The new leader let the workers register (the job WAITING_FOR_RESOURCES meanwhile)
      // instead of warning that none was registered before any could announce itself.
      assert.doesNotMatch(next.output, /no worker to deploy/, next.output);
    });
  },
});
