/**
 * Cluster mode, attacked: each test reproduces one failure found by a
 * breaker review, and fails until it is fixed. Every test runs on a NATS
 * server of its own (`startNatsServer`), with a coordinator and workers
 * (`cli.ts`) and a job imported over HTTP (`tests/jobs/breaker_job.ts`:
 * JetStream source, keyBy across a network edge, a running count, the
 * transactional JetStream sink), and stops every process it started; stopping
 * the server removes its store, with every stream and bucket of the test.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, REPO_ROOT, serveDirectory, TestCluster } from "./_cluster.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { headers, jetstreamApi, kvApi } from "../runtime/actor/nats_deps.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { waitUntil } from "./_wait.ts";

interface Env {
  readonly nats: NatsServerHandle;
  readonly cluster: TestCluster;
  readonly jobUrl: string;
  readonly source: string;
  readonly sink: string;
  readonly bucket: string;
  /** Job clients started by `submit`, killed at the end. */
  readonly jobs: Proc[];
}

async function withEnv(
  options: { workers?: number; slots?: number; heartbeatTimeoutMs?: number },
  fn: (env: Env) => Promise<void>,
): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({
    nats: nats.url,
    workers: options.workers ?? 2,
    slots: options.slots ?? 2,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs ?? 3000,
  });
  const env: Env = {
    nats,
    cluster,
    jobUrl: `${server.url}tests/jobs/breaker_job.ts`,
    source: "brk-in",
    sink: "brk-out",
    bucket: "brk-txn",
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

/** Publishes `{k, n}` records (or raw payloads) to the source stream. */
async function load(env: Env, records: (unknown | Uint8Array)[]): Promise<void> {
  const nc = await connectNats({ servers: env.nats.url });
  try {
    const js = jetstreamApi.jetstream(nc);
    const enc = new TextEncoder();
    for (const r of records) {
      await js.publish(
        `${env.source}.in`,
        r instanceof Uint8Array ? r : enc.encode(JSON.stringify(r)),
      );
    }
  } finally {
    await nc.close();
  }
}

/** The sink stream, read committed to its end. */
async function output(env: Env): Promise<{ subject: string; value: Record<string, unknown> }[]> {
  const out = [];
  for await (
    const r of readCommitted({
      connection: { servers: env.nats.url },
      stream: env.sink,
      txnBucket: env.bucket,
      bounded: true,
    })
  ) {
    out.push({ subject: r.subject, value: JSON.parse(new TextDecoder().decode(r.data)) });
  }
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
    ...args,
  ]);
  env.jobs.push(job);
  return job;
}

/** Asserts exactly-once output: every input (k, n) once, counts 1..m per key in order. */
function assertExactlyOnce(
  out: { value: Record<string, unknown> }[],
  input: { k: string; n: number }[],
): void {
  const seen = new Map<string, number>();
  const perKey = new Map<string, number>();
  for (const { value } of out) {
    const id = `${value.k}\u0000${value.n}`;
    seen.set(id, (seen.get(id) ?? 0) + 1);
    const c = (perKey.get(value.k as string) ?? 0) + 1;
    perKey.set(value.k as string, c);
    assert.equal(value.c, c, `count of key ${JSON.stringify(value.k)}`);
  }
  const dup = [...seen].filter(([, c]) => c > 1).length;
  const lost = input.filter((r) => !seen.has(`${r.k}\u0000${r.n}`)).length;
  assert.deepEqual({ dup, lost, total: out.length }, { dup: 0, lost: 0, total: input.length });
}

const T = { sanitizeResources: false, sanitizeOps: false };

