import assert from "node:assert/strict";
import { NatsSource, NatsSourceOverflowError } from "./source.ts";
import { connectNats } from "../../runtime/actor/nats_connect.ts";
import type { NatsConnection } from "../../runtime/actor/nats_deps.ts";
import type { ReaderOutput, SourceReader, SourceReaderContext } from "../../runtime/api/source.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { waitUntil } from "../../tests/_wait.ts";

const connection = { servers: "nats://127.0.0.1:4222" };
const encoder = new TextEncoder();

function uniqueSubject(): string {
  return `weir-test.nats-source.${crypto.randomUUID()}`;
}

function readerContext(): SourceReaderContext {
  return {
    subtaskIndex: 0,
    parallelism: 1,
    attempt: 0,
    operatorName: "nats-test",
    currentProcessingTime: () => 0,
    clock: new ManualClock(),
  };
}

/**
 * A reader output that gathers records into `records`. The runtime passes
 * one output to every `pollNext` of a reader (which keeps its split
 * outputs), so a test does too.
 */
function gathering<T>(): { records: T[]; output: ReaderOutput<T> } {
  const records: T[] = [];
  const split = {
    collect: (r: T) => void records.push(r),
    emitWatermark() {},
    markIdle() {},
    markActive() {},
  };
  return {
    records,
    output: {
      ...split,
      output() {},
      createOutputForSplit: () => split,
      releaseOutputForSplit() {},
    },
  };
}

/**
 * Starts `reader` on its one split and waits until its subscription gets
 * messages: core NATS delivers only to subscriptions the server knows, so
 * the test publishes probes until one arrives, and drains them.
 */
async function subscribed<T>(
  reader: SourceReader<T, { splitId: string; emitted: number }>,
  source: NatsSource<T>,
  publisher: NatsConnection,
  subject: string,
  probe: Uint8Array,
  into: { records: T[]; output: ReaderOutput<T> },
): Promise<void> {
  await reader.start?.();
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const seen = into.records;
  await waitUntil(() => {
    publisher.publish(subject, probe);
    reader.pollNext(into.output);
    return seen.length > 0;
  }, { timeoutMs: 10_000, missing: () => `no probe reached the reader on ${subject}` });
  // Drain the probes still in flight: a marker after them ends the drain.
  const marker = new TextDecoder().decode(probe) + "-end";
  publisher.publish(subject, encoder.encode(marker));
  await waitUntil(() => {
    reader.pollNext(into.output);
    return seen.some((r) => r === (marker as unknown as T));
  }, { timeoutMs: 10_000, missing: () => "the drain marker did not arrive" });
  seen.length = 0;
}

Deno.test("NatsSource refuses an empty subject, bad options and parallelism without a queue group", () => {
  assert.throws(
    () => new NatsSource({ connection, subject: " " }),
    /'subject' must be a non-empty string: current value is " "/,
  );
  assert.throws(
    () => new NatsSource({ connection, subject: "a", maxBufferedMessages: 0 }),
    /'maxBufferedMessages' must be a positive integer: current value is 0/,
  );
  assert.throws(
    () => new NatsSource({ connection, subject: "a", overflow: "block" as "fail" }),
    /'overflow' must be "fail" or "drop": current value is "block"/,
  );
  assert.throws(
    () => new NatsSource({ connection, subject: "a", maxMessages: -1 }),
    /'maxMessages' must be a positive integer: current value is -1/,
  );
  const plain = new NatsSource({ connection, subject: "a.b" });
  assert.equal(plain.boundedness, "continuous-unbounded");
  assert.throws(
    () => plain.enumerateSplits({ parallelism: 2 }),
    /at parallelism 2 needs a 'queueGroup'/,
  );
  const grouped = new NatsSource({ connection, subject: "a.b", queueGroup: "g", maxMessages: 5 });
  assert.equal(grouped.boundedness, "bounded");
  assert.deepEqual(grouped.enumerateSplits({ parallelism: 2 }), [
    { splitId: "nats-a.b-0", emitted: 0 },
    { splitId: "nats-a.b-1", emitted: 0 },
  ]);
});

