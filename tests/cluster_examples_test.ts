/**
 * The examples in cluster mode, end to end: a coordinator and two worker
 * processes (`cli.ts`) on a NATS server of the test's own, each example
 * imported by its `http://` URL (as from another host), its input in one
 * JetStream stream and its output written to another through the
 * transactional sink, read back read committed.
 *
 * - `temperature_alert.ts --nats`: seed example 2's exact three alerts,
 *   read with `cli.ts read --committed`;
 * - `exactly_once_audit.ts --nats --generate`: every key's records exactly
 *   once and in order, without faults (the chaos test adds them).
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { auditCommittedOutput, AuditTally } from "../examples/audit_check.ts";

async function withCluster(
  fn: (cluster: TestCluster, baseUrl: string) => Promise<void>,
): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
  try {
    await cluster.start();
    await fn(cluster, server.url);
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await server.close();
    await nats.stop();
  }
}

/** How long a job client may run before the test kills it and fails, in ms. */
const JOB_TIMEOUT_MS = 120_000;

function unique(base: string): string {
  return `${base}-${crypto.randomUUID().slice(0, 8)}`;
}

Deno.test({
  name:
    "cluster: the temperature alert example reads JetStream and commits the seed's three alerts",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, baseUrl) => {
      const source = unique("sensors");
      const sink = unique("alerts");
      const job = new Proc("job", [
        "run",
        "-A",
        `${baseUrl}examples/temperature_alert.ts`,
        "--nats",
        cluster.options.nats,
        "--source-stream",
        source,
        "--sink-stream",
        sink,
        "--load",
        "examples/data/sensors.csv",
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      assert.match(job.output, /loaded 10 lines of examples\/data\/sensors\.csv/);
      assert.match(job.output, /checkpoints: \d+ triggered, \d+ completed/);
      // The job ran on the workers (it was submitted, not run in the client).
      assert.match(cluster.workers.map((w) => w.output).join("\n"), /starting a thread for job/);

      const read = await cluster.cli("read", "--stream", sink, "--committed");
      assert.equal(read.code, 0, read.output);
      const lines = read.output.trim().split("\n").filter((l) => l.startsWith("{"));
      assert.deepEqual(
        // Records of one checkpoint share a message (a record batch): compare subjects and values.
        lines.map((l) => {
          const { subject, value } = JSON.parse(l) as { subject: string; value: unknown };
          return { subject, value };
        }),
        [
          "(sensor_1,32.4,42.4)",
          "(sensor_10,52.6,22.5)",
          "(sensor_7,19.9,30)",
        ].map((value) => ({ subject: `${sink}.alerts`, value })),
      );
    });
  },
});

Deno.test({
  name:
    "cluster: the exactly-once audit example commits every key's records exactly once, in order",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, baseUrl) => {
      const source = unique("audit-in");
      const sink = unique("audit-out");
      const txnBucket = unique("audit-txn");
      const job = new Proc("job", [
        "run",
        "-A",
        `${baseUrl}examples/exactly_once_audit.ts`,
        "--nats",
        cluster.options.nats,
        "--source-stream",
        source,
        "--sink-stream",
        sink,
        "--txn-bucket",
        txnBucket,
        "--generate",
        "--keys",
        "20",
        "--per-key",
        "250",
        "--checkpoint-interval",
        "200",
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      assert.match(job.output, /published 5000 records to stream/);
      assert.match(
        job.output,
        /AUDIT records=5000 lost=0 duplicated=0 out_of_order=0 violations=0 unexpected=0/,
      );
      // Checked again here, record by record, from the test's side.
      const report = await auditCommittedOutput({
        connection: { servers: cluster.options.nats },
        stream: sink,
        txnBucket,
        keys: 20,
        perKey: 250,
      });
      assert.deepEqual(report, {
        records: 5000,
        lost: 0,
        duplicated: 0,
        outOfOrder: 0,
        violations: 0,
        unexpected: 0,
      });
      // The subtasks ran on both workers.
      for (const w of cluster.workers) assert.match(w.output, /starting a thread for job/);
    });
  },
});

Deno.test("the audit tally counts lost, duplicated, out-of-order, violation and unexpected records", () => {
  const tally = new AuditTally({ keys: 2, perKey: 4 });
  for (
    const r of [
      { key: "k0", seq: 1 },
      { key: "k0", seq: 3 },
      { key: "k0", seq: 2 }, // out of order
      { key: "k0", seq: 3 }, // duplicated
      { key: "k0", seq: 4 },
      { key: "k1", seq: 1 },
      { key: "k1", seq: 1 }, // duplicated
      { key: "k1", seq: 5, violation: "gap" }, // a violation record
      { key: "k1", seq: 9 }, // unexpected: past perKey
      { key: "k2", seq: 1 }, // unexpected: unknown key
    ]
  ) tally.add(r);
  assert.deepEqual(tally.report(), {
    records: 9,
    lost: 3, // k1: 2, 3, 4
    duplicated: 2,
    outOfOrder: 1,
    violations: 1,
    unexpected: 2,
  });
  assert.throws(() => new AuditTally({ keys: 0, perKey: 4 }), /'keys' must be a positive integer/);
});