Deno.test({
  ...T,
  // Records crossing a network edge must fit one NATS message (a documented limit): a larger
  // one fails the job once, clearly, instead of restarting forever (seen: endless restarts).
  name: "breaker: a record over 1 MiB on a network edge fails the job once, without restarts",
  async fn() {
    await withEnv({}, async (env) => {
      const input = Array.from({ length: 6 }, (_, i) => ({ k: `k${i % 3}`, n: i }));
      await load(env, input);
      const job = submit(env, "--pad", String(1536 * 1024), "--restarts", "1000", "--delay", "100");
      const status = await job.endWithin(45_000);
      assert.equal(status.code, 1, job.output);
      assert.match(job.output, /RecordTooLargeError|exceeds the transport's max payload/);
      assert.doesNotMatch(env.cluster.coordinator.output, /restarting as attempt/);
    });
  },
});

Deno.test({
  ...T,
  name:
    "breaker: a source message whose Weir-Txn has no state fails the job once, naming the sequence",
  async fn() {
    await withEnv({}, async (env) => {
      const input = Array.from({ length: 30 }, (_, i) => ({ k: `k${i % 3}`, n: i }));
      await load(env, input.slice(0, 10));
      const nc = await connectNats({ servers: env.nats.url });
      const js = jetstreamApi.jetstream(nc);
      // The sink's bucket exists (another job wrote to it), but holds no such transaction.
      await new kvApi.Kvm(nc).create(env.bucket, { history: 1 });
      const h = headers();
      h.set("Weir-Txn", "ghost.0.0.0");
      await js.publish(`${env.source}.in`, new TextEncoder().encode('{"k":"x","n":-1}'), {
        headers: h,
      });
      await nc.close();
      await load(env, input.slice(10));
      const job = submit(env, "--restarts", "1000", "--delay", "100");
      const status = await job.endWithin(30_000);
      assert.equal(status.code, 1, job.output);
      assert.match(job.output, /ghost\.0\.0\.0.*has no state/);
      assert.match(job.output, /sequence 11/);
      assert.doesNotMatch(env.cluster.coordinator.output, /restarting as attempt 3/);
    });
  },
});

Deno.test({
  ...T,
  name: "breaker: a user function that calls Deno.exit on a slot thread is recovered from",
  async fn() {
    await withEnv({}, async (env) => {
      const input = Array.from({ length: 400 }, (_, i) => ({ k: `k${i % 5}`, n: i }));
      await load(env, input);
      const exited: string[] = [];
      for (const w of env.cluster.workers) w.child.status.then(() => exited.push(w.name));
      // Attempt 0 calls Deno.exit(1) in a map at n = 150; checkpoints expire after 3 s.
      const job = submit(env, "--exit-at", "150", "--rate", "100", "--timeout", "3000");
      const status = await job.endWithin(50_000);
      assert.equal(status.code, 0, job.output);
      const coordinator = env.cluster.coordinator.output;
      // The exit happened, on a slot thread, and failed attempt 0 ...
      assert.match(
        coordinator,
        /attempt 0 failed: .*called Deno\.exit\(1\) on slot thread \S+ \(v0#\d+, attempt 0\)/,
        "the coordinator logged no attempt 0 failed by Deno.exit(1) on a slot thread",
      );
      // ... the job restarted once, from a checkpoint, and finished ...
      assert.match(
        coordinator,
        /restarting as attempt 1 \(restart 1\) from checkpoint \d+/,
        "the coordinator logged no restart from a checkpoint",
      );
      assert.match(job.output, /RESULT restarts=1 /, job.output);
      // ... on the same worker processes: the exit ended a slot thread, not a process.
      assert.deepEqual(exited, [], "worker processes that exited");
      assertExactlyOnce(await output(env), input);
    });
  },
});

Deno.test({
  ...T,
  name: "breaker: a job module that calls Deno.exit while loading on slot threads fails promptly",
  async fn() {
    await withEnv({}, async (env) => {
      await load(env, [{ k: "a", n: 1 }]);
      const job = submit(env, "--exit-on-load", "--restarts", "0");
      const status = await job.endWithin(30_000);
      assert.equal(status.code, 1, job.output);
      assert.match(job.output, /exit/i);
    });
  },
});

Deno.test({
  ...T,
  name: "breaker: after a NATS restart, a redeploy sent before the workers reconnected is not lost",
  async fn() {
    // Seen without SIGSTOP in about 1 of 12 NATS restarts (kill, 1 s down, restart): the
    // coordinator reconnects and redeploys 200 ms later, before a worker process reconnected.
    // SIGSTOP makes the workers reconnect late every time (paused 1-2 s < heartbeat timeout).
    await withEnv({ heartbeatTimeoutMs: 3000 }, async (env) => {
      const input = Array.from({ length: 600 }, (_, i) => ({ k: `k${i % 7}`, n: i }));
      await load(env, input);
      const job = submit(env, "--rate", "200", "--timeout", "5000", "--restarts", "20");
      await env.cluster.coordinator.waitFor(/latest #3 /, 30_000);
      for (const w of env.cluster.workers) w.child.kill("SIGSTOP");
      try {
        await env.nats.restart();
        // The coordinator restarts the job but deploys only to workers heard from again.
        await env.cluster.coordinator.waitFor(
          /deploying attempt 1 |no worker to deploy attempt 1/,
          10_000,
        );
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        for (const w of env.cluster.workers) w.child.kill("SIGCONT");
      }
      const status = await job.endWithin(40_000);
      assert.equal(status.code, 0, job.output);
      assertExactlyOnce(await output(env), input);
    });
  },
});

/** The transactions open in the bucket, as `<key> <state JSON>`. */
async function openTxns(env: Env): Promise<string[]> {
  const nc = await connectNats({ servers: env.nats.url });
  try {
    const kv = await new kvApi.Kvm(nc).open(env.bucket);
    const open: string[] = [];
    for await (const key of await kv.keys("txn.>")) {
      const e = await kv.get(key);
      const v = e?.string() ?? "";
      if (v.includes('"open"')) open.push(`${key} ${v}`);
    }
    return open;
  } finally {
    await nc.close();
  }
}

/** Publishes a non-transactional record to the sink stream (another writer). */
async function publishAfter(env: Env): Promise<void> {
  const nc = await connectNats({ servers: env.nats.url });
  try {
    await jetstreamApi.jetstream(nc).publish(
      `${env.sink}.other`,
      new TextEncoder().encode('{"k":"after","n":0,"c":0}'),
    );
  } finally {
    await nc.close();
  }
}

Deno.test({
  ...T,
  name: "breaker: cli cancel aborts the open transactions that would block read-committed readers",
  async fn() {
    await withEnv({}, async (env) => {
      const input = Array.from({ length: 3000 }, (_, i) => ({ k: `k${i % 5}`, n: i }));
      await load(env, input);
      const job = submit(env, "--rate", "200", "--unbounded");
      await env.cluster.coordinator.waitFor(/latest #5 /, 30_000);
      const list = await env.cluster.cli("list", "--json");
      const jobId = JSON.parse(list.output.trim().split("\n").at(-1)!).jobs[0].jobId;
      const cancel = await env.cluster.cli("cancel", jobId);
      assert.equal(cancel.code, 0, cancel.output);
      assert.equal((await job.endWithin(10_000)).code, 1);
      // Each sink subtask aborts its open transaction as it stops (a loaded machine may take
      // seconds). Only a transaction pre-committed for the checkpoint in flight at the cancel
      // stays open, as README's limitations say; whether there is one depends on the moment.
      let open: string[] = [];
      const notPreCommitted = () => open.filter((txn) => !txn.includes('"preCommitted":true'));
      await waitUntil(async () => {
        open = await openTxns(env);
        return notPreCommitted().length === 0;
      }, {
        timeoutMs: 30_000,
        pollMs: 200,
        missing: () => `transactions the cancel left open:\n${notPreCommitted().join("\n")}`,
      });
      await publishAfter(env);
      const out = await output(env);
      if (open.length === 0 && !out.some((r) => r.value.k === "after")) {
        assert.fail(
          `the record written after the cancel is not visible (${out.length} records read), ` +
            "though no transaction is open",
        );
      }
    });
  },
});

Deno.test({
  ...T,
  name: "breaker: a worker SIGKILLed and restarted at once with the same --id is detected",
  async fn() {
    await withEnv({ heartbeatTimeoutMs: 3000 }, async (env) => {
      const input = Array.from({ length: 1200 }, (_, i) => ({ k: `k${i % 5}`, n: i }));
      await load(env, input);
      const job = submit(env, "--rate", "200");
      await env.cluster.coordinator.waitFor(/latest #3 /, 30_000);
      // A supervisor (systemd, a StatefulSet) restarts the worker with its fixed id.
      const victim = env.cluster.workers[0]!;
      const id = /weir worker (\S+):/.exec(victim.output)![1]!;
      await victim.kill();
      const reborn = new Proc("reborn", [
        "run",
        "-A",
        `${REPO_ROOT}/cli.ts`,
        "worker",
        "--slots",
        "2",
        "--id",
        id,
        "--nats",
        env.nats.url,
      ]);
      env.cluster.workers.push(reborn);
      await reborn.waitFor(/weir worker .*slots/);
      const status = await job.endWithin(40_000);
      assert.equal(status.code, 0, job.output);
      assertExactlyOnce(await output(env), input);
    });
  },
});