Deno.test("NatsSource reads every message published after it subscribed, in order, as UTF-8 strings", async () => {
  const subject = uniqueSubject();
  const publisher = await connectNats(connection);
  const source = new NatsSource({ connection, subject });
  const reader = source.createReader(readerContext());
  try {
    const g = gathering<string>();
    await subscribed(reader, source, publisher, subject, encoder.encode("probe"), g);
    const sent = Array.from({ length: 2500 }, (_, i) => `line ${i} ✓`);
    for (const line of sent) publisher.publish(subject, encoder.encode(line));
    await publisher.flush();
    const got = g.records;
    await waitUntil(async () => {
      await reader.isAvailable?.();
      reader.pollNext(g.output);
      return got.length >= sent.length;
    }, { timeoutMs: 10_000, missing: () => `${got.length} of ${sent.length} messages read` });
    assert.deepEqual(got, sent);
    assert.deepEqual(reader.snapshotState(1), [{
      splitId: `nats-${subject}-0`,
      emitted: reader.snapshotState(1)[0]!.emitted,
    }]);
    assert.ok(reader.snapshotState(1)[0]!.emitted >= sent.length + 2);
  } finally {
    await reader.close?.();
    await publisher.close();
  }
});

Deno.test("NatsSource with maxMessages ends its subtask after that many messages", async () => {
  const subject = uniqueSubject();
  const publisher = await connectNats(connection);
  const source = new NatsSource({ connection, subject, maxMessages: 5 });
  const reader = source.createReader(readerContext());
  try {
    await reader.start?.();
    reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
    const g = gathering<string>();
    const got = g.records;
    let status = "";
    let i = 0;
    await waitUntil(() => {
      publisher.publish(subject, encoder.encode(`m${i++}`));
      status = reader.pollNext(g.output) as string;
      return status === "END_OF_INPUT";
    }, { timeoutMs: 10_000, missing: () => `${got.length} messages read, last status ${status}` });
    assert.equal(got.length, 5);
  } finally {
    await reader.close?.();
    await publisher.close();
  }
});

Deno.test("NatsSource fails naming the subject when the deserializer throws", async () => {
  const subject = uniqueSubject();
  const publisher = await connectNats(connection);
  const source = new NatsSource<number | string>({
    connection,
    subject,
    deserializer: (data) => {
      const text = new TextDecoder().decode(data);
      if (text.startsWith("probe")) return text;
      const n = Number(text);
      if (!Number.isInteger(n)) throw new Error(`not an integer: ${text}`);
      return n;
    },
  });
  const reader = source.createReader(readerContext());
  try {
    const g = gathering<number | string>();
    await subscribed(reader, source, publisher, subject, encoder.encode("probe"), g);
    publisher.publish(subject, encoder.encode("x7"));
    await publisher.flush();
    const error = await (async () => {
      for (;;) {
        await reader.isAvailable?.();
        try {
          reader.pollNext(g.output);
        } catch (e) {
          return e as Error;
        }
      }
    })();
    assert.match(error.message, new RegExp(`cannot deserialize a message of subject ${subject}`));
    assert.match(error.message, /\(2 bytes, starting "x7"\): not an integer: x7/);
  } finally {
    await reader.close?.();
    await publisher.close();
  }
});

Deno.test("NatsSource with overflow fail fails when more messages arrive than it may queue", async () => {
  const subject = uniqueSubject();
  const publisher = await connectNats(connection);
  const source = new NatsSource({ connection, subject, maxBufferedMessages: 3 });
  const reader = source.createReader(readerContext());
  try {
    const g = gathering<string>();
    await subscribed(reader, source, publisher, subject, encoder.encode("probe"), g);
    // A burst: the client hands many messages of one network read to the
    // subscription at once, more than the 3 the reader may queue.
    for (let i = 0; i < 1000; i++) publisher.publish(subject, encoder.encode(`m${i}`));
    await publisher.flush();
    let failure: unknown;
    const got = g.records;
    await waitUntil(async () => {
      await reader.isAvailable?.();
      try {
        reader.pollNext(g.output);
      } catch (e) {
        failure = e;
      }
      return failure !== undefined;
    }, { timeoutMs: 10_000, missing: () => `no overflow after reading ${got.length} messages` });
    assert.ok(failure instanceof NatsSourceOverflowError, String(failure));
    assert.match(
      (failure as Error).message,
      new RegExp(`subject ${subject}.*3 messages are queued \\(maxBufferedMessages\\)`),
    );
  } finally {
    await reader.close?.();
    await publisher.close();
  }
});
