import assert from "node:assert/strict";
import { decode, encode } from "../../runtime/actor/codec.ts";
import type { SourceReaderContext } from "../../runtime/api/source.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { SequenceSource, type SequenceSplit } from "./sequence_source.ts";

function context(
  options: {
    subtaskIndex?: number;
    parallelism?: number;
    clock?: ManualClock;
  } = {},
): SourceReaderContext {
  const clock = options.clock ?? new ManualClock();
  const ctx = {
    subtaskIndex: options.subtaskIndex ?? 0,
    parallelism: options.parallelism ?? 1,
    attempt: 0,
    operatorName: "numbers",
    currentProcessingTime: () => clock.now(),
    clock,
  };
  return ctx;
}

function collector(): RecordingReaderOutput<number> {
  return new RecordingReaderOutput<number>();
}

Deno.test("SequenceSource cuts the range into interleaved splits", () => {
  const source = new SequenceSource(1, 10);
  const splits = source.enumerateSplits({ parallelism: 3 });
  assert.deepEqual(splits, [
    { splitId: "sequence-0", next: 1, step: 3, to: 10 },
    { splitId: "sequence-1", next: 2, step: 3, to: 10 },
    { splitId: "sequence-2", next: 3, step: 3, to: 10 },
  ]);
  assert.equal(source.boundedness, "bounded");
  const perSubtask = splits.map((split, i) => {
    const reader = source.createReader(context({ subtaskIndex: i, parallelism: 3 }));
    reader.addSplits([split]);
    const out = collector();
    while (reader.pollNext(out) !== "END_OF_INPUT");
    return out.records;
  });
  assert.deepEqual(perSubtask, [[1, 4, 7, 10], [2, 5, 8], [3, 6, 9]]);
});

Deno.test("SequenceSource with a single number and more subtasks leaves some splits empty", () => {
  const source = new SequenceSource(7, 7);
  const outputs = source.enumerateSplits({ parallelism: 2 }).map((split) => {
    const reader = source.createReader(context({ parallelism: 2 }));
    reader.addSplits([split]);
    const out = collector();
    while (reader.pollNext(out) !== "END_OF_INPUT");
    return out.records;
  });
  assert.deepEqual(outputs, [[7], []]);
});

Deno.test("SequenceSource to Infinity is unbounded and emits batches", () => {
  const source = new SequenceSource(0, Number.POSITIVE_INFINITY, { batchSize: 5 });
  assert.equal(source.boundedness, "continuous-unbounded");
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector();
  for (let i = 0; i < 3; i++) assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.deepEqual(out.records, Array.from({ length: 15 }, (_, i) => i));
});

Deno.test("SequenceSource resumes after the checkpointed number", () => {
  const source = new SequenceSource(1, Number.POSITIVE_INFINITY, { batchSize: 5 });
  const first = source.createReader(context());
  first.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const before = collector();
  first.pollNext(before);
  const snapshot = decode(encode(first.snapshotState(1))) as SequenceSplit[];
  assert.deepEqual(snapshot, [
    { splitId: "sequence-0", next: 6, step: 1, to: Number.POSITIVE_INFINITY },
  ]);
  first.pollNext(before); // lost with the failure

  const restored = source.createReader(context({}));
  restored.addSplits(snapshot);
  const after = collector();
  restored.pollNext(after);
  assert.deepEqual(after.records, [6, 7, 8, 9, 10]);
});

Deno.test("SequenceSource emits each split through its own output, created at the first poll and released after its last number", () => {
  const source = new SequenceSource(1, 7, { batchSize: 2 });
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 2 }));
  const out = collector();
  reader.pollNext(out);
  assert.deepEqual(out.openSplits, ["sequence-0", "sequence-1"], "both count before their records");
  while (reader.pollNext(out) !== "END_OF_INPUT");
  assert.deepEqual(out.recordsOf("sequence-0"), [1, 3, 5, 7]);
  assert.deepEqual(out.recordsOf("sequence-1"), [2, 4, 6]);
  assert.deepEqual(out.openSplits, []);
  const lastOf = (split: string) =>
    out.events.findLastIndex((e) => "split" in e && e.split === split);
  assert.equal(out.events[lastOf("sequence-1")]?.kind, "released");
  assert.equal(
    out.events[lastOf("sequence-1") - 1]?.kind,
    "record",
    "released after its last record",
  );
});

