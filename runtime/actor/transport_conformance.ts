/**
 * The conformance suite every {@linkcode Transport} must pass, run by each
 * implementation's test file (one suite, several implementations, as Hono's
 * `common.case.test.ts`):
 *
 * ```ts ignore
 * import { InProcessBus } from "./in_process.ts";
 * import { transportConformanceSuite } from "./transport_conformance.ts";
 *
 * transportConformanceSuite("in-process", () => {
 *   const bus = new InProcessBus();
 *   const a = bus.connect();
 *   const b = bus.connect();
 *   return Promise.resolve({ a, b, close: async () => { await a.close(); await b.close(); } });
 * });
 * ```
 *
 * The suite checks only the contract of `types.ts`, so that a transport over
 * a real NATS server passes it too:
 *
 * - it waits for deliveries (never assumes timing) and `flush()`es the
 *   subscribing connection before another one publishes, as NATS needs for
 *   the server to know the subscription;
 * - it proves that a message did not arrive with a later "fence" message on
 *   the same subscription (per-publisher order), or, across subscriptions,
 *   with a short settle of about 20 ms;
 * - every subject starts with a random prefix, so parallel runs sharing a
 *   server do not see each other's messages;
 * - each wait fails after 2 s with a message saying what was missing, and each
 *   test takes well under a second on a working transport.
 *
 * It also asserts what `types.ts` leaves implicit: reply subjects start with
 * `_INBOX.`, a message without a reply subject has `reply === undefined`, and
 * a pending request fails with `TransportClosedError` when its transport
 * closes.
 *
 * @module
 */

import assert from "node:assert/strict";
import { deadline, delay } from "./async.ts";
import {
  InvalidSubjectError,
  NoRespondersError,
  PayloadTooLargeError,
  type Transport,
  TransportClosedError,
  type TransportMessage,
  TransportTimeoutError,
} from "./types.ts";

/**
 * What the suite's factory makes for each test: two connections to the same
 * bus or server, and a `close` that releases everything (it must tolerate
 * connections the test already closed).
 */
export interface TransportPair {
  /** The first connection. */
  readonly a: Transport;
  /** The second connection, to the same bus or server as `a`. */
  readonly b: Transport;
  /** Closes both connections and whatever else the factory started. */
  close(): Promise<void>;
}

/**
 * Registers the conformance tests (`Deno.test`, named "transport <name> ...")
 * for one {@linkcode Transport} implementation.
 *
 * @param name The implementation's name in test names, e.g. `"in-process"`.
 * @param factory Makes a fresh {@linkcode TransportPair} for each test.
 */
