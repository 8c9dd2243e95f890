import { ManualClock } from "../time/manual_clock.ts";
import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import type { ReaderOutput, SourceReaderContext } from "./source.ts";
import { CollectionSource, type CollectionSplit } from "./collection_source.ts";
import { RecordingReaderOutput } from "../../connectors/testing/reader_output.ts";

function context(subtaskIndex = 0, parallelism = 1): SourceReaderContext {
  return {
    subtaskIndex,
    parallelism,
    attempt: 0,
    operatorName: "collection",
    currentProcessingTime: () => 0,
    clock: new ManualClock(),
  };
}

function collector<T>(): RecordingReaderOutput<T> {
  return new RecordingReaderOutput<T>();
}

/** Polls until END_OF_INPUT, returning the statuses seen. */
function drain<T>(
  reader: { pollNext(o: ReaderOutput<T>): unknown },
  output: ReaderOutput<T>,
): unknown[] {
  const statuses: unknown[] = [];
  for (let i = 0; i < 10_000; i++) {
    const status = reader.pollNext(output);
    statuses.push(status);
    if (status === "END_OF_INPUT") return statuses;
  }
  throw new Error("the reader never ended");
}

Deno.test("CollectionSource cuts the array into parallelism contiguous ranges", () => {
  const source = new CollectionSource([..."abcdefg"]);
  const splits = source.enumerateSplits({ parallelism: 3 });
  assert.deepEqual(splits, [
    { splitId: "range-0", start: 0, end: 3, position: 0 },
    { splitId: "range-1", start: 3, end: 5, position: 3 },
    { splitId: "range-2", start: 5, end: 7, position: 5 },
  ]);
  assert.deepEqual(source.enumerateSplits({ parallelism: 3 }), splits, "deterministic");
  const tiny = new CollectionSource([1]).enumerateSplits({ parallelism: 3 });
  assert.deepEqual(tiny.map((s) => s.end - s.start), [1, 0, 0]);
  assert.throws(() => source.enumerateSplits({ parallelism: 0 }), RangeError);
});

Deno.test("CollectionSource reads every element once across subtasks, in order per range", () => {
  const elements = Array.from({ length: 25 }, (_, i) => i);
  const source = new CollectionSource(elements, { batchSize: 4 });
  const splits = source.enumerateSplits({ parallelism: 3 });
  const perSubtask: number[][] = [];
  for (let subtask = 0; subtask < 3; subtask++) {
    const reader = source.createReader(context(subtask, 3));
    reader.addSplits(splits.filter((_, i) => i % 3 === subtask));
    const out = collector<number>();
    drain(reader, out);
    perSubtask.push(out.records);
  }
  assert.deepEqual(perSubtask.flat(), elements);
  assert.deepEqual(perSubtask[1], [9, 10, 11, 12, 13, 14, 15, 16]);
});

Deno.test("CollectionSource emits at most batchSize records per poll and ends with an empty poll", () => {
  const source = new CollectionSource([1, 2, 3, 4, 5], { batchSize: 2 });
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector<number>();
  const sizes: number[] = [];
  let status;
  do {
    const before = out.records.length;
    status = reader.pollNext(out);
    sizes.push(out.records.length - before);
  } while (status !== "END_OF_INPUT");
  assert.deepEqual(sizes, [2, 2, 1, 0]);
  assert.throws(() => new CollectionSource([], { batchSize: 0 }), /current value is 0/);
});

Deno.test("CollectionSource resumes after the checkpointed index", () => {
  const source = new CollectionSource([..."abcdefghij"], { batchSize: 3 });
  const first = source.createReader(context());
  first.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const before = collector<string>();
  first.pollNext(before);
  first.pollNext(before);
  const snapshot = decode(encode(first.snapshotState(1))) as CollectionSplit[];
  assert.deepEqual(snapshot, [{ splitId: "range-0", start: 0, end: 10, position: 6 }]);
  first.pollNext(before); // emitted after the checkpoint, lost with the failure

  const restored = source.createReader(context());
  restored.addSplits(snapshot);
  const after = collector<string>();
  drain(restored, after);
  assert.deepEqual([...before.records.slice(0, 6), ...after.records], [..."abcdefghij"]);
});

Deno.test("CollectionSource drops finished splits from its snapshot", () => {
  const source = new CollectionSource([1, 2, 3, 4], { batchSize: 3 });
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 2 }));
  reader.pollNext(collector<number>());
  assert.deepEqual(reader.snapshotState(7), [
    { splitId: "range-1", start: 2, end: 4, position: 3 },
  ]);
});

Deno.test("CollectionSource emits each range through its own output, released at its end", () => {
  const source = new CollectionSource([1, 2, 3, 4, 5]);
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 2 })); // a restore at lower parallelism
  const out = collector<number>();
  drain(reader, out);
  assert.deepEqual(out.recordsOf("range-0"), [1, 2, 3]);
  assert.deepEqual(out.recordsOf("range-1"), [4, 5]);
  assert.deepEqual(out.events.filter((e) => e.kind !== "record"), [
    { kind: "created", split: "range-0" },
    { kind: "released", split: "range-0" },
    { kind: "created", split: "range-1" },
    { kind: "released", split: "range-1" },
  ]);
});

Deno.test("CollectionSource keeps its own copy of the array", () => {
  const elements = [1, 2];
  const source = new CollectionSource(elements);
  elements.push(3);
  const reader = source.createReader(context());
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector<number>();
  drain(reader, out);
  assert.deepEqual(out.records, [1, 2]);
});

Deno.test("CollectionSource refuses a restored split that no longer fits the array", () => {
  const source = new CollectionSource([1, 2, 3]);
  const reader = source.createReader(context());
  assert.throws(
    () => reader.addSplits([{ splitId: "range-1", start: 3, end: 6, position: 4 }]),
    /split range-1 .*range \[3, 6\) at position 4 does not fit a collection of 3 elements/,
  );
});

Deno.test("CollectionSource ends at once for a reader without splits", () => {
  const reader = new CollectionSource([1]).createReader(context());
  reader.addSplits([]);
  assert.equal(reader.pollNext(collector<number>()), "END_OF_INPUT");
});
