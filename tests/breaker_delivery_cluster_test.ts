/**
 * Cluster mode with at-least-once checkpoints, attacked by the breaker of
 * issue 9: a worker process is SIGKILLed in the middle of a checkpoint (after
 * the sink subtask's snapshot, before the checkpoint completes) and just
 * before a commit; the job restarts from a checkpoint taken without
 * alignment and must lose nothing. Each test runs on a NATS server of its
 * own (`startNatsServer`), with a coordinator and two workers (`cli.ts`) and
 * `tests/jobs/breaker_job.ts` (JetStream source, keyBy across a network
 * edge, a running count, the transactional JetStream sink) run with
 * `--mode at-least-once`; it stops every process it started, and stopping
 * the server removes its store. One more test keeps exactly-once
 * checkpoints and makes the sink at-least-once (`--guarantee
 * at-least-once`: plain batches, acks awaited at the barrier).
 *
 * What at-least-once allows: an input may show up more than once, and the
 * counts of a key may repeat (a snapshot without alignment holds records
 * from after the barrier on a faster channel, which the restore replays).
 * What it forbids, and these tests check record by record against the
 * input: an input that never shows up.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { waitUntil } from "./_wait.ts";

interface Env {
  readonly nats: NatsServerHandle;
  readonly cluster: TestCluster;
  readonly jobUrl: string;
  readonly source: string;
  readonly sink: string;
  readonly bucket: string;
  readonly jobs: Proc[];
}

async function withEnv(fn: (env: Env) => Promise<void>): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({
    nats: nats.url,
    workers: 2,
    slots: 2,
    heartbeatTimeoutMs: 3000,
  });
  const env: Env = {
    nats,
    cluster,
    jobUrl: `${server.url}tests/jobs/breaker_job.ts`,
    source: "alo-in",
    sink: "alo-out",
    bucket: "alo-txn",
    jobs: [],
  };
  try {
    const nc = await connectNats({ servers: nats.url });
    const jsm = await jetstreamApi.jetstreamManager(nc);
    await jsm.streams.add({ name: env.source, subjects: [`${env.source}.>`] });
    await jsm.streams.add({ name: env.sink, subjects: [`${env.sink}.>`] });
    await nc.close();
    await cluster.start();
    await fn(env);
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    for (const job of env.jobs) await job.kill();
    await cluster.stop();
    await server.close();
    await nats.stop(); // removes its store: every stream and bucket of the test
  }
}

async function load(env: Env, records: { k: string; n: number }[]): Promise<void> {
  const nc = await connectNats({ servers: env.nats.url });
  try {
    const js = jetstreamApi.jetstream(nc);
    const enc = new TextEncoder();
    for (const r of records) await js.publish(`${env.source}.in`, enc.encode(JSON.stringify(r)));
  } finally {
    await nc.close();
  }
}

async function output(env: Env): Promise<{ k: string; n: number; c: number }[]> {
  const out = [];
  for await (
    const r of readCommitted({
      connection: { servers: env.nats.url },
      stream: env.sink,
      txnBucket: env.bucket,
      bounded: true,
    })
  ) out.push(JSON.parse(new TextDecoder().decode(r.data)));
  return out;
}

function submit(env: Env, ...args: string[]): Proc {
  const job = new Proc("job", [
    "run",
    "-A",
    env.jobUrl,
    "--nats",
    env.nats.url,
    "--source",
    env.source,
    "--sink",
    env.sink,
    "--txn-bucket",
    env.bucket,
    "--mode",
    "at-least-once",
    ...args,
  ]);
  env.jobs.push(job);
  return job;
}

/**
 * Asserts at-least-once output: every input (k, n) at least once, nothing
 * foreign, and each key's counts reach its number of inputs (the last count
 * of a key counts every input of it once at least).
 * @returns how many outputs were duplicates.
 */
