/**
 * Cluster mode, attacked by breaker-2 of issue 9: the transactional
 * JetStream sink writes records of about 300 KB in batches of up to
 * 960 KiB (`maxBatchBytes` at its limit, so three or four records near the
 * server's 1 MiB `max_payload` share a message) while a worker process is
 * SIGKILLed at a fault point of checkpoint 3 (alignment, after the sink's
 * snapshot, before its commit). The job (`tests/jobs/breaker_job.ts` with
 * `--sink-pad` and `--max-batch-bytes`) must end with every input committed
 * exactly once, the counts of each key 1..m. Before the batch fix of
 * `producer.ts` (MAX_BATCH_PAYLOAD_BYTES), the fourth record of a batch took
 * it past `max_payload` and every attempt failed the same way.
 *
 * Each test runs on a NATS server of its own, with a coordinator and two
 * workers (`cli.ts`); it stops every process it started, and stopping the
 * server removes its store.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { MAX_BATCH_BYTES_LIMIT } from "../connectors/jetstream/sink.ts";

const T = { sanitizeResources: false, sanitizeOps: false };
/** Bytes of padding in each output record: three fit in a 960 KiB batch, four do not. */
const SINK_PAD = 300_000;
/**
 * Inputs: 120 outputs of 300 KB (36 MB) at 60 a second, checkpoints every
 * 500 ms: each sink subtask gets about 15 records per checkpoint, five
 * batches of three.
 */
const INPUTS = 120;

for (const point of ["alignment", "after-snapshot", "before-commit"]) {
  Deno.test({
    ...T,
    name:
      `breaker: the exactly-once JetStream sink commits 300 KB records batched near max_payload once each when a worker is SIGKILLed at ${point} of checkpoint 3`,
    async fn() {
      const nats = await startNatsServer({ jetstream: true });
      const server = serveDirectory();
      const cluster = new TestCluster({
        nats: nats.url,
        workers: 2,
        slots: 2,
        heartbeatTimeoutMs: 3000,
      });
      const jobs: Proc[] = [];
      const [source, sink, bucket] = ["big-in", "big-out", "big-txn"];
      try {
        const nc = await connectNats({ servers: nats.url });
        const jsm = await jetstreamApi.jetstreamManager(nc);
        await jsm.streams.add({ name: source, subjects: [`${source}.>`] });
        await jsm.streams.add({ name: sink, subjects: [`${sink}.>`] });
        const js = jetstreamApi.jetstream(nc);
        const input = Array.from({ length: INPUTS }, (_, i) => ({ k: `k${i % 5}`, n: i }));
        for (const r of input) {
          await js.publish(`${source}.in`, new TextEncoder().encode(JSON.stringify(r)));
        }
        await nc.close();
        await cluster.start();
        const exited: string[] = [];
        for (const w of cluster.workers) w.child.status.then(() => exited.push(w.name));
        const job = new Proc("job", [
          "run",
          "-A",
          `${server.url}tests/jobs/breaker_job.ts`,
          "--nats",
          nats.url,
          "--source",
          source,
          "--sink",
          sink,
          "--txn-bucket",
          bucket,
          "--rate",
          "60",
          "--interval",
          "500",
          "--sink-pad",
          String(SINK_PAD),
          "--max-batch-bytes",
          String(MAX_BATCH_BYTES_LIMIT),
          "--kill-at",
          `${point}:3`,
          "--restarts",
          "5",
        ]);
        jobs.push(job);
        const status = await job.endWithin(150_000);
        assert.equal(status.code, 0, job.output);
        assert.equal(exited.length, 1, `worker processes that died: ${exited}`);
        assert.match(cluster.coordinator.output, /restarting as attempt 1/);
        const out: { k: string; n: number; c: number; pad?: string }[] = [];
        for await (
          const r of readCommitted({
            connection: { servers: nats.url },
            stream: sink,
            txnBucket: bucket,
            bounded: true,
          })
        ) out.push(JSON.parse(new TextDecoder().decode(r.data)));
        assert.ok(out.every((r) => r.pad?.length === SINK_PAD), "every record keeps its pad");
        assert.deepEqual(out.map((r) => r.n).sort((a, b) => a - b), input.map((r) => r.n));
        for (let k = 0; k < 5; k++) {
          const counts = out.filter((r) => r.k === `k${k}`).map((r) => r.c).sort((a, b) => a - b);
          assert.deepEqual(counts, counts.map((_, i) => i + 1), `counts of key k${k}`);
        }
      } catch (error) {
        console.error(cluster.logs());
        throw error;
      } finally {
        for (const job of jobs) await job.kill();
        await cluster.stop();
        await server.close();
        await nats.stop();
      }
    },
  });
}
