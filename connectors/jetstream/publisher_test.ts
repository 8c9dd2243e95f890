import assert from "node:assert/strict";
import { headers, type Msg } from "../../runtime/actor/nats_deps.ts";
import { connectNats } from "../../runtime/actor/nats_connect.ts";
import { AsyncPublisher, PublishError } from "./publisher.ts";
import { CONNECTION, uniqueName, withJetStream } from "./_test_kit.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

function msgIdHeaders(id: string) {
  const h = headers();
  h.set("Nats-Msg-Id", id);
  return h;
}

Deno.test("an async publish resolves with the stream's acknowledgement, and a repeated Nats-Msg-Id is a duplicate", async () => {
  await withJetStream(async (t) => {
    const publisher = new AsyncPublisher(t.nc);
    try {
      const acks = await Promise.all(
        ["a", "b", "a"].map((id) =>
          publisher.publish(`${t.stream}.x`, bytes(id), msgIdHeaders(id))
        ),
      );
      assert.deepEqual(acks, [
        { stream: t.stream, seq: 1, duplicate: false, retried: false },
        { stream: t.stream, seq: 2, duplicate: false, retried: false },
        { stream: t.stream, seq: 1, duplicate: true, retried: false },
      ]);
      assert.equal(publisher.pending, 0);
    } finally {
      publisher.close();
    }
  });
});

Deno.test("a publish to a subject no stream stores is rejected, naming the subject", async () => {
  const nc = await connectNats(CONNECTION);
  const publisher = new AsyncPublisher(nc);
  const subject = uniqueName("weir-test-nowhere");
  try {
    await assert.rejects(
      publisher.publish(subject, bytes("x"), headers()),
      (e: Error) =>
        e instanceof PublishError && e.subject === subject && /no stream stores/.test(e.message),
    );
  } finally {
    publisher.close();
    await nc.close();
  }
});

/** Runs `body` with a core NATS responder on a fresh subject that sees every try and answers via `answer`. */
async function withResponder(
  answer: (msg: Msg, tries: number) => string | undefined,
  body: (subject: string, publisher: AsyncPublisher, seen: Msg[]) => Promise<void>,
): Promise<void> {
  const nc = await connectNats(CONNECTION);
  const subject = uniqueName("weir-test-acks");
  const seen: Msg[] = [];
  const sub = nc.subscribe(subject, {
    callback: (_, msg) => {
      seen.push(msg);
      const reply = answer(msg, seen.length);
      if (reply !== undefined) msg.respond(bytes(reply));
    },
  });
  await nc.flush();
  const publisher = new AsyncPublisher(nc, { ackTimeoutMs: 40, attempts: 2 });
  try {
    await body(subject, publisher, seen);
  } finally {
    publisher.close();
    sub.unsubscribe();
    await nc.close();
  }
}

Deno.test("a lost acknowledgement is retried with the same bytes and headers", async () => {
  await withResponder(
    (_, tries) => tries === 2 ? '{"stream":"s","seq":7}' : undefined,
    async (subject, publisher, seen) => {
      const ack = await publisher.publish(subject, bytes("payload"), msgIdHeaders("t:0"));
      assert.deepEqual(ack, { stream: "s", seq: 7, duplicate: false, retried: true });
      assert.equal(seen.length, 2);
      for (const msg of seen) {
        assert.equal(new TextDecoder().decode(msg.data), "payload");
        assert.equal(msg.headers?.get("Nats-Msg-Id"), "t:0");
      }
      assert.notEqual(seen[0]!.reply, seen[1]!.reply, "each try has its own reply subject");
    },
  );
});

Deno.test("a publish without acknowledgement after every try is rejected", async () => {
  await withResponder(() => undefined, async (subject, publisher, seen) => {
    await assert.rejects(
      publisher.publish(subject, bytes("x"), headers()),
      (e: Error) => e instanceof PublishError && /no acknowledgement after 2 tries/.test(e.message),
    );
    assert.equal(seen.length, 2);
  });
});

Deno.test("a stream's error reply rejects the publish with its description", async () => {
  await withResponder(
    () => '{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}',
    async (subject, publisher) => {
      await assert.rejects(
        publisher.publish(subject, bytes("x"), headers()),
        /the stream refused it: wrong last sequence: 3 \(error 10071\)/,
      );
    },
  );
});

Deno.test("closing the publisher rejects what is pending", async () => {
  await withResponder(() => undefined, async (subject, publisher) => {
    const pending = publisher.publish(subject, bytes("x"), headers());
    publisher.close();
    await assert.rejects(pending, /closed before the acknowledgement/);
    await assert.rejects(publisher.publish(subject, bytes("y"), headers()), /closed/);
  });
});