function assertAtLeastOnce(
  out: { k: string; n: number; c: number }[],
  input: { k: string; n: number }[],
): number {
  const wanted = new Set(input.map((r) => `${r.k}/${r.n}`));
  const seen = new Map<string, number>();
  for (const r of out) {
    const id = `${r.k}/${r.n}`;
    assert.ok(wanted.has(id), `output ${JSON.stringify(r)} is no input`);
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const lost = input.filter((r) => !seen.has(`${r.k}/${r.n}`)).map((r) => `${r.k}/${r.n}`);
  assert.deepEqual(lost, [], `inputs lost (${out.length} outputs for ${input.length} inputs)`);
  const perKey = new Map<string, number>();
  for (const r of input) perKey.set(r.k, (perKey.get(r.k) ?? 0) + 1);
  for (const [k, n] of perKey) {
    const max = Math.max(...out.filter((r) => r.k === k).map((r) => r.c));
    assert.ok(max >= n, `the count of key ${k} reaches ${max}, below its ${n} inputs`);
  }
  return out.length - seen.size;
}

const T = { sanitizeResources: false, sanitizeOps: false };

for (const point of ["after-snapshot", "before-commit"]) {
  Deno.test({
    ...T,
    name:
      `breaker: at-least-once checkpoints lose nothing when a worker is SIGKILLed at ${point} of checkpoint 3`,
    async fn() {
      await withEnv(async (env) => {
        const input = Array.from({ length: 800 }, (_, i) => ({ k: `k${i % 7}`, n: i }));
        await load(env, input);
        const exited: string[] = [];
        for (const w of env.cluster.workers) w.child.status.then(() => exited.push(w.name));
        const job = submit(env, "--rate", "200", "--kill-at", `${point}:3`, "--restarts", "20");
        const status = await job.endWithin(90_000);
        assert.equal(status.code, 0, job.output);
        // The job ran with at-least-once checkpoints (execute() warns of the exactly-once sink).
        assert.match(job.output, /checkpointing mode is "at-least-once"/);
        // The kill happened: a worker process died and the job restarted.
        assert.equal(exited.length, 1, `worker processes that died: ${exited}`);
        assert.match(env.cluster.coordinator.output, /restarting as attempt 1/);
        const duplicates = assertAtLeastOnce(await output(env), input);
        console.log(`at-least-once, SIGKILL at ${point}:3: ${duplicates} duplicate output(s)`);
      });
    },
  });
}

Deno.test({
  ...T,
  name:
    "breaker: the at-least-once JetStream sink loses nothing when a worker is SIGKILLed after the sink's snapshot of checkpoint 3",
  async fn() {
    await withEnv(async (env) => {
      const input = Array.from({ length: 800 }, (_, i) => ({ k: `k${i % 7}`, n: i }));
      await load(env, input);
      const exited: string[] = [];
      for (const w of env.cluster.workers) w.child.status.then(() => exited.push(w.name));
      // Exactly-once checkpoints, but a sink that publishes plain batches and awaits their acks
      // at the barrier: a restore replays what it published after the checkpoint.
      const job = submit(
        env,
        "--mode",
        "exactly-once",
        "--guarantee",
        "at-least-once",
        "--rate",
        "200",
        "--kill-at",
        "after-snapshot:3",
        "--restarts",
        "20",
      );
      const status = await job.endWithin(90_000);
      assert.equal(status.code, 0, job.output);
      assert.equal(exited.length, 1, `worker processes that died: ${exited}`);
      assert.match(env.cluster.coordinator.output, /restarting as attempt 1/);
      const duplicates = assertAtLeastOnce(await output(env), input);
      console.log(
        `at-least-once sink, SIGKILL at after-snapshot:3: ${duplicates} duplicate output(s)`,
      );
    });
  },
});

Deno.test({
  ...T,
  name:
    "breaker: at-least-once checkpoints lose nothing of subjects discovered before and after a worker is SIGKILLed",
  async fn() {
    await withEnv(async (env) => {
      const input: { k: string; n: number }[] = [];
      const publish = async (k: string, from: number, to: number) => {
        const nc = await connectNats({ servers: env.nats.url });
        try {
          const js = jetstreamApi.jetstream(nc);
          for (let n = from; n <= to; n++) {
            await js.publish(
              `${env.source}.${k}`,
              new TextEncoder().encode(JSON.stringify({ k, n })),
            );
            input.push({ k, n });
          }
        } finally {
          await nc.close();
        }
      };
      await publish("a", 1, 300);
      submit(
        env,
        "--unbounded",
        "--filter",
        `${env.source}.*`,
        "--discovery",
        "100",
        "--interval",
        "100",
        "--rate",
        "400",
        "--delay",
        "100",
      );
      await env.cluster.coordinator.waitFor(/latest #2 /, 60_000);
      await publish("b", 1, 300); // discovered while the job runs
      let last: { k: string; n: number; c: number }[] = [];
      const seenCount = () => new Set(last.map((r) => `${r.k}/${r.n}`)).size;
      const state = () => `${seenCount()} of ${input.length} inputs committed`;
      await waitUntil(async () => {
        last = await output(env);
        return last.some((r) => r.k === "b");
      }, { timeoutMs: 60_000, pollMs: 200, missing: state });
      await env.cluster.workers[0]!.kill(); // SIGKILL, at whatever step the checkpoint is in
      await env.cluster.startWorker();
      await publish("c", 1, 100); // discovered by the restarted attempt
      await publish("b", 301, 350);
      await waitUntil(async () => {
        last = await output(env);
        return seenCount() >= input.length;
      }, { timeoutMs: 120_000, pollMs: 500, missing: state });
      assert.match(env.cluster.coordinator.output, /restarting as attempt 1/);
      const duplicates = assertAtLeastOnce(last, input);
      console.log(`at-least-once with discovery, worker SIGKILLed: ${duplicates} duplicate(s)`);
    });
  },
});
