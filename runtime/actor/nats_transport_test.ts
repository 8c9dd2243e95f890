import assert from "node:assert/strict";
import { deadline } from "./async.ts";
import { connectNats } from "./nats_connect.ts";
import { NatsTransport } from "./nats_transport.ts";
import { transportConformanceSuite } from "./transport_conformance.ts";
import {
  PayloadTooLargeError,
  TransportClosedError,
  type TransportMessage,
  TransportTimeoutError,
} from "./types.ts";
import { startNatsServer, TEST_NATS_URL } from "../../tests/_nats_server.ts";
import { waitUntil } from "../../tests/_wait.ts";

transportConformanceSuite("nats", async () => {
  const a = await NatsTransport.connect({ servers: TEST_NATS_URL, name: "weir-conformance-a" });
  const b = await NatsTransport.connect({ servers: TEST_NATS_URL, name: "weir-conformance-b" });
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
    },
  };
});

transportConformanceSuite("nats (two transports borrowing one connection)", async () => {
  const nc = await connectNats({ servers: TEST_NATS_URL, name: "weir-conformance-shared" });
  const a = new NatsTransport(nc, { name: "a" });
  const b = new NatsTransport(nc, { name: "b" });
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
      assert.equal(nc.isClosed(), false, "a transport closed a connection it borrowed");
      await nc.close();
    },
  };
});

/** A random first token, so runs sharing the NATS server do not interfere. */
function prefix(): string {
  return `weirtest_${crypto.randomUUID().slice(0, 8)}`;
}

/** How long a test waits for its messages before failing, in ms. */
const RECEIVE_TIMEOUT_MS = 5_000;

/**
 * Collects messages; `received()` resolves once `count` have arrived, or
 * fails after {@linkcode RECEIVE_TIMEOUT_MS} saying how many did.
 */
function collect(count: number, what: string): {
  messages: TransportMessage[];
  handler: (m: TransportMessage) => void;
  received: () => Promise<void>;
} {
  const messages: TransportMessage[] = [];
  return {
    messages,
    handler: (m) => void messages.push(m),
    received: () =>
      waitUntil(() => messages.length >= count, {
        timeoutMs: RECEIVE_TIMEOUT_MS,
        missing: () => `${messages.length} of ${count} ${what} arrived`,
      }),
  };
}

Deno.test("NatsTransport drops what its drop filter selects, after validating", async () => {
  const p = prefix();
  const seen: string[] = [];
  const receiver = await NatsTransport.connect({ servers: TEST_NATS_URL });
  const sender = await NatsTransport.connect({ servers: TEST_NATS_URL }, {
    dropFilter: (subject, data) => {
      seen.push(subject);
      return subject.startsWith(`${p}.data.`) && data[0]! % 2 === 1;
    },
  });
  try {
    const inbox = collect(6, "messages not dropped");
    receiver.subscribe(`${p}.data.>`, inbox.handler);
    receiver.subscribe(`${p}.fence`, (m) => inbox.handler(m));
    await receiver.flush();
    assert.throws(() => sender.publish(`${p}.data.*`, new Uint8Array([1])), /wildcard/);
    for (let i = 0; i < 10; i++) sender.publish(`${p}.data.${i % 3}`, new Uint8Array([i]));
    sender.publish(`${p}.fence`, new Uint8Array([10]));
    await inbox.received();
    assert.deepEqual(inbox.messages.map((m) => m.data[0]), [0, 2, 4, 6, 8, 10]);
    assert.equal(seen.length, 11, "the filter is called once per valid publish");
  } finally {
    await sender.close();
    await receiver.close();
  }
});

