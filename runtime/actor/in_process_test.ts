import assert from "node:assert/strict";
import { deadline, delay, yieldToEventLoop } from "./async.ts";
import { DEFAULT_MAX_PAYLOAD, InProcessBus, InProcessTransport } from "./in_process.ts";
import { transportConformanceSuite } from "./transport_conformance.ts";
import { waitUntil } from "../../tests/_wait.ts";
import {
  PayloadTooLargeError,
  TransportClosedError,
  type TransportMessage,
  TransportTimeoutError,
} from "./types.ts";

transportConformanceSuite("in-process", () => {
  const bus = new InProcessBus();
  const a = bus.connect({ name: "a" });
  const b = bus.connect({ name: "b" });
  return Promise.resolve({
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
    },
  });
});

/** Resolves once `messages` holds `count` entries; fails after 2 s saying how many arrived. */
function until(messages: unknown[], count: number): Promise<void> {
  return waitUntil(() => messages.length >= count, {
    timeoutMs: 2_000,
    pollMs: 1,
    missing: () => `${messages.length} of ${count} messages arrived`,
  });
}

Deno.test("InProcessTransport() makes its own bus, which bus.connect() shares", async () => {
  const a = new InProcessTransport();
  const b = a.bus.connect();
  const other = new InProcessTransport();
  const got: string[] = [];
  const elsewhere: string[] = [];
  b.subscribe("x", (m) => got.push(m.subject));
  other.subscribe("x", (m) => elsewhere.push(m.subject));
  a.publish("x", new Uint8Array());
  await until(got, 1);
  await yieldToEventLoop();
  assert.deepEqual(elsewhere, [], "a message crossed to another bus");
  assert.equal(a.maxPayload, DEFAULT_MAX_PAYLOAD);
  assert.notEqual(a.name, b.name);
  await Promise.all([a.close(), b.close(), other.close()]);
});

Deno.test("InProcessTransport takes maxPayload from its bus", async (t) => {
  await t.step("a custom limit is enforced", async () => {
    const transport = new InProcessTransport({ maxPayload: 16, name: "small" });
    assert.equal(transport.maxPayload, 16);
    transport.publish("x", new Uint8Array(16));
    assert.throws(
      () => transport.publish("x", new Uint8Array(17)),
      (e: unknown) =>
        e instanceof PayloadTooLargeError &&
        /17 bytes on 'x' as the limit is 16 bytes/.test(e.message),
    );
    await transport.close();
  });
  await t.step("a bus and a maxPayload together are refused", () => {
    assert.throws(
      () => new InProcessTransport({ bus: new InProcessBus(), maxPayload: 5 }),
      TypeError,
    );
  });
  await t.step("a limit that is not a positive integer is refused", () => {
    for (const maxPayload of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => new InProcessBus({ maxPayload }), /current value is/);
    }
  });
});

Deno.test("InProcessBus drops what the drop filter selects", async () => {
  const bus = new InProcessBus();
  const a = bus.connect();
  const b = bus.connect();
  const got: number[] = [];
  b.subscribe("data.>", (m) => got.push(m.data[0]!));
  const seen: string[] = [];
  bus.setDropFilter((subject, data) => {
    seen.push(subject);
    return data[0]! % 2 === 1;
  });
  for (let i = 0; i < 10; i++) a.publish(`data.${i % 3}`, new Uint8Array([i]));
  await until(got, 5);
  assert.equal(seen.length, 10, "the filter is called once per publish");
  bus.setDropFilter(undefined);
  a.publish("data.x", new Uint8Array([11]));
  await until(got, 6);
  assert.deepEqual(got, [0, 2, 4, 6, 8, 11]);
  await Promise.all([a.close(), b.close()]);
});

Deno.test("InProcessBus makes a dropped request time out", async () => {
  const bus = new InProcessBus();
  const a = bus.connect();
  const b = bus.connect();
  b.subscribe("svc", (m) => b.publish(m.reply!, new Uint8Array([1])));
  bus.setDropFilter((subject) => subject.startsWith("_INBOX."));
  await assert.rejects(
    a.request("svc", new Uint8Array(), { timeoutMs: 20 }),
    TransportTimeoutError,
  );
  bus.setDropFilter(undefined);
  const reply = await a.request("svc", new Uint8Array(), { timeoutMs: 1_000 });
  assert.deepEqual(reply.data, new Uint8Array([1]));
  await Promise.all([a.close(), b.close()]);
});

Deno.test("InProcessTransport routes to a subscription made after a publish on that subject", async () => {
  const transport = new InProcessTransport();
  transport.publish("late.x", new Uint8Array([1])); // caches "no subscribers"
  const got: number[] = [];
  const subscription = transport.subscribe("late.*", (m) => got.push(m.data[0]!));
  transport.publish("late.x", new Uint8Array([2]));
  await until(got, 1);
  subscription.unsubscribe();
  const fence: number[] = [];
  transport.subscribe("late.x", (m) => fence.push(m.data[0]!));
  transport.publish("late.x", new Uint8Array([3]));
  await until(fence, 1);
  assert.deepEqual(got, [2]);
  assert.deepEqual(fence, [3]);
  await transport.close();
});

Deno.test("InProcessTransport hands the published array to the first subscription", async () => {
  const transport = new InProcessTransport();
  const got: TransportMessage[] = [];
  transport.subscribe("zero.copy", (m) => got.push(m));
  transport.subscribe("zero.*", (m) => got.push(m));
  const data = new Uint8Array([1, 2, 3]);
  transport.publish("zero.copy", data);
  await until(got, 2);
  assert.equal(got.filter((m) => m.data === data).length, 1);
  assert.deepEqual(got[0]!.data, got[1]!.data);
  await transport.close();
});

