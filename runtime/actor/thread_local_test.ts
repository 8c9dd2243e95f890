import assert from "node:assert/strict";
import { InProcessBus } from "./in_process.ts";
import { ThreadLocalTransport } from "./thread_local.ts";
import { transportConformanceSuite } from "./transport_conformance.ts";
import { type Transport, TransportClosedError, type TransportMessage } from "./types.ts";
import { waitUntil } from "../../tests/_wait.ts";

/** A connection to `bus` without `publishValue`, standing in for NATS between threads. */
function network(bus: InProcessBus, name: string): Transport {
  const t = bus.connect({ name });
  return {
    maxPayload: t.maxPayload,
    publish: (s, d, o) => t.publish(s, d, o),
    subscribe: (s, h) => t.subscribe(s, h),
    request: (s, d, o) => t.request(s, d, o),
    flush: () => t.flush(),
    close: () => t.close(),
  };
}

transportConformanceSuite("thread-local over a network", () => {
  const bus = new InProcessBus();
  const a = new ThreadLocalTransport(network(bus, "a"));
  const b = new ThreadLocalTransport(network(bus, "b"));
  return Promise.resolve({
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
    },
  });
});

function until(messages: unknown[], count: number): Promise<void> {
  return waitUntil(() => messages.length >= count, {
    timeoutMs: 2_000,
    pollMs: 1,
    missing: () => `${messages.length} of ${count} messages arrived`,
  });
}

Deno.test("ThreadLocalTransport keeps messages to its own subscriptions in the thread, bytes and values in order", async () => {
  const bus = new InProcessBus();
  const thread = new ThreadLocalTransport(network(bus, "slot"));
  const monitor = bus.connect({ name: "monitor" });
  const onNetwork: string[] = [];
  monitor.subscribe("task.>", (m) => onNetwork.push(m.subject));
  const got: TransportMessage[] = [];
  thread.subscribe("task.v1.0", (m) => got.push(m));
  const record = { n: 1 };
  assert.equal(thread.isInThread("task.v1.0"), true);
  thread.publish("task.v1.0", new Uint8Array([1]));
  assert.equal(thread.publishValue("task.v1.0", record), true);
  thread.publish("task.v1.0", new Uint8Array([2]));
  // A subject with no subscription here goes to the network, and refuses values.
  assert.equal(thread.publishValue("task.v2.0", record), false);
  thread.publish("task.v2.0", new Uint8Array([3]));
  await until(got, 3);
  await until(onNetwork, 1);
  assert.deepEqual(got.map((m) => m.value === undefined ? m.data[0] : m.value), [1, record, 2]);
  assert.equal(got[1]!.value, record, "the value was copied");
  assert.deepEqual(onNetwork, ["task.v2.0"], "an in-thread message went to the network");
  await thread.close();
  await monitor.close();
});

Deno.test("ThreadLocalTransport delivers what other threads publish, and goes back to the network after unsubscribe", async () => {
  const bus = new InProcessBus();
  const thread = new ThreadLocalTransport(network(bus, "slot 1"));
  const other = new ThreadLocalTransport(network(bus, "slot 2"));
  const got: number[] = [];
  const subscription = thread.subscribe("task.v1.0", (m) => got.push(m.data[0]!));
  assert.equal(
    other.publishValue("task.v1.0", 1),
    false,
    "another thread's subject taken as local",
  );
  other.publish("task.v1.0", new Uint8Array([7]));
  await until(got, 1);
  subscription.unsubscribe();
  assert.equal(thread.isInThread("task.v1.0"), false);
  assert.equal(thread.publishValue("task.v1.0", 1), false);
  const monitor: number[] = [];
  other.subscribe("task.v1.0", (m) => monitor.push(m.data[0]!));
  thread.publish("task.v1.0", new Uint8Array([8])); // now to the network, where `other` listens
  await until(monitor, 1);
  assert.deepEqual(got, [7]);
  assert.deepEqual(monitor, [8]);
  await thread.close();
  await other.close();
});

Deno.test("ThreadLocalTransport refuses values after close", async () => {
  const bus = new InProcessBus();
  const thread = new ThreadLocalTransport(network(bus, "slot"), { name: "slot-1 in-thread" });
  thread.subscribe("task.v1.0", () => {});
  await thread.close();
  assert.throws(
    () => thread.publishValue("task.v1.0", 1),
    (e) => e instanceof TransportClosedError && /'slot-1 in-thread' is closed/.test(e.message),
  );
  assert.throws(() => thread.publish("task.v1.0", new Uint8Array([1])), TransportClosedError);
});
