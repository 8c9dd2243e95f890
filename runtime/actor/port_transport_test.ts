import assert from "node:assert/strict";
import { NatsTransport } from "./nats_transport.ts";
import { isTaskSubject, PortTransport } from "./port_transport.ts";
import { transportConformanceSuite } from "./transport_conformance.ts";
import { TransportError, type TransportMessage } from "./types.ts";
import { TEST_NATS_URL } from "../../tests/_nats_server.ts";
import { waitUntil } from "../../tests/_wait.ts";

/** Two port transports over NATS, connected as peers of one worker process. */
async function pair(): Promise<{ a: PortTransport; b: PortTransport; close(): Promise<void> }> {
  const channel = new MessageChannel();
  const a = new PortTransport({
    remote: await NatsTransport.connect({ servers: TEST_NATS_URL, name: "weir-port-a" }),
    ownsRemote: true,
    name: "a",
  });
  const b = new PortTransport({
    remote: await NatsTransport.connect({ servers: TEST_NATS_URL, name: "weir-port-b" }),
    ownsRemote: true,
    name: "b",
  });
  a.connectPeer("b", channel.port1);
  b.connectPeer("a", channel.port2);
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
    },
  };
}

transportConformanceSuite("port (two peers over ports and NATS)", pair);

function prefix(): string {
  return `weirtest_${crypto.randomUUID().slice(0, 8)}`;
}

function inbox(): { messages: TransportMessage[]; handler: (m: TransportMessage) => void } {
  const messages: TransportMessage[] = [];
  return { messages, handler: (m) => void messages.push(m) };
}

Deno.test("PortTransport sends a subscribed routable subject through the port and nothing through NATS", async () => {
  const { a, b, close } = await pair();
  const p = prefix();
  const watcher = await NatsTransport.connect({ servers: TEST_NATS_URL });
  try {
    const onNats = inbox();
    watcher.subscribe(`${p}.>`, onNats.handler);
    await watcher.flush();
    const got = inbox();
    b.subscribe(`${p}.data`, got.handler);
    await b.flush();
    for (let i = 0; i < 100; i++) a.publish(`${p}.data`, new Uint8Array([i]));
    await waitUntil(() => got.messages.length === 100, {
      timeoutMs: 5_000,
      missing: () => `${got.messages.length} of 100 messages arrived`,
    });
    assert.deepEqual(got.messages.map((m) => m.data[0]), [...Array(100).keys()]);
    assert.equal(a.stats.portMessages, 100);
    assert.equal(a.stats.remoteMessages, 0);
    // A fence through NATS proves the watcher saw nothing before it.
    a.publish(`${p}.fence`, new Uint8Array([1]));
    await waitUntil(() => onNats.messages.length > 0, {
      timeoutMs: 5_000,
      missing: () => "the fence did not arrive through NATS",
    });
    assert.deepEqual(onNats.messages.map((m) => m.subject), [`${p}.fence`]);
  } finally {
    await watcher.close();
    await close();
  }
});

Deno.test("PortTransport keeps a subject on NATS once its first publish went there", async () => {
  const { a, b, close } = await pair();
  const p = prefix();
  try {
    const got = inbox();
    a.publish(`${p}.late`, new Uint8Array([0])); // nobody subscribes yet: NATS, lost
    // The server must have handled that publish before b's subscription reaches it (b has its
    // own connection): without this flush a loaded machine let the 0 arrive (CI saw 11 of 10).
    await a.flush();
    b.subscribe(`${p}.late`, got.handler);
    await b.flush();
    for (let i = 1; i <= 10; i++) a.publish(`${p}.late`, new Uint8Array([i]));
    await waitUntil(() => got.messages.length === 10, {
      timeoutMs: 5_000,
      missing: () => `${got.messages.length} of 10 messages arrived`,
    });
    assert.deepEqual(got.messages.map((m) => m.data[0]), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(a.stats.portMessages, 0);
    assert.equal(a.stats.remoteMessages, 11);
  } finally {
    await close();
  }
});

Deno.test("PortTransport transfers a whole buffer and copies a view of part of one", async () => {
  const { a, b, close } = await pair();
  const p = prefix();
  try {
    const got = inbox();
    b.subscribe(`${p}.x`, got.handler);
    await b.flush();
    const whole = new Uint8Array([1, 2, 3]);
    const backing = new Uint8Array([9, 4, 5, 9]);
    a.publish(`${p}.x`, whole);
    a.publish(`${p}.x`, backing.subarray(1, 3));
    await waitUntil(() => got.messages.length === 2, {
      timeoutMs: 5_000,
      missing: () => `${got.messages.length} of 2 messages arrived`,
    });
    assert.equal(whole.byteLength, 0, "the whole buffer was transferred");
    assert.deepEqual([...backing], [9, 4, 5, 9], "a partial view is copied");
    assert.deepEqual(got.messages.map((m) => [...m.data]), [[1, 2, 3], [4, 5]]);
  } finally {
    await close();
  }
});

Deno.test("PortTransport reaches a peer in another thread, and fails publishes to it once the peer is lost", async () => {
  const p = prefix();
  const subject = `${p}.in`;
  const thread = new Worker(new URL("./testdata/port_peer_thread.ts", import.meta.url).href, {
    type: "module",
  });
  const channel = new MessageChannel();
  const main = new PortTransport({
    remote: await NatsTransport.connect({ servers: TEST_NATS_URL }),
    ownsRemote: true,
    name: "main",
  });
  try {
    const echoes = inbox();
    main.subscribe(`${subject}.echo`, echoes.handler);
    main.connectPeer("thread", channel.port1);
    const ready = new Promise((resolve) => thread.onmessage = resolve);
    thread.postMessage({ port: channel.port2, subject, nats: TEST_NATS_URL }, [channel.port2]);
    await ready;
    await main.flush();
    for (let i = 0; i < 50; i++) main.publish(subject, new Uint8Array([i]));
    await waitUntil(() => echoes.messages.length === 50, {
      timeoutMs: 10_000,
      missing: () => `${echoes.messages.length} of 50 echoes arrived`,
    });
    assert.deepEqual(echoes.messages.map((m) => m.data[0]), [...Array(50).keys()]);
    assert.equal(main.stats.portMessages, 50);
    assert.equal(main.stats.remoteMessages, 0);
    thread.terminate();
    main.peerLost("thread", "the test terminated its thread");
    assert.throws(
      () => main.publish(subject, new Uint8Array([1])),
      (e) =>
        e instanceof TransportError && /subscriber's thread was lost/.test(e.message) &&
        e.message.includes(subject) && e.message.includes("the test terminated its thread"),
    );
  } finally {
    thread.terminate();
    await main.close();
  }
});

Deno.test("isTaskSubject accepts subtask mailboxes only", () => {
  assert.equal(isTaskSubject("weir.job-1.0.task.v1.3"), true);
  assert.equal(isTaskSubject("weir.job-1.12.task.v10.0"), true);
  assert.equal(isTaskSubject("weir.job-1.coord"), false);
  assert.equal(isTaskSubject("weir.worker.w1-s0"), false);
  assert.equal(isTaskSubject("weir.job.0.task.v1"), false);
  assert.equal(isTaskSubject("_INBOX.abc.1"), false);
});