Deno.test("SequenceSource takes turns between the splits of one reader", () => {
  const source = new SequenceSource(1, Number.POSITIVE_INFINITY, { batchSize: 7 });
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 3 }));
  const out = collector();
  reader.pollNext(out);
  assert.deepEqual(out.records, [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(reader.snapshotState(1).map((s) => s.next), [10, 8, 9]);
});

Deno.test("SequenceSource rate limit returns NOTHING_AVAILABLE until processing time allows", () => {
  const clock = new ManualClock(1_000);
  const source = new SequenceSource(1, 100, { recordsPerSecond: 20 });
  // Parallelism 2: this reader gets 10 records per second, one every 100 ms.
  const reader = source.createReader(context({ parallelism: 2, clock }));
  reader.addSplits(source.enumerateSplits({ parallelism: 2 }).slice(0, 1));
  const out = collector();
  assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  clock.advance(99);
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  clock.advance(1);
  assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.deepEqual(out.records, [1, 3]);
  // A stall does not turn into a burst beyond 100 ms worth of records (here one).
  clock.advance(5_000);
  reader.pollNext(out);
  reader.pollNext(out);
  assert.deepEqual(out.records, [1, 3, 5]);
});

Deno.test("SequenceSource rate is the total over all subtasks", () => {
  const clock = new ManualClock();
  const source = new SequenceSource(1, Number.POSITIVE_INFINITY, { recordsPerSecond: 1_000 });
  const splits = source.enumerateSplits({ parallelism: 4 });
  const readers = splits.map((split, i) => {
    const reader = source.createReader(context({ subtaskIndex: i, parallelism: 4, clock }));
    reader.addSplits([split]);
    return reader;
  });
  const out = collector();
  for (let t = 0; t <= 2_000; t += 10) {
    for (const reader of readers) while (reader.pollNext(out) === "MORE_AVAILABLE");
    if (t < 2_000) clock.advance(10);
  }
  // 2 s at 1000/s, plus at most each reader's initial token.
  assert.ok(out.records.length >= 2_000 && out.records.length <= 2_004, `${out.records.length}`);
});

Deno.test("SequenceSource isAvailable wakes on the context clock when the rate allows", async () => {
  const clock = new ManualClock();
  const source = new SequenceSource(1, 10, { recordsPerSecond: 4 });
  const reader = source.createReader(context({ clock }));
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector();
  reader.pollNext(out);
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  let woke = false;
  const available = reader.isAvailable!().then(() => woke = true);
  assert.equal(clock.pending(), 1);
  clock.advance(249);
  await Promise.resolve();
  assert.equal(woke, false);
  clock.advance(1);
  await available;
  assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.deepEqual(out.records, [1, 2]);
});

Deno.test("SequenceSource close ends a pending wait", async () => {
  const source = new SequenceSource(1, 10, { recordsPerSecond: 1 });
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  reader.pollNext(collector());
  const available = reader.isAvailable!();
  assert.equal(reader.isAvailable!(), available, "one wait at a time");
  await reader.close!();
  await available; // a leaked timer would fail the test's sanitizer
});

Deno.test("SequenceSource refuses invalid bounds and options", () => {
  assert.throws(
    () => new SequenceSource(1.5, 3),
    /'from' must be a safe integer: current value is 1.5/,
  );
  assert.throws(() => new SequenceSource(5, 4), /'to' must be Infinity or a safe integer >= from/);
  assert.throws(() => new SequenceSource(0, 1, { recordsPerSecond: 0 }), /recordsPerSecond/);
  assert.throws(() => new SequenceSource(0, 1, { batchSize: 0 }), /batchSize/);
  assert.throws(() => new SequenceSource(0, 1).enumerateSplits({ parallelism: 0 }), RangeError);
});

Deno.test("SequenceSource fails loudly past the largest safe integer", () => {
  const source = new SequenceSource(Number.MAX_SAFE_INTEGER - 1, Number.POSITIVE_INFINITY);
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector();
  assert.throws(() => reader.pollNext(out), /ran past Number.MAX_SAFE_INTEGER/);
  assert.deepEqual(out.records, [Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER]);
});
