import assert from "node:assert/strict";
import { NatsSink } from "./sink.ts";
import { NatsSource } from "./source.ts";
import { connectNats } from "../../runtime/actor/nats_connect.ts";
import type { NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { DeliveryGuaranteeError } from "../../runtime/api/sink_v2.ts";
import { StreamExecutionEnvironment } from "../../runtime/api/environment.ts";
import "../../runtime/cluster/default_executor.ts"; // registers the executor execute() uses
import { WatermarkStrategy } from "../../runtime/time/watermark.ts";
import { waitUntil } from "../../tests/_wait.ts";

const connection = { servers: "nats://127.0.0.1:4222" };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function uniqueSubject(): string {
  return `weir-test.nats-sink.${crypto.randomUUID()}`;
}

/** Subscribes `nc` to `subject` (flushed, so the server knows it) and gathers `[subject, text]`. */
async function listen(nc: NatsConnection, subject: string): Promise<[string, string][]> {
  const got: [string, string][] = [];
  nc.subscribe(subject, {
    callback: (_e, m) => void got.push([m.subject, decoder.decode(m.data)]),
  });
  await nc.flush();
  return got;
}

Deno.test("NatsSink accepts only deliveryGuarantee none and names the others it refuses", () => {
  assert.equal(new NatsSink({ connection, subject: "a.b" }).deliveryGuarantee, "none");
  assert.equal(
    new NatsSink({ connection, subject: "a.b", deliveryGuarantee: "none" }).deliveryGuarantee,
    "none",
  );
  for (const requested of ["at-least-once", "exactly-once"] as const) {
    assert.throws(
      () => new NatsSink({ connection, subject: "a.b", deliveryGuarantee: requested }),
      (e: unknown) =>
        e instanceof DeliveryGuaranteeError &&
        e.message.includes(`cannot give deliveryGuarantee "${requested}": it supports "none"`),
    );
  }
  assert.throws(
    () => new NatsSink({ connection, subject: "a.b", deliveryGuarantee: "twice" as "none" }),
    (e: unknown) =>
      e instanceof DeliveryGuaranteeError && /current value is "twice"/.test(e.message),
  );
});

Deno.test("NatsSink refuses a wildcard subject and a bad flushEveryRecords", () => {
  assert.throws(
    () => new NatsSink({ connection, subject: "alerts.>" }),
    /'subject' must be a non-empty subject without wildcards or spaces: current value is "alerts.>"/,
  );
  assert.throws(
    () => new NatsSink({ connection, subject: "a", flushEveryRecords: 0 }),
    /'flushEveryRecords' must be a positive integer: current value is 0/,
  );
});

Deno.test("NatsSink publishes every record of a bounded job on the subject its function gives", async () => {
  const base = uniqueSubject();
  const nc = await connectNats(connection);
  try {
    const got = await listen(nc, `${base}.>`);
    const records = Array.from({ length: 2000 }, (_, i) => ({ id: i, parity: i % 2 }));
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection(records).sinkTo(
      new NatsSink<{ id: number; parity: number }>({
        connection,
        subject: (r) => `${base}.${r.parity === 0 ? "even" : "odd"}`,
        serializer: (r) => encoder.encode(String(r.id)),
        flushEveryRecords: 300,
      }),
    ).uid("nats-out");
    await env.execute("nats sink");
    await waitUntil(() => got.length >= records.length, {
      timeoutMs: 10_000,
      missing: () => `${got.length} of ${records.length} messages arrived`,
    });
    assert.equal(got.length, records.length);
    const even = got.filter(([s]) => s === `${base}.even`).map(([, t]) => Number(t));
    const odd = got.filter(([s]) => s === `${base}.odd`).map(([, t]) => Number(t));
    assert.deepEqual(even, records.filter((r) => r.parity === 0).map((r) => r.id));
    assert.deepEqual(odd, records.filter((r) => r.parity === 1).map((r) => r.id));
  } finally {
    await nc.close();
  }
});

Deno.test("NatsSink fails the job once, naming a wildcard subject its function returned", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000); // restarts forever on errors a restart could fix
  env.fromCollection(["x"]).sinkTo(new NatsSink<string>({ connection, subject: () => "bad.*" }))
    .uid("nats-bad");
  await assert.rejects(
    () => env.execute("nats sink bad subject"),
    (e: unknown) =>
      e instanceof Error &&
      e.message.includes(
        `NatsSink 'nats-bad' (subtask 1/1): the subject function's result must be a non-empty subject without wildcards or spaces: current value is "bad.*"`,
      ),
  );
});

Deno.test("core NATS source to sink: two source subtasks in a queue group share the messages without duplicates", async () => {
  const input = uniqueSubject();
  const output = uniqueSubject();
  const nc = await connectNats(connection);
  try {
    const got = await listen(nc, output);
    const perSubtask = 50;
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromSource(
      new NatsSource({
        connection,
        subject: input,
        queueGroup: "weir-test",
        maxMessages: perSubtask,
      }),
      WatermarkStrategy.noWatermarks(),
      "nats in",
    ).setParallelism(2).uid("nats-in")
      .map((line) => line.toUpperCase())
      .sinkTo(new NatsSink<string>({ connection, subject: output })).setParallelism(1).uid("out");
    // Core NATS keeps nothing: publish until the job has read its 2 × 50
    // messages; those published before the subscriptions existed are lost.
    const job = env.execute("nats to nats");
    let done = false;
    job.finally(() => done = true).catch(() => {});
    let sent = 0;
    const deadline = performance.now() + 60_000;
    while (!done) {
      if (performance.now() > deadline) {
        assert.fail(`the job did not end within 60 s; ${sent} messages published`);
      }
      nc.publish(input, encoder.encode(`m${sent++}`));
      if (sent % 20 === 0) await nc.flush();
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await job;
    await waitUntil(() => got.length >= 2 * perSubtask, {
      timeoutMs: 10_000,
      missing: () => `${got.length} of ${2 * perSubtask} messages arrived`,
    });
    const texts = got.map(([, t]) => t);
    assert.equal(texts.length, 2 * perSubtask);
    assert.equal(new Set(texts).size, texts.length, "a message was read twice");
    for (const t of texts) assert.match(t, /^M\d+$/);
  } finally {
    await nc.close();
  }
});
