import assert from "node:assert/strict";
import type { SourceReader } from "../../runtime/api/source.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";
import { deadline } from "../../runtime/actor/async.ts";
import {
  JETSTREAM_DEAD_LETTER,
  type JetStreamDeadLetter,
  JetStreamDeserializationError,
  JetStreamSource,
  type JetStreamSourceOptions,
  type JetStreamSplit,
} from "./source.ts";
import {
  CONNECTION,
  HandDrivenTransactions,
  initContext,
  publishJson,
  startReader,
  type TestJetStream,
  withJetStream,
} from "./_test_kit.ts";

/** A recording reader output that also checks dead letters and sorts them out. */
class Collected<T> extends RecordingReaderOutput<T> {
  get values(): T[] {
    return this.records;
  }
  get deadLetters(): JetStreamDeadLetter[] {
    return this.side.map(([tag, value]) => {
      assert.equal(tag, JETSTREAM_DEAD_LETTER.id);
      return value as JetStreamDeadLetter;
    });
  }
}

function collector<T>(): Collected<T> {
  return new Collected<T>();
}

function source<T = unknown>(
  t: TestJetStream,
  options: Partial<JetStreamSourceOptions<T>> = {},
): JetStreamSource<T> {
  return new JetStreamSource<T>({
    connection: CONNECTION,
    stream: t.stream,
    txnBucket: t.bucket,
    ...options,
  });
}

/** How long {@linkcode pollUntil} waits in all before it fails the test, in ms. */
const POLL_TIMEOUT_MS = 30_000;

/**
 * Polls until `until` holds (or the reader ends), waiting on `isAvailable`
 * in between; fails with a `DeadlineError` saying how many records came
 * when `POLL_TIMEOUT_MS` pass first.
 */
async function pollUntil<T>(
  r: SourceReader<T, JetStreamSplit>,
  out: RecordingReaderOutput<T>,
  until: () => boolean,
): Promise<string> {
  const end = performance.now() + POLL_TIMEOUT_MS;
  for (;;) {
    const status = await r.pollNext(out);
    if (status === "END_OF_INPUT" || until()) return status;
    if (status === "NOTHING_AVAILABLE") {
      await deadline(
        r.isAvailable!(),
        Math.max(0, end - performance.now()),
        `the reader's next records after ${out.records.length} records (polling for ${POLL_TIMEOUT_MS} ms)`,
      );
    }
  }
}

