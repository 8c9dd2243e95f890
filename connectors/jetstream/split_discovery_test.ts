import assert from "node:assert/strict";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { CONNECTION, publishJson, withJetStream } from "./_test_kit.ts";
import { hasWildcard, JetStreamSubjectDiscoverer, subjectSplits } from "./split_discovery.ts";
import {
  DEFAULT_DISCOVERY_INTERVAL_MS,
  JetStreamSource,
  type JetStreamSplit,
  JetStreamSplitStateError,
} from "./source.ts";

Deno.test("hasWildcard finds only whole '*' and '>' tokens", () => {
  assert.equal(hasWildcard("orders.*"), true);
  assert.equal(hasWildcard("orders.>"), true);
  assert.equal(hasWildcard(">"), true);
  assert.equal(hasWildcard("orders.*.eu"), true);
  assert.equal(hasWildcard("orders.eu"), false);
  assert.equal(hasWildcard("orders.a*b"), false, "a '*' inside a token is a literal character");
});

Deno.test("subjectSplits gives one unbounded split per subject, sorted, from the given offset", () => {
  assert.deepEqual(subjectSplits({ stream: "s", subjects: ["s.b", "s.a"], offset: 0 }), [
    { splitId: "s:s.a", stream: "s", subject: "s.a", offset: 0, stopAt: null },
    { splitId: "s:s.b", stream: "s", subject: "s.b", offset: 0, stopAt: null },
  ]);
});

Deno.test("discovery is on by default only for an unbounded source with a wildcard filter", () => {
  const base = { connection: CONNECTION, stream: "s" };
  const interval = (options: Partial<ConstructorParameters<typeof JetStreamSource>[0]>) =>
    new JetStreamSource({ ...base, ...options }).splitDiscovery.intervalMs;
  assert.equal(interval({ filterSubject: "s.*" }), DEFAULT_DISCOVERY_INTERVAL_MS);
  assert.equal(interval({ filterSubject: "s.*", discoveryIntervalMs: 250 }), 250);
  assert.equal(interval({ filterSubject: "s.*", discoveryIntervalMs: 0 }), 0);
  assert.equal(interval({ filterSubject: "s.*", bounded: true }), 0);
  assert.equal(interval({ filterSubject: "s.a" }), 0);
  assert.equal(interval({}), 0);
  assert.throws(
    () => new JetStreamSource({ ...base, filterSubject: "s.*", discoveryIntervalMs: 1.5 }),
    /'discoveryIntervalMs' must be an integer >= 0 \(ms\): current value is 1\.5/,
  );
  assert.throws(
    () =>
      new JetStreamSource({ ...base, filterSubject: "s.*", bounded: true, discoveryIntervalMs: 5 }),
    /'discoveryIntervalMs' must be 0 for a bounded read \(there is nothing to discover\): current value is 5/,
  );
  assert.throws(
    () => new JetStreamSource({ ...base, filterSubject: "s.a", discoveryIntervalMs: 5 }),
    /'discoveryIntervalMs' must be 0 without a wildcard 'filterSubject'/,
  );
});

Deno.test("the discoverer lists every matching subject as a split from its first message, also subjects that appear later", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.b`, [1, 2]);
    await publishJson(t.js, `${t.stream}.x.deep`, [3]);
    const discoverer = new JetStreamSubjectDiscoverer({
      connection: CONNECTION,
      stream: t.stream,
      filterSubject: `${t.stream}.*`,
    });
    try {
      const ids = async () => (await discoverer.discoverSplits()).map((s) => s.splitId);
      assert.deepEqual(await ids(), [`${t.stream}:${t.stream}.b`]);
      await publishJson(t.js, `${t.stream}.a`, [4]);
      const splits = await discoverer.discoverSplits();
      assert.deepEqual(splits, [
        {
          splitId: `${t.stream}:${t.stream}.a`,
          stream: t.stream,
          subject: `${t.stream}.a`,
          offset: 0,
          stopAt: null,
        },
        {
          splitId: `${t.stream}:${t.stream}.b`,
          stream: t.stream,
          subject: `${t.stream}.b`,
          offset: 0,
          stopAt: null,
        },
      ]);
    } finally {
      await discoverer.close();
    }
    await assert.rejects(() => discoverer.discoverSplits(), /discoverer of stream .* is closed/);
  });
});

Deno.test("the discoverer names the stream and filter when the stream does not exist", async () => {
  const discoverer = new JetStreamSubjectDiscoverer({
    connection: CONNECTION,
    stream: "weir-test-no-such-stream",
    filterSubject: "nothing.*",
  });
  try {
    await assert.rejects(
      () => discoverer.discoverSplits(),
      /Cannot list the subjects of stream weir-test-no-such-stream matching nothing\.\*: /,
    );
  } finally {
    await discoverer.close();
  }
});

Deno.test("with discovery on, a wildcard that matches nothing yet gives no split; with it off, one split of the wildcard", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.x.deep`, [1]);
    const filterSubject = `${t.stream}.*`;
    const on = new JetStreamSource({ connection: CONNECTION, stream: t.stream, filterSubject });
    assert.deepEqual(await on.enumerateSplits({ parallelism: 1 }), []);
    const off = new JetStreamSource({
      connection: CONNECTION,
      stream: t.stream,
      filterSubject,
      discoveryIntervalMs: 0,
    });
    assert.deepEqual((await off.enumerateSplits({ parallelism: 1 })).map((s) => s.splitId), [
      `${t.stream}:${filterSubject}`,
    ]);
  });
});

Deno.test("a restored split of a wildcard is refused with discovery on, and damaged split state names the field", async () => {
  await withJetStream(async (t) => {
    const source = new JetStreamSource<unknown>({
      connection: CONNECTION,
      stream: t.stream,
      filterSubject: `${t.stream}.*`,
    });
    const clock = new ManualClock();
    const reader = source.createReader({
      subtaskIndex: 0,
      parallelism: 1,
      attempt: 0,
      operatorName: "records",
      currentProcessingTime: () => clock.now(),
      clock,
    });
    await reader.start?.();
    try {
      const wildcard: JetStreamSplit = {
        splitId: `${t.stream}:${t.stream}.*`,
        stream: t.stream,
        subject: `${t.stream}.*`,
        offset: 3,
        stopAt: null,
      };
      assert.throws(
        () => reader.addSplits([wildcard]),
        (e: unknown) =>
          e instanceof JetStreamSplitStateError &&
          e.message.includes(
            `split ${JSON.stringify(wildcard.splitId)} of JetStreamSource 'records'`,
          ) &&
          e.message.includes("resume with 'discoveryIntervalMs: 0'"),
      );
      const damaged = {
        ...wildcard,
        subject: `${t.stream}.a`,
        splitId: `${t.stream}:${t.stream}.a`,
        offset: -2,
      };
      assert.throws(
        () => reader.addSplits([damaged]),
        /'offset' must be an integer >= 0: current value is -2/,
      );
    } finally {
      await reader.close?.();
    }
  });
});