export function transportConformanceSuite(
  name: string,
  factory: () => Promise<TransportPair>,
): void {
  const test = (what: string, fn: (pair: TransportPair, t: Deno.TestContext) => Promise<void>) =>
    Deno.test(`transport ${name} ${what}`, async (t) => {
      const pair = await factory();
      try {
        await fn(pair, t);
      } finally {
        await pair.close();
      }
    });

  test("matches subjects with * and > wildcards", async ({ a, b }, t) => {
    const p = prefix();
    const cases: { pattern: string; published: string[]; matching: string[] }[] = [
      {
        pattern: `${p}.star.*.x`,
        published: [
          `${p}.star.1.x`,
          `${p}.star.x`,
          `${p}.star.1.2.x`,
          `${p}.star.2.x`,
          `${p}.star.1.y`,
        ],
        matching: [`${p}.star.1.x`, `${p}.star.2.x`],
      },
      {
        pattern: `${p}.rest.>`,
        published: [
          `${p}.rest`,
          `${p}.rest.a`,
          `${p}.resting.a`,
          `${p}.rest.a.b.c`,
          `${p}.x.rest.a`,
        ],
        matching: [`${p}.rest.a`, `${p}.rest.a.b.c`],
      },
      {
        pattern: `${p}.lit.a`,
        published: [`${p}.lit`, `${p}.lit.a.b`, `${p}.lit.b`, `${p}.lit.a`, `${p}.lit.A`],
        matching: [`${p}.lit.a`],
      },
      {
        pattern: `${p}.mix.*.>`,
        published: [`${p}.mix.a`, `${p}.mix.a.b`, `${p}.mix.a.b.c`, `${p}.mux.a.b`],
        matching: [`${p}.mix.a.b`, `${p}.mix.a.b.c`],
      },
    ];
    for (const { pattern, published, matching } of cases) {
      await t.step(
        `${pattern.slice(p.length + 1)} receives ${matching.length} of ${published.length}`,
        async () => {
          const inbox = new Inbox();
          b.subscribe(pattern, inbox.handler);
          await b.flush();
          for (const subject of published) a.publish(subject, bytes(1));
          const fence = matching[0]!;
          a.publish(fence, bytes(2)); // per-publisher order: everything before it has arrived with it
          const got = await inbox.receive(matching.length + 1, `messages on ${pattern}`);
          await settle(a, b);
          assert.deepEqual(got.map((m) => m.subject), [...matching, fence]);
        },
      );
    }
  });

  test("delivers one copy to each matching subscription, which owns its bytes", async ({ a, b }) => {
    const p = prefix();
    const inboxes = [new Inbox(), new Inbox(), new Inbox()];
    b.subscribe(`${p}.o.x`, inboxes[0]!.handler);
    b.subscribe(`${p}.o.*`, inboxes[1]!.handler);
    b.subscribe(`${p}.>`, inboxes[2]!.handler);
    await b.flush();
    a.publish(`${p}.o.x`, bytes(1));
    a.publish(`${p}.o.x`, bytes(2));
    for (const inbox of inboxes) {
      const got = await inbox.receive(2, `two messages on each subscription`);
      assert.deepEqual(got.map((m) => [...m.data]), [[1], [2]]);
    }
    await settle(a, b);
    assert.deepEqual(inboxes.map((inbox) => inbox.messages.length), [2, 2, 2]);
    inboxes[0]!.messages[0]!.data[0] = 99;
    assert.equal(inboxes[1]!.messages[0]!.data[0], 1, "two subscriptions share one buffer");
    assert.equal(inboxes[2]!.messages[0]!.data[0], 1, "two subscriptions share one buffer");
  });

  test("delivers in publish order per publisher", async ({ a, b }, t) => {
    const count = 10_000;
    await t.step(`${count} messages on two subjects to another connection`, async () => {
      const p = prefix();
      const inbox = new Inbox();
      b.subscribe(`${p}.ord.*`, inbox.handler);
      await b.flush();
      for (let i = 0; i < count; i++) a.publish(i % 2 ? `${p}.ord.x` : `${p}.ord.y`, u32(i));
      const got = await inbox.receive(count, `${count} messages`);
      assertSequence(got.map((m) => readU32(m.data)), count);
    });
    await t.step(`${count} messages to the publishing connection`, async () => {
      const p = prefix();
      const inbox = new Inbox();
      a.subscribe(`${p}.self`, inbox.handler);
      await a.flush();
      for (let i = 0; i < count; i++) a.publish(`${p}.self`, u32(i));
      const got = await inbox.receive(count, `${count} messages`);
      assertSequence(got.map((m) => readU32(m.data)), count);
    });
    await t.step("two interleaved publishers, each in order", async () => {
      const p = prefix();
      const inbox = new Inbox();
      b.subscribe(`${p}.two`, inbox.handler);
      await b.flush();
      const half = count / 2;
      for (let i = 0; i < half; i++) {
        a.publish(`${p}.two`, u32(i));
        b.publish(`${p}.two`, u32(half + i));
      }
      const got = (await inbox.receive(count, `${count} messages`)).map((m) => readU32(m.data));
      assertSequence(got.filter((i) => i < half), half);
      assertSequence(got.filter((i) => i >= half).map((i) => i - half), half);
    });
  });

  test("delivers across connections", async ({ a, b }, t) => {
    for (const [from, to, label] of [[a, b, "a to b"], [b, a, "b to a"]] as const) {
      await t.step(label, async () => {
        const p = prefix();
        const inbox = new Inbox();
        to.subscribe(`${p}.x`, inbox.handler);
        await to.flush();
        from.publish(`${p}.x`, bytes(7, 8, 9));
        const [message] = await inbox.receive(1, "one message");
        assert.equal(message!.subject, `${p}.x`);
        assert.deepEqual([...message!.data], [7, 8, 9]);
        assert.equal(message!.reply, undefined);
      });
    }
    await t.step("with a reply subject given to publish", async () => {
      const p = prefix();
      const inbox = new Inbox();
      b.subscribe(`${p}.r`, inbox.handler);
      await b.flush();
      a.publish(`${p}.r`, bytes(), { reply: `${p}.answer.here` });
      const [message] = await inbox.receive(1, "one message");
      assert.equal(message!.reply, `${p}.answer.here`);
    });
  });

  test("answers a request with the first reply", async ({ a, b }, t) => {
    await t.step("from one responder", async () => {
      const p = prefix();
      const requests: TransportMessage[] = [];
      b.subscribe(`${p}.echo`, (message) => {
        requests.push(message);
        b.publish(message.reply!, message.data.slice().reverse());
      });
      await b.flush();
      const reply = await a.request(`${p}.echo`, bytes(1, 2, 3), { timeoutMs: 2_000 });
      assert.deepEqual([...reply.data], [3, 2, 1]);
      assert.equal(requests.length, 1);
      assert.ok(requests[0]!.reply?.startsWith("_INBOX."), `reply subject ${requests[0]!.reply}`);
      assert.equal(reply.subject, requests[0]!.reply);
    });
    await t.step("from the first of two responders", async () => {
      const p = prefix();
      b.subscribe(`${p}.both`, (message) => b.publish(message.reply!, bytes(1)));
      b.subscribe(`${p}.both`, (message) => b.publish(message.reply!, bytes(1)));
      await b.flush();
      const reply = await a.request(`${p}.both`, bytes(), { timeoutMs: 2_000 });
      assert.deepEqual([...reply.data], [1]);
    });
    await t.step("many concurrent requests, each with its own reply", async () => {
      const p = prefix();
      b.subscribe(
        `${p}.double`,
        (message) => b.publish(message.reply!, bytes(message.data[0]! * 2)),
      );
      await b.flush();
      const replies = await Promise.all(
        Array.from(
          { length: 100 },
          (_, i) => a.request(`${p}.double`, bytes(i), { timeoutMs: 2_000 }),
        ),
      );
      assert.deepEqual(
        replies.map((r) => r.data[0]),
        Array.from({ length: 100 }, (_, i) => (i * 2) % 256),
      );
    });
  });

  test("fails a request with TransportTimeoutError when nobody answers", async ({ a, b }) => {
    const p = prefix();
    const inbox = new Inbox();
    b.subscribe(`${p}.silent`, inbox.handler);
    await b.flush();
    const start = performance.now();
    await assert.rejects(
      a.request(`${p}.silent`, bytes(), { timeoutMs: 50 }),
      TransportTimeoutError,
    );
    const ms = performance.now() - start;
    assert.ok(ms >= 45 && ms < 900, `the timeout of 50 ms came after ${ms.toFixed(0)} ms`);
    assert.equal(inbox.messages.length, 1, "the request was not delivered");
  });

  test("fails a request with NoRespondersError when nothing subscribes", async ({ a }) => {
    const start = performance.now();
    await assert.rejects(
      a.request(`${prefix()}.nobody`, bytes(), { timeoutMs: 2_000 }),
      NoRespondersError,
    );
    const ms = performance.now() - start;
    assert.ok(ms < 1_000, `no-responders waited ${ms.toFixed(0)} ms, as for a timeout`);
  });

  test("stops delivery on unsubscribe", async ({ a, b }, t) => {
    await t.step("later messages are not delivered", async () => {
      const p = prefix();
      const inbox = new Inbox();
      const subscription = b.subscribe(`${p}.u`, inbox.handler);
      assert.equal(subscription.subject, `${p}.u`);
      await b.flush();
      a.publish(`${p}.u`, bytes(1));
      await inbox.receive(1, "the message before unsubscribe");
      subscription.unsubscribe();
      const fence = new Inbox();
      b.subscribe(`${p}.u`, fence.handler);
      await b.flush();
      a.publish(`${p}.u`, bytes(2));
      await fence.receive(1, "the message after unsubscribe");
      await settle(a, b);
      assert.equal(inbox.messages.length, 1);
    });
    await t.step("queued messages are discarded", async () => {
      const p = prefix();
      let calls = 0;
      const subscription = b.subscribe(`${p}.q`, () => {
        calls++;
        subscription.unsubscribe();
      });
      const fence = new Inbox();
      b.subscribe(`${p}.q`, fence.handler);
      await b.flush();
      for (let i = 0; i < 100; i++) a.publish(`${p}.q`, u32(i));
      await fence.receive(100, "100 messages on the other subscription");
      await settle(a, b);
      assert.equal(calls, 1);
    });
    await t.step("unsubscribe is idempotent", () => {
      const subscription = b.subscribe(`${prefix()}.twice`, () => {});
      subscription.unsubscribe();
      subscription.unsubscribe();
      return Promise.resolve();
    });
  });

  test("rejects payloads over maxPayload with PayloadTooLargeError", async ({ a, b }) => {
    const p = prefix();
    assert.ok(Number.isSafeInteger(a.maxPayload) && a.maxPayload > 0, `maxPayload ${a.maxPayload}`);
    const tooLarge = new Uint8Array(a.maxPayload + 1);
    assert.throws(() => a.publish(`${p}.big`, tooLarge), PayloadTooLargeError);
    b.subscribe(`${p}.big`, () => {});
    await b.flush();
    await assert.rejects(
      a.request(`${p}.big`, tooLarge, { timeoutMs: 1_000 }),
      PayloadTooLargeError,
    );
    a.publish(`${p}.big`, new Uint8Array(a.maxPayload)); // exactly the limit is accepted
  });

  test("delivers a payload near maxPayload intact", async ({ a, b }) => {
    const p = prefix();
    const payload = pseudoRandomBytes(a.maxPayload - 1_024);
    const expected = payload.slice();
    const inbox = new Inbox();
    b.subscribe(`${p}.large`, inbox.handler);
    await b.flush();
    a.publish(`${p}.large`, payload);
    const [message] = await inbox.receive(1, "the large message");
    assert.equal(message!.data.byteLength, expected.byteLength);
    assert.ok(equalBytes(message!.data, expected), "the large payload changed on the way");
  });

  test("rejects invalid subjects with InvalidSubjectError", async ({ a }, t) => {
    const p = prefix();
    const malformed = ["", `${p}..x`, `.${p}`, `${p}.`, `${p}.a b`, `${p}.a\tb`, `${p}.a\nb`];
    await t.step("publish: malformed or with wildcards", () => {
      for (const subject of [...malformed, `${p}.*`, `${p}.>`, `${p}.*.x`]) {
        assert.throws(
          () => a.publish(subject, bytes()),
          InvalidSubjectError,
          JSON.stringify(subject),
        );
      }
      return Promise.resolve();
    });
    await t.step("publish: a malformed or wildcard reply subject", () => {
      for (const reply of ["", `${p}..r`, `${p}.*`, `${p}.>`]) {
        assert.throws(
          () => a.publish(`${p}.x`, bytes(), { reply }),
          InvalidSubjectError,
          JSON.stringify(reply),
        );
      }
      return Promise.resolve();
    });
    await t.step("subscribe: malformed, or > before the last token", () => {
      for (const subject of [...malformed, `${p}.>.x`, `>.${p}`]) {
        assert.throws(
          () => a.subscribe(subject, () => {}),
          InvalidSubjectError,
          JSON.stringify(subject),
        );
      }
      return Promise.resolve();
    });
    await t.step("subscribe: wildcards as whole tokens are valid", () => {
      for (const subject of [`${p}.*`, `${p}.>`, `${p}.*.x.>`, `*.${p}`]) {
        a.subscribe(subject, () => {}).unsubscribe();
      }
      return Promise.resolve();
    });
    await t.step("request: malformed or with wildcards", async () => {
      for (const subject of ["", `${p}..x`, `${p}.*`, `${p}.>`]) {
        await assert.rejects(
          a.request(subject, bytes(), { timeoutMs: 1_000 }),
          InvalidSubjectError,
        );
      }
    });
  });

  test("refuses every call after close with TransportClosedError", async ({ a, b }, t) => {
    await t.step("a pending request fails when its connection closes", async () => {
      const p = prefix();
      b.subscribe(`${p}.pending`, () => {});
      await b.flush();
      const pending = a.request(`${p}.pending`, bytes(), { timeoutMs: 5_000 });
      await delay(5);
      await a.close();
      await assert.rejects(pending, TransportClosedError);
    });
    await t.step("close is idempotent", async () => {
      await a.close();
      await a.close();
    });
    await t.step("publish, subscribe, request and flush throw", async () => {
      const p = prefix();
      assert.throws(() => a.publish(`${p}.x`, bytes()), TransportClosedError);
      assert.throws(() => a.subscribe(`${p}.x`, () => {}), TransportClosedError);
      await assert.rejects(a.request(`${p}.x`, bytes(), { timeoutMs: 100 }), TransportClosedError);
      await assert.rejects(a.flush(), TransportClosedError);
    });
    await t.step("the other connection still works", async () => {
      const p = prefix();
      const inbox = new Inbox();
      b.subscribe(`${p}.alive`, inbox.handler);
      await b.flush();
      b.publish(`${p}.alive`, bytes(1));
      await inbox.receive(1, "a message on the open connection");
    });
  });

  test("stops the subscriptions of a closed connection", async ({ a, b }) => {
    const p = prefix();
    const closed = new Inbox();
    a.subscribe(`${p}.gone`, closed.handler);
    await a.flush();
    const fence = new Inbox();
    b.subscribe(`${p}.gone`, fence.handler);
    await b.flush();
    await a.close();
    b.publish(`${p}.gone`, bytes(1));
    await fence.receive(1, "the message on the open connection");
    await settle(b);
    assert.equal(closed.messages.length, 0);
  });

  test("never calls a handler inside publish", async ({ a, b }, t) => {
    for (
      const [subscriber, label] of [[a, "on the publishing connection"], [
        b,
        "on another connection",
      ]] as const
    ) {
      await t.step(label, async () => {
        const p = prefix();
        let publishing = false;
        const seen: boolean[] = [];
        const inbox = new Inbox();
        subscriber.subscribe(`${p}.sync`, (message) => {
          seen.push(publishing);
          inbox.handler(message);
        });
        await subscriber.flush();
        publishing = true;
        for (let i = 0; i < 10; i++) a.publish(`${p}.sync`, bytes(i));
        const during = seen.length;
        publishing = false;
        assert.equal(during, 0, "a handler ran inside publish");
        await inbox.receive(10, "10 messages");
        assert.deepEqual(seen, new Array(10).fill(false));
      });
    }
    await t.step("nor re-enters a handler that publishes to its own subject", async () => {
      const p = prefix();
      let depth = 0;
      let maxDepth = 0;
      const inbox = new Inbox();
      b.subscribe(`${p}.loop`, (message) => {
        depth++;
        maxDepth = Math.max(maxDepth, depth);
        const n = message.data[0]!;
        if (n < 20) b.publish(`${p}.loop`, bytes(n + 1));
        inbox.handler(message);
        depth--;
      });
      await b.flush();
      a.publish(`${p}.loop`, bytes(0));
      const got = await inbox.receive(21, "a chain of 21 messages");
      assert.deepEqual(got.map((m) => m.data[0]), Array.from({ length: 21 }, (_, i) => i));
      assert.equal(maxDepth, 1);
    });
  });

  test("resolves flush", async ({ a, b }) => {
    const p = prefix();
    for (let i = 0; i < 100; i++) a.publish(`${p}.f`, u32(i));
    await deadline(a.flush(), 1_000, "a.flush()");
    await deadline(b.flush(), 1_000, "b.flush() with nothing published");
  });
}