Deno.test("NatsTransport delivers plain Uint8Arrays, whose slice() copies", async () => {
  const p = prefix();
  const a = await NatsTransport.connect({ servers: TEST_NATS_URL });
  const b = await NatsTransport.connect({ servers: TEST_NATS_URL });
  try {
    const inbox = collect(2, "messages on .plain");
    b.subscribe(`${p}.plain`, inbox.handler);
    b.subscribe(`${p}.ask`, (m) => b.publish(m.reply!, new Uint8Array([9, 9, 9])));
    await b.flush();
    a.publish(`${p}.plain`, new Uint8Array([1, 2, 3]));
    a.publish(`${p}.plain`, new Uint8Array(3_000_000 >> 2)); // spans socket reads
    await inbox.received();
    const reply = await a.request(`${p}.ask`, new Uint8Array(), { timeoutMs: 2_000 });
    for (const data of [...inbox.messages.map((m) => m.data), reply.data]) {
      assert.equal(Object.getPrototypeOf(data), Uint8Array.prototype);
      const copy = data.slice();
      copy[0] = 42;
      assert.notEqual(data[0], 42, "slice() returned a view");
    }
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("NatsTransport makes a request the drop filter drops time out", async () => {
  const p = prefix();
  const responder = await NatsTransport.connect({ servers: TEST_NATS_URL });
  let drop = true;
  const requester = await NatsTransport.connect({ servers: TEST_NATS_URL }, {
    dropFilter: (subject) => drop && subject === `${p}.svc`,
  });
  try {
    responder.subscribe(`${p}.svc`, (m) => responder.publish(m.reply!, new Uint8Array([1])));
    await responder.flush();
    await assert.rejects(
      requester.request(`${p}.svc`, new Uint8Array(), { timeoutMs: 50 }),
      TransportTimeoutError,
    );
    drop = false;
    const reply = await requester.request(`${p}.svc`, new Uint8Array(), { timeoutMs: 2_000 });
    assert.deepEqual([...reply.data], [1]);
  } finally {
    await requester.close();
    await responder.close();
  }
});

Deno.test("NatsTransport takes maxPayload from the server's max_payload", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-nats-conf-" });
  const server = await (async () => {
    await Deno.writeTextFile(`${dir}/server.conf`, "max_payload: 4096\n");
    return await startNatsServer({ args: ["-c", `${dir}/server.conf`] });
  })().finally(() => Deno.remove(dir, { recursive: true }));
  const transport = await NatsTransport.connect({ servers: server.url }, { name: "small" });
  try {
    assert.equal(transport.maxPayload, 4096);
    const inbox = collect(1, "messages of exactly max_payload bytes");
    transport.subscribe("big", inbox.handler);
    await transport.flush();
    assert.throws(
      () => transport.publish("big", new Uint8Array(4097)),
      (e: unknown) =>
        e instanceof PayloadTooLargeError &&
        e.message === "Cannot publish 4097 bytes on 'big' as the limit is 4096 bytes",
    );
    transport.publish("big", new Uint8Array(4096).fill(7)); // exactly the limit: no headers sent
    await inbox.received();
    assert.equal(inbox.messages[0]!.data.byteLength, 4096);
    assert.equal(transport.connection.isClosed(), false, "the server refused the publish");
  } finally {
    await transport.close();
    await server.stop();
  }
});

Deno.test("NatsTransport closes only a connection it owns", async () => {
  const nc = await connectNats({ servers: TEST_NATS_URL });
  const borrowed = new NatsTransport(nc);
  await borrowed.close();
  assert.equal(nc.isClosed(), false);
  const owned = new NatsTransport(nc, { ownsConnection: true });
  await owned.close();
  assert.equal(nc.isClosed(), true);
  const connected = await NatsTransport.connect({ servers: TEST_NATS_URL });
  await connected.close();
  assert.equal(connected.connection.isClosed(), true);
});

Deno.test("NatsTransport delivers what an owned connection published before close()", async () => {
  const p = prefix();
  const count = 1_000;
  const receiver = await NatsTransport.connect({ servers: TEST_NATS_URL });
  const sender = await NatsTransport.connect({ servers: TEST_NATS_URL });
  try {
    const inbox = collect(count, "messages published before close()");
    receiver.subscribe(`${p}.last`, inbox.handler);
    await receiver.flush();
    for (let i = 0; i < count; i++) {
      const data = new Uint8Array(1_000);
      new DataView(data.buffer).setUint32(0, i);
      sender.publish(`${p}.last`, data);
    }
    await sender.close(); // drains
    await inbox.received();
    await receiver.flush(); // anything more (a copy) would have arrived by now
    const numbers = inbox.messages.map((m) =>
      new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength).getUint32(0)
    );
    assert.deepEqual(numbers, Array.from({ length: count }, (_, i) => i), "each once, in order");
    assert.ok(inbox.messages.every((m) => m.data.byteLength === 1_000), "a payload was cut");
  } finally {
    await sender.close();
    await receiver.close();
  }
});

Deno.test("NatsTransport names the connection in its errors", async (t) => {
  await t.step("after close()", async () => {
    const transport = await NatsTransport.connect({ servers: TEST_NATS_URL }, {
      name: "job j1 map[2]",
    });
    await transport.close();
    assert.throws(
      () => transport.publish("weir.x", new Uint8Array()),
      (e: unknown) =>
        e instanceof TransportClosedError &&
        e.message === "Cannot publish on 'weir.x' as the connection 'job j1 map[2]' is closed",
    );
  });
  await t.step("when its borrowed connection was closed under it", async () => {
    const nc = await connectNats({ servers: TEST_NATS_URL });
    const transport = new NatsTransport(nc, { name: "worker w1" });
    await nc.close();
    assert.throws(
      () => transport.publish("weir.x", new Uint8Array()),
      (e: unknown) =>
        e instanceof TransportClosedError &&
        /Cannot publish on 'weir\.x' as the NATS connection of 'worker w1' is closed/.test(
          e.message,
        ),
    );
    await assert.rejects(transport.flush(), TransportClosedError);
    await transport.close();
  });
  await t.step("by default, the server's id of the connection", async () => {
    const transport = await NatsTransport.connect({ servers: TEST_NATS_URL });
    assert.equal(transport.name, `nats-${transport.connection.info!.client_id}`);
    await transport.close();
  });
});

Deno.test("NatsTransport reports a throwing handler and goes on delivering", async () => {
  const p = prefix();
  const transport = await NatsTransport.connect({ servers: TEST_NATS_URL });
  const reported: unknown[] = [];
  const onError = (event: ErrorEvent) => {
    reported.push(event.error);
    event.preventDefault();
  };
  globalThis.addEventListener("error", onError);
  try {
    const inbox = collect(3, "messages to the throwing handler");
    transport.subscribe(`${p}.boom`, (m) => {
      inbox.handler(m);
      if (m.data[0] === 1) throw new Error("handler bug");
    });
    await transport.flush();
    for (let i = 0; i < 3; i++) transport.publish(`${p}.boom`, new Uint8Array([i]));
    await inbox.received();
    assert.deepEqual(inbox.messages.map((m) => m.data[0]), [0, 1, 2]);
    assert.equal(reported.length, 1);
    assert.match(String(reported[0]), /handler bug/);
  } finally {
    globalThis.removeEventListener("error", onError);
    await transport.close();
  }
});

Deno.test("NatsTransport resubscribes after the server restarts", async () => {
  const server = await startNatsServer();
  const receiver = await NatsTransport.connect({ servers: server.url, name: "receiver" });
  const sender = await NatsTransport.connect({ servers: server.url, name: "sender" });
  try {
    const inbox = collect(2, "messages before and after the restart");
    receiver.subscribe("weir.j1.0.task.v1.0", inbox.handler);
    await receiver.flush();
    sender.publish("weir.j1.0.task.v1.0", new Uint8Array([1]));
    const reconnected = Promise.all([receiver, sender].map(async (transport) => {
      for await (const status of transport.connection.status()) {
        if (status.type === "reconnect") return;
      }
    }));
    await waitUntil(() => inbox.messages.length >= 1, {
      timeoutMs: RECEIVE_TIMEOUT_MS,
      missing: () => "the message published before the restart did not arrive",
    });
    await server.kill();
    await server.restart();
    await deadline(reconnected, 20_000, "both reconnects");
    await receiver.flush(); // the server knows the resubscription
    sender.publish("weir.j1.0.task.v1.0", new Uint8Array([2]));
    await inbox.received();
    assert.deepEqual(inbox.messages.map((m) => m.data[0]), [1, 2]);
  } finally {
    await sender.close();
    await receiver.close();
    await server.stop();
  }
});