/** Waits for `promise` or `ms`, whichever comes first, leaving no timer behind. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([promise, new Promise((resolve) => timer = setTimeout(resolve, ms))]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a restored reader resumes right after the checkpointed sequence", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1, 2, 3, 4, 5, 6]);
    const src = source<number>(t, { batchSize: 2 });
    const splits = await src.enumerateSplits({ parallelism: 1 });
    const first = await startReader(src, splits);
    const out1 = collector<number>();
    let snapshot: JetStreamSplit[];
    try {
      await pollUntil(first, out1, () => out1.values.length >= 4);
      snapshot = first.snapshotState(1);
    } finally {
      await first.close?.();
    }
    assert.deepEqual(out1.values, [1, 2, 3, 4]);
    assert.deepEqual(snapshot.map((s) => s.offset), [4]);
    await publishJson(t.js, `${t.stream}.a`, [7]);
    const second = await startReader(src, snapshot);
    const out2 = collector<number>();
    try {
      await pollUntil(second, out2, () => out2.values.length >= 3);
    } finally {
      await second.close?.();
    }
    assert.deepEqual(out2.values, [5, 6, 7]);
  });
});

Deno.test("a filter with wildcards gives one split per matching subject, sorted, each reading only its subject", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.c`, ["c1"]);
    await publishJson(t.js, `${t.stream}.a`, ["a1"]);
    await publishJson(t.js, `${t.stream}.b`, ["b1"]);
    await publishJson(t.js, `${t.stream}.a`, ["a2"]);
    await publishJson(t.js, `${t.stream}.x.deep`, ["not matched"]);
    const src = source<string>(t, { filterSubject: `${t.stream}.*`, bounded: true });
    const splits = await src.enumerateSplits({ parallelism: 2 });
    assert.deepEqual(
      splits.map((s) => s.splitId),
      ["a", "b", "c"].map((x) => `${t.stream}:${t.stream}.${x}`),
    );
    assert.ok(splits.every((s) => s.stopAt === 5 && s.offset === 0));
    for (const [split, expected] of [[splits[0]!, ["a1", "a2"]], [splits[2]!, ["c1"]]] as const) {
      const r = await startReader(src, [split]);
      const out = collector<string>();
      try {
        assert.equal(await pollUntil(r, out, () => false), "END_OF_INPUT");
      } finally {
        await r.close?.();
      }
      assert.deepEqual(out.values, expected);
    }
  });
});

Deno.test("each subject split emits through its own split output, released at its bounded end", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, ["a1"]);
    await publishJson(t.js, `${t.stream}.b`, ["b1", "b2"]);
    const src = source<string>(t, { filterSubject: `${t.stream}.*`, bounded: true });
    const splits = await src.enumerateSplits({ parallelism: 1 });
    const [a, b] = splits.map((s) => s.splitId);
    const r = await startReader(src, splits);
    const out = collector<string>();
    try {
      assert.equal(await pollUntil(r, out, () => false), "END_OF_INPUT");
    } finally {
      await r.close?.();
    }
    assert.deepEqual(out.recordsOf(a), ["a1"]);
    assert.deepEqual(out.recordsOf(b), ["b1", "b2"]);
    assert.deepEqual(out.recordsOf(undefined), [], "nothing on the main output");
    const created = out.events.flatMap((e) => e.kind === "created" ? [e.split] : []);
    assert.deepEqual(created, [a, b], "both outputs exist from the first poll on");
    assert.deepEqual(out.openSplits, [], "both released at their end");
  });
});

Deno.test("without a filter, one split reads the whole stream", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1]);
    const splits = await source(t).enumerateSplits({ parallelism: 3 });
    assert.deepEqual(splits, [{
      splitId: t.stream,
      stream: t.stream,
      subject: null,
      offset: 0,
      stopAt: null,
    }]);
  });
});

Deno.test("start positions resolve to offsets when the splits are enumerated", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1, 2, 3]);
    const offset = async (startPosition: JetStreamSourceOptions<unknown>["startPosition"]) =>
      (await source(t, startPosition === undefined ? {} : { startPosition }).enumerateSplits({
        parallelism: 1,
      }))[0]!.offset;
    assert.equal(await offset(undefined), 0);
    assert.equal(await offset("earliest"), 0);
    assert.equal(await offset("latest"), 3);
    assert.equal(await offset({ sequence: 2 }), 1);
    assert.equal(await offset({ time: 0 }), 0);
    assert.equal(await offset({ time: Date.now() + 60_000 }), 3);
  });
});

Deno.test("a malformed message fails the reader with an error naming stream, subject and sequence", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1]);
    await t.js.publish(`${t.stream}.a`, new TextEncoder().encode("{oops"));
    const src = source<number>(t);
    const r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }));
    const out = collector<number>();
    try {
      await assert.rejects(
        pollUntil(r, out, () => false),
        (e: Error) =>
          e instanceof JetStreamDeserializationError && e.seq === 2 &&
          e.message.includes(`sequence 2 of stream ${t.stream} (subject ${t.stream}.a)`) &&
          e.message.includes('"{oops"'),
      );
    } finally {
      await r.close?.();
    }
    assert.deepEqual(out.values, [1]);
  });
});

Deno.test("with onMalformed dead-letter, a malformed message goes to the side output and reading goes on", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1]);
    await t.js.publish(`${t.stream}.a`, new TextEncoder().encode("{oops"));
    await publishJson(t.js, `${t.stream}.a`, [3]);
    const src = source<number>(t, { onMalformed: "dead-letter", bounded: true });
    const r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }));
    const out = collector<number>();
    try {
      assert.equal(await pollUntil(r, out, () => false), "END_OF_INPUT");
      assert.deepEqual(r.snapshotState(1).map((s) => s.offset), [3]);
    } finally {
      await r.close?.();
    }
    assert.deepEqual(out.values, [1, 3]);
    assert.equal(out.deadLetters.length, 1);
    const dead = out.deadLetters[0]!;
    assert.equal(dead.seq, 2);
    assert.equal(dead.stream, t.stream);
    assert.equal(dead.subject, `${t.stream}.a`);
    assert.equal(new TextDecoder().decode(dead.data), "{oops");
    assert.match(dead.error, /JSON/);
  });
});

Deno.test("the source reads committed by default: it waits for an open transaction and skips an aborted one", async () => {
  await withJetStream(async (t) => {
    const sink = await HandDrivenTransactions.open(t, `${t.stream}.out`);
    const ctx = initContext(0, 1);
    const src = source<number>(t);
    let r: SourceReader<number, JetStreamSplit> | undefined;
    try {
      const aborted = await sink.beginTransaction(ctx);
      await sink.invoke(aborted, 1, { timestamp: undefined });
      await sink.preCommit(aborted);
      const committed = await sink.beginTransaction(ctx);
      await sink.invoke(committed, 2, { timestamp: undefined });
      await sink.preCommit(committed);
      await publishJson(t.js, `${t.stream}.plain`, [3]);
      r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }));
      const out = collector<number>();
      // Everything waits behind the first, still open, transaction. (Waiting cannot make a
      // correct reader fail this; it gives a wrong one time to emit.)
      await sink.commit(committed);
      for (let i = 0; i < 3; i++) {
        await within(r.isAvailable!(), 100);
        assert.equal(r.pollNext(out), "NOTHING_AVAILABLE");
      }
      assert.deepEqual(out.values, []);
      assert.deepEqual(r.snapshotState(1).map((s) => s.offset), [0]);
      await sink.abort(aborted);
      await pollUntil(r, out, () => out.values.length >= 2);
      assert.deepEqual(out.values, [2, 3]);
      assert.deepEqual(r.snapshotState(2).map((s) => s.offset), [3]);
    } finally {
      await r?.close?.();
      await sink.close();
    }
  });
});

Deno.test("a bounded source ends at the stream's last sequence at enumeration", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1, 2]);
    const src = source<number>(t, { bounded: true });
    const splits = await src.enumerateSplits({ parallelism: 1 });
    await publishJson(t.js, `${t.stream}.a`, [3]);
    const r = await startReader(src, splits);
    const out = collector<number>();
    try {
      assert.equal(await pollUntil(r, out, () => false), "END_OF_INPUT");
    } finally {
      await r.close?.();
    }
    assert.deepEqual(out.values, [1, 2]);
  });
});

Deno.test("records carry the stream's timestamp, or the extractor's", async () => {
  await withJetStream(async (t) => {
    const before = Date.now();
    await publishJson(t.js, `${t.stream}.a`, [{ at: 42 }]);
    for (const extract of [false, true]) {
      const src = source<{ at: number }>(t, {
        bounded: true,
        ...(extract ? { timestamp: (v: { at: number }) => v.at } : {}),
      });
      const r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }));
      const out = collector<{ at: number }>();
      try {
        await pollUntil(r, out, () => false);
      } finally {
        await r.close?.();
      }
      const ts = out.timestamps[0]!;
      if (extract) assert.equal(ts, 42);
      else assert.ok(ts >= before - 1000 && ts <= Date.now() + 1000, `timestamp ${ts}`);
    }
  });
});

Deno.test("a source refuses bad options, naming the stream and the value", () => {
  const base = { connection: CONNECTION, stream: "s" };
  assert.throws(() => new JetStreamSource({ ...base, stream: "" }), TypeError);
  assert.throws(
    () => new JetStreamSource({ ...base, onMalformed: "drop" as "fail" }),
    /'onMalformed' must be .*"drop"/,
  );
  assert.throws(() => new JetStreamSource({ ...base, batchSize: 0 }), RangeError);
  assert.throws(() => new JetStreamSource({ ...base, startPosition: { sequence: 0 } }), RangeError);
});