Deno.test("InProcessTransport reports a throwing handler and goes on delivering", async () => {
  const transport = new InProcessTransport();
  const reported: unknown[] = [];
  const onError = (event: ErrorEvent) => {
    reported.push(event.error);
    event.preventDefault();
  };
  globalThis.addEventListener("error", onError);
  try {
    const got: number[] = [];
    transport.subscribe("boom", (m) => {
      got.push(m.data[0]!);
      if (m.data[0] === 1) throw new Error("handler bug");
    });
    for (let i = 0; i < 3; i++) transport.publish("boom", new Uint8Array([i]));
    await until(got, 3);
    assert.deepEqual(got, [0, 1, 2]);
    assert.equal(reported.length, 1);
    assert.match(String(reported[0]), /handler bug/);
  } finally {
    globalThis.removeEventListener("error", onError);
    await transport.close();
  }
});

Deno.test("InProcessTransport lets timers run while handlers keep publishing", async () => {
  const transport = new InProcessTransport();
  let stop = false;
  let bounces = 0;
  const bounce = (next: string) => (m: TransportMessage) => {
    bounces++;
    if (!stop && bounces < 5_000_000) transport.publish(next, m.data);
  };
  transport.subscribe("ping", bounce("pong"));
  transport.subscribe("pong", bounce("ping"));
  const timer = delay(5).then(() => stop = true);
  transport.publish("ping", new Uint8Array(8));
  await deadline(timer, 1_000, "a 5 ms timer during a ping-pong of handlers");
  await yieldToEventLoop();
  await yieldToEventLoop();
  const settled = bounces;
  await yieldToEventLoop();
  assert.equal(bounces, settled, "the ping-pong went on after stop");
  assert.ok(bounces > 1 && bounces < 5_000_000, `bounces: ${bounces}`);
  await transport.close();
});

Deno.test("InProcessTransport names the connection in its errors", async () => {
  const transport = new InProcessBus().connect({ name: "job j1 map[2]" });
  await transport.close();
  assert.throws(
    () => transport.publish("weir.x", new Uint8Array()),
    (e: unknown) =>
      e instanceof TransportClosedError &&
      e.message === "Cannot publish on 'weir.x' as the connection 'job j1 map[2]' is closed",
  );
});

Deno.test("InProcessTransport carries 200k messages published in one burst, every one delivered", async () => {
  // Speed is measured by runtime/actor/codec_bench.ts and the benches, never
  // asserted here (a loaded machine would fail a timed assertion).
  const bus = new InProcessBus();
  const a = bus.connect();
  const b = bus.connect();
  const count = 200_000;
  const perSubject = new Array<number>(8).fill(0);
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  b.subscribe("weir.j1.data.*", (m) => {
    perSubject[Number(m.subject.slice("weir.j1.data.".length))]!++;
    if (++received === count) done();
  });
  const payload = new Uint8Array(64);
  for (let i = 0; i < count; i++) a.publish(`weir.j1.data.${i & 7}`, payload);
  await deadline(finished, 60_000, `${count} messages`);
  assert.deepEqual(perSubject, new Array(8).fill(count / 8));
  await Promise.all([a.close(), b.close()]);
});

Deno.test("InProcessTransport hands values over as they are, in order with byte payloads, never inside publish", async () => {
  const bus = new InProcessBus();
  const a = bus.connect();
  const b = bus.connect();
  const exact: TransportMessage[] = [];
  const wildcard: TransportMessage[] = [];
  b.subscribe("values.x", (m) => exact.push(m));
  b.subscribe("values.*", (m) => wildcard.push(m));
  const record = { id: 1, nested: [1, 2] };
  a.publish("values.x", new Uint8Array([1]));
  a.publishValue("values.x", record);
  a.publish("values.x", new Uint8Array([2]));
  assert.equal(exact.length + wildcard.length, 0, "delivered inside publish");
  await until(exact, 3);
  await until(wildcard, 3);
  for (const got of [exact, wildcard]) {
    // Each subscription in publish order; both get the very object.
    assert.deepEqual(
      got.map((m) => m.value === undefined ? `bytes ${m.data[0]}` : "value"),
      ["bytes 1", "value", "bytes 2"],
    );
    assert.equal(got[1]!.value, record, "the value was copied");
    assert.equal(got[1]!.data.byteLength, 0, "an in-thread value carries no bytes");
  }
  await Promise.all([a.close(), b.close()]);
});

Deno.test("InProcessBus shows in-thread values to the drop filter and drops what it selects", async () => {
  const bus = new InProcessBus();
  const a = bus.connect();
  const got: unknown[] = [];
  a.subscribe("drop.values", (m) => got.push(m.value));
  const seen: unknown[] = [];
  bus.setDropFilter((_subject, data, value) => {
    assert.equal(data.byteLength, 0);
    seen.push(value);
    return value === 2;
  });
  for (let i = 1; i <= 3; i++) a.publishValue("drop.values", i);
  await until(got, 2);
  assert.deepEqual(seen, [1, 2, 3]);
  assert.deepEqual(got, [1, 3]);
  await a.close();
});

Deno.test("InProcessTransport refuses an undefined value, and values after close", async () => {
  const transport = new InProcessTransport({ name: "values" });
  assert.throws(
    () => transport.publishValue("v.x", undefined),
    /Cannot publish a value on 'v\.x' as the value must not be undefined/,
  );
  await transport.close();
  assert.throws(
    () => transport.publishValue("v.x", 1),
    (e) => e instanceof TransportClosedError && /connection 'values' is closed/.test(e.message),
  );
});