/** Collects the messages of a subscription and waits for a count of them. */
class Inbox {
  readonly messages: TransportMessage[] = [];
  #want = 0;
  #wake: (() => void) | undefined = undefined;

  readonly handler = (message: TransportMessage): void => {
    this.messages.push(message);
    if (this.#wake !== undefined && this.messages.length >= this.#want) {
      const wake = this.#wake;
      this.#wake = undefined;
      wake();
    }
  };

  async receive(count: number, what: string): Promise<TransportMessage[]> {
    if (this.messages.length < count) {
      const arrived = new Promise<void>((resolve) => {
        this.#want = count;
        this.#wake = resolve;
      });
      await deadline(arrived, 2_000, `receiving ${what}`);
    }
    return this.messages;
  }
}

/** A random first token, so runs sharing a NATS server do not interfere. */
function prefix(): string {
  return `weirtest_${crypto.randomUUID().slice(0, 8)}`;
}

/** Waits for stray deliveries: a flush of each connection, then ~20 ms. */
async function settle(...transports: Transport[]): Promise<void> {
  for (const transport of transports) await transport.flush();
  await delay(20);
}

function bytes(...values: number[]): Uint8Array {
  return new Uint8Array(values);
}

function u32(value: number): Uint8Array {
  const data = new Uint8Array(4);
  new DataView(data.buffer).setUint32(0, value);
  return data;
}

function readU32(data: Uint8Array): number {
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(0);
}

function assertSequence(values: number[], count: number): void {
  assert.equal(values.length, count);
  const wrong = values.findIndex((value, i) => value !== i);
  assert.equal(wrong, -1, `message ${wrong} out of order: got ${values[wrong]}`);
}

function pseudoRandomBytes(length: number): Uint8Array {
  const data = new Uint8Array(length);
  let x = 0x9e3779b9;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data[i] = x & 0xff;
  }
  return data;
}

function equalBytes(left: Uint8Array, right: Uint8Array): boolean {
  if (left.byteLength !== right.byteLength) return false;
  for (let i = 0; i < left.byteLength; i++) if (left[i] !== right[i]) return false;
  return true;
}
