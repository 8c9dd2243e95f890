import assert from "node:assert/strict";
import { decode, encode } from "../../runtime/actor/codec.ts";
import type {
  InputStatus,
  ReaderOutput,
  SourceReader,
  SourceReaderContext,
} from "../../runtime/api/source.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { InducedFailure, TestSource, type TestSplit } from "./test_source.ts";
import { RecordingReaderOutput } from "./reader_output.ts";

function context(
  options: { attempt?: number; clock?: ManualClock; subtaskIndex?: number } = {},
): SourceReaderContext {
  const clock = options.clock ?? new ManualClock();
  const ctx = {
    subtaskIndex: options.subtaskIndex ?? 0,
    parallelism: 1,
    attempt: options.attempt ?? 0,
    operatorName: "scripted",
    currentProcessingTime: () => clock.now(),
    clock,
  };
  return ctx;
}

type Collected<T> = RecordingReaderOutput<T>;

function collector<T>(): Collected<T> {
  return new RecordingReaderOutput<T>();
}

function start<T>(source: TestSource<T>, ctx = context()): SourceReader<T, TestSplit> {
  const reader = source.createReader(ctx);
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  return reader;
}

/** Polls until the status is not MORE_AVAILABLE (at most 1000 times). */
function pollWhileMore<T>(reader: SourceReader<T, TestSplit>, out: ReaderOutput<T>): InputStatus {
  for (let i = 0; i < 1000; i++) {
    const status = reader.pollNext(out) as InputStatus;
    if (status !== "MORE_AVAILABLE") return status;
  }
  throw new Error("the reader never stopped");
}

Deno.test("TestSource emits its items one per poll and ends after the last", () => {
  const reader = start(TestSource.of(["a", "b"]));
  const out = collector<string>();
  assert.deepEqual(
    [reader.pollNext(out), reader.pollNext(out), reader.pollNext(out)],
    ["MORE_AVAILABLE", "MORE_AVAILABLE", "END_OF_INPUT"],
  );
  assert.deepEqual(out.records, ["a", "b"]);
});

Deno.test("TestSource fails only on the given attempt", async (t) => {
  const source = TestSource.of([
    1,
    2,
    TestSource.fail("crash"),
    3,
    TestSource.fail("later", { attempt: 1 }),
    4,
  ]);
  await t.step("attempt 0 meets the first failure", () => {
    const reader = start(source, context({ attempt: 0 }));
    const out = collector<number>();
    assert.throws(() => pollWhileMore(reader, out), (error: unknown) => {
      assert.ok(error instanceof InducedFailure);
      assert.equal(error.name, "InducedFailure");
      assert.equal(
        error.message,
        "crash (TestSource scripted, split test-0, position 2, attempt 0)",
      );
      assert.equal(error.attempt, 0);
      assert.equal(error.splitId, "test-0");
      assert.equal(error.position, 2);
      return true;
    });
    assert.deepEqual(out.records, [1, 2]);
  });
  await t.step("attempt 1 skips it and meets the second", () => {
    const reader = start(source, context({ attempt: 1 }));
    const out = collector<number>();
    assert.throws(() => pollWhileMore(reader, out), /^InducedFailure: later/);
    assert.deepEqual(out.records, [1, 2, 3]);
  });
  await t.step("attempt 2 skips both", () => {
    const reader = start(source, context({ attempt: 2 }));
    const out = collector<number>();
    assert.equal(pollWhileMore(reader, out), "END_OF_INPUT");
    assert.deepEqual(out.records, [1, 2, 3, 4]);
  });
});

Deno.test("TestSource resumes after the checkpointed position", () => {
  const source = TestSource.of([1, 2, 3, TestSource.fail("crash"), 4, 5]);
  const first = start(source, context({ attempt: 0 }));
  const before = collector<number>();
  first.pollNext(before);
  first.pollNext(before);
  const snapshot = decode(encode(first.snapshotState(1))) as TestSplit[];
  assert.deepEqual(snapshot, [{ splitId: "test-0", list: 0, position: 2, fromCheckpoint: true }]);
  assert.throws(() => pollWhileMore(first, before), InducedFailure);

  const restored = source.createReader(context({ attempt: 1 }));
  restored.addSplits(snapshot);
  const after = collector<number>();
  assert.equal(pollWhileMore(restored, after), "END_OF_INPUT");
  assert.deepEqual([...before.records.slice(0, 2), ...after.records], [1, 2, 3, 4, 5]);
});

Deno.test("TestSource holds at awaitCheckpoint until a checkpoint taken there completes", async () => {
  const reader = start(TestSource.of([1, 2, TestSource.awaitCheckpoint(), 3]));
  const out = collector<number>();
  reader.pollNext(out);
  reader.snapshotState(1); // position 1: before the marker
  assert.equal(pollWhileMore(reader, out), "NOTHING_AVAILABLE");
  reader.notifyCheckpointComplete!(1);
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE", "checkpoint 1 does not cover the marker");

  reader.snapshotState(2); // at the marker
  reader.snapshotState(3);
  let released = false;
  const available = reader.isAvailable!().then(() => released = true);
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE", "taken but not completed");
  await Promise.resolve();
  assert.equal(released, false);
  reader.notifyCheckpointComplete!(3); // completing 3 completes 2 as well
  await available;
  assert.equal(pollWhileMore(reader, out), "END_OF_INPUT");
  assert.deepEqual(out.records, [1, 2, 3]);
});

