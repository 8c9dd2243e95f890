/**
 * JetStream subject discovery in cluster mode, under a real crash: a
 * coordinator and two workers (`cli.ts` processes) run
 * `tests/jobs/breaker_job.ts` (JetStream source with one split per subject,
 * keyBy across a network edge, a running count per key, the transactional
 * JetStream sink) unbounded, with subject discovery every 100 ms. A subject
 * first published to while the job runs is picked up; once a checkpoint
 * that covers some of its records completed (they are visible read
 * committed in the sink's stream), a worker is SIGKILLed; the restarted
 * attempt restores the discovered split and discovers one more subject.
 * The committed output must hold every input record exactly once, with
 * counts 1..m per key in order. The test runs on a NATS server of its own
 * and stops every process it started.
 *
 * @module
 */

import assert from "node:assert/strict";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";

interface In {
  readonly k: string;
  readonly n: number;
}

const SOURCE = "disc-in";
const SINK = "disc-out";
const BUCKET = "disc-txn";

Deno.test({
  name:
    "cluster: a subject discovered mid-run is read exactly once through a worker SIGKILLed after a checkpoint that covers it",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nats = await startNatsServer({ jetstream: true });
    const server = serveDirectory();
    const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
    let job: Proc | undefined;
    const nc = await connectNats({ servers: nats.url });
    const input: In[] = [];
    const publish = async (k: string, from: number, to: number) => {
      const js = jetstreamApi.jetstream(nc);
      const enc = new TextEncoder();
      for (let n = from; n <= to; n++) {
        await js.publish(`${SOURCE}.${k}`, enc.encode(JSON.stringify({ k, n })));
        input.push({ k, n });
      }
    };
    const output = async () => {
      const out: (In & { c: number })[] = [];
      for await (
        const r of readCommitted({
          connection: { servers: nats.url },
          stream: SINK,
          txnBucket: BUCKET,
          bounded: true,
        })
      ) out.push(JSON.parse(new TextDecoder().decode(r.data)));
      return out;
    };
    let last: (In & { c: number })[] = [];
    const counts = () => {
      const by: Record<string, number> = {};
      for (const r of last) by[r.k] = (by[r.k] ?? 0) + 1;
      return `committed ${JSON.stringify(by)} of ${input.length} published`;
    };
    try {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      await jsm.streams.add({ name: SOURCE, subjects: [`${SOURCE}.>`] });
      await jsm.streams.add({ name: SINK, subjects: [`${SINK}.>`] });
      await cluster.start();
      await publish("a", 1, 300);
      job = new Proc("job", [
        "run",
        "-A",
        `${server.url}tests/jobs/breaker_job.ts`,
        "--nats",
        nats.url,
        "--source",
        SOURCE,
        "--sink",
        SINK,
        "--txn-bucket",
        BUCKET,
        "--unbounded",
        "--filter",
        `${SOURCE}.*`,
        "--discovery",
        "100",
        "--interval",
        "100",
        "--rate",
        "400",
        "--delay",
        "100",
      ]);
      await cluster.coordinator.waitFor(/latest #2 /, 60_000);

      await publish("b", 1, 300); // a subject that did not exist at the job's first start
      await waitUntil(async () => {
        last = await output();
        return last.some((r) => r.k === "b");
      }, { timeoutMs: 60_000, pollMs: 200, missing: counts });

      const victim = cluster.workers[0]!;
      await victim.kill(); // SIGKILL: no clean-up, the checkpoint is all that survives
      await cluster.startWorker();
      await publish("c", 1, 100); // discovered by the restarted attempt
      await publish("b", 301, 350);

      await waitUntil(async () => {
        last = await output();
        return last.length >= input.length;
      }, { timeoutMs: 120_000, pollMs: 500, missing: counts });
      const restarts = /restarting as attempt (\d+)/.exec(cluster.coordinator.output);
      assert.ok(restarts, `the kill restarted the job: ${counts()}`);

      last = await output();
      const seen = new Map<string, number>();
      const perKey = new Map<string, number>();
      for (const r of last) {
        const id = `${r.k}#${r.n}`;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        const c = (perKey.get(r.k) ?? 0) + 1;
        perKey.set(r.k, c);
        assert.equal(r.c, c, `count of key ${r.k} at ${id}: ${counts()}`);
      }
      const duplicated = [...seen].filter(([, c]) => c > 1).map(([id]) => id);
      const lost = input.filter((r) => !seen.has(`${r.k}#${r.n}`)).map((r) => `${r.k}#${r.n}`);
      assert.deepEqual(
        { duplicated: duplicated.slice(0, 10), lost: lost.slice(0, 10), total: last.length },
        { duplicated: [], lost: [], total: input.length },
        counts(),
      );
    } catch (error) {
      console.error(cluster.logs());
      if (job) console.error(`----- job\n${job.output}`);
      throw error;
    } finally {
      await job?.kill();
      await nc.close();
      await cluster.stop();
      await server.close();
      await nats.stop(); // removes its store: every stream and bucket of the test
    }
  },
});