Deno.test("TestSource passes an awaitCheckpoint it was restored at", () => {
  const source = TestSource.of([1, TestSource.awaitCheckpoint(), 2]);
  const first = start(source);
  const out = collector<number>();
  pollWhileMore(first, out);
  const snapshot = first.snapshotState(4);
  assert.deepEqual(snapshot.map((s) => s.position), [1]);

  const restored = source.createReader(context({ attempt: 1 }));
  restored.addSplits(snapshot);
  assert.equal(pollWhileMore(restored, out), "END_OF_INPUT");
  assert.deepEqual(out.records, [1, 2]);
});

Deno.test("TestSource eof ends the split even if items follow", () => {
  for (const bounded of [true, false]) {
    const reader = start(TestSource.of([1, TestSource.eof(), 2], { bounded }));
    const out = collector<number>();
    assert.equal(pollWhileMore(reader, out), "END_OF_INPUT");
    assert.deepEqual(out.records, [1]);
    assert.deepEqual(reader.snapshotState(1), []);
  }
});

Deno.test("TestSource emits timestamped values with their timestamps", () => {
  const reader = start(TestSource.of(["a", TestSource.timestamped("b", 1_000)]));
  const out = collector<string>();
  pollWhileMore(reader, out);
  assert.deepEqual(out.records, ["a", "b"]);
  assert.deepEqual(out.timestamps, [undefined, 1_000]);
});

Deno.test("TestSource pauses for processing time from the context", async () => {
  const clock = new ManualClock(5_000);
  const reader = start(
    TestSource.of([1, TestSource.pause(1_000), 2]),
    context({ clock }),
  );
  const out = collector<number>();
  assert.equal(pollWhileMore(reader, out), "NOTHING_AVAILABLE");
  let woke = false;
  const available = reader.isAvailable!().then(() => woke = true);
  clock.advance(999);
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  await Promise.resolve();
  assert.equal(woke, false);
  clock.advance(1);
  await available;
  assert.equal(pollWhileMore(reader, out), "END_OF_INPUT");
  assert.deepEqual(out.records, [1, 2]);
  assert.equal(clock.pending(), 0);
});

Deno.test("TestSource unbounded stays idle after its last item until closed", async () => {
  const source = TestSource.of([1], { bounded: false });
  assert.equal(source.boundedness, "continuous-unbounded");
  const reader = start(source);
  const out = collector<number>();
  assert.equal(pollWhileMore(reader, out), "NOTHING_AVAILABLE");
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  assert.deepEqual(reader.snapshotState(1), [
    { splitId: "test-0", list: 0, position: 1, fromCheckpoint: true },
  ]);
  let woke = false;
  const available = reader.isAvailable!().then(() => woke = true);
  reader.notifyCheckpointComplete!(1);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(woke, false, "a checkpoint does not wake an idle reader");
  await reader.close!();
  await available;
  assert.equal(woke, true);
});

Deno.test("TestSource perSubtask gives list i to split i", () => {
  const source = TestSource.perSubtask([[1, 2], [10], [20, 21]]);
  const splits = source.enumerateSplits({ parallelism: 3 });
  assert.deepEqual(splits.map((s) => [s.splitId, s.list]), [["test-0", 0], ["test-1", 1], [
    "test-2",
    2,
  ]]);
  const seen = splits.map((split, i) => {
    const reader = source.createReader(context({ subtaskIndex: i }));
    reader.addSplits([split]);
    const out = collector<number>();
    pollWhileMore(reader, out);
    return out.records;
  });
  assert.deepEqual(seen, [[1, 2], [10], [20, 21]]);
});

Deno.test("TestSource emits each split through its own output, released when the split ends", () => {
  const source = TestSource.perSubtask<number>([[1, 2], [TestSource.timestamped(3, 30)]]);
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector<number>();
  assert.equal(pollWhileMore(reader, out), "END_OF_INPUT");
  assert.deepEqual(out.recordsOf("test-0"), [1, 2]);
  assert.deepEqual(out.recordsOf("test-1"), [3]);
  assert.deepEqual(out.openSplits, []);
  assert.deepEqual(out.events.filter((e) => e.kind === "released").map((e) => e.kind), [
    "released",
    "released",
  ]);
});

Deno.test("TestSource takes turns between the splits of one reader", () => {
  const source = TestSource.perSubtask([[1, 2, 3], [TestSource.awaitCheckpoint(), 10], [20, 21]], {
    batchSize: 4,
  });
  const reader = start(source);
  const out = collector<number>();
  assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.deepEqual(out.records, [1, 20, 2, 21]);
  assert.equal(reader.pollNext(out), "MORE_AVAILABLE");
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  assert.deepEqual(out.records, [1, 20, 2, 21, 3]);
});

Deno.test("TestSource refuses invalid markers, options and splits", () => {
  assert.throws(() => TestSource.fail("x", { attempt: -1 }), RangeError);
  assert.throws(() => TestSource.pause(-5), /current value is -5/);
  assert.throws(() => TestSource.timestamped(1, Number.NaN), RangeError);
  assert.throws(() => TestSource.of([1], { batchSize: 0 }), RangeError);
  const reader = TestSource.of([1]).createReader(context());
  assert.throws(
    () => reader.addSplits([{ splitId: "test-3", list: 3, position: 0, fromCheckpoint: true }]),
    /list 3 at position 0 does not exist/,
  );
});

Deno.test("TestSource close ends a pending pause without a context clock", async () => {
  const clock = new ManualClock();
  const reader = start(TestSource.of([TestSource.pause(60_000), 1]), context({ clock }));
  const out = collector<number>();
  assert.equal(reader.pollNext(out), "NOTHING_AVAILABLE");
  const available = reader.isAvailable!();
  assert.equal(reader.isAvailable!(), available, "one wait at a time");
  await reader.close!();
  await available; // a leaked timer would fail the test's sanitizer
  assert.deepEqual(out.records, []);
});
