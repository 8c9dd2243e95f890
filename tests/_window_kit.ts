/**
 * Shared pieces of the window integration tests (`window_checkpointing_test.ts`,
 * `window_rescale_test.ts`): a keyed input whose windows are known in
 * advance, the three window functions under test, and the assertion that
 * every window fired exactly once with its exact sum.
 *
 * ## The input
 *
 * Every key `k<i>` emits the sequence numbers 0, 1, 2, ... in order, each
 * with event timestamp {@linkcode tickTime}`(seq)` (ms): one ms apart inside
 * a burst of {@linkcode BURST} records, and {@linkcode BURST_PAUSE_MS} more
 * between two bursts, so that session windows with a gap of
 * {@linkcode SESSION_GAP_MS} close at every burst's end. All records of one
 * key sit in one split, and a split's timestamps never decrease, so with
 * monotonous watermarks no record is ever late: which windows exist, and what
 * they hold, is a function of the input alone, whatever the timing (the
 * point of Flink's `EventTimeWindowCheckpointingITCase`).
 *
 * ## The expected windows
 *
 * {@linkcode expectedWindows} computes every window's sum and count from the
 * input directly, with the window semantics written out here again
 * (tumbling: `[n·size, (n+1)·size)`; sliding: every `[s, s+size)` with `s` a
 * multiple of the slide; sessions: a new session when the next timestamp is
 * more than the gap after the previous one, Flink's `TimeWindow.intersects`),
 * not with Weir's assigners, so a bug in an assigner shows up.
 *
 * ## The window functions
 *
 * Each test runs `reduce`, `aggregate` and `process` (Flink's
 * `ReduceFunction`, `AggregateFunction` and `ProcessWindowFunction`). All
 * three emit a {@linkcode WindowSum}: `reduce` and `aggregate` emit their
 * result stamped with the window's `maxTimestamp()`, from which a following
 * process function reads the window's end; `process` reads it from its
 * context.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  AggregateFunction,
  CheckpointedFunction,
  Collector,
  DataStream,
  FunctionInitializationContext,
  ProcessContext,
  ProcessWindowContext,
  RuntimeContext,
  SingleOutputStreamOperator,
  TimeWindow,
  WindowAssigner,
} from "../mod.ts";
import {
  EventTimeSessionWindows,
  SlidingEventTimeWindows,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";

/** Records per burst of one key. */
export const BURST = 40;
/** Extra event time between two bursts of a key, in ms. */
export const BURST_PAUSE_MS = 15;
/** Size of the tumbling windows, ms. */
export const TUMBLING_SIZE_MS = 40;
/** Size of the sliding windows, ms. */
export const SLIDING_SIZE_MS = 40;
/** Slide of the sliding windows, ms. */
export const SLIDING_SLIDE_MS = 20;
/** Gap of the session windows, ms: less than a burst's pause, more than 1 ms. */
export const SESSION_GAP_MS = 10;

/** One record of the input: key, sequence number (also its value), event time (ms). */
export interface Tick {
  readonly key: string;
  readonly seq: number;
  readonly ts: number;
}

/** What a window emits: its key, its end (exclusive, ms), and the sum and count of its `seq`s. */
export interface WindowSum {
  readonly key: string;
  readonly end: number;
  readonly sum: number;
  readonly count: number;
}

/** The event time of sequence number `seq` (ms): bursts of {@linkcode BURST} 1 ms apart. */
export function tickTime(seq: number): number {
  return seq + Math.floor(seq / BURST) * BURST_PAUSE_MS;
}

/**
 * Monotonous watermarks, punctuated: the watermark `ts - 1` at every tick
 * (Flink's `FailingSource` emits one per round), so windows fire as soon as
 * every split has passed their end, whatever the processing-time pace.
 */
export const PUNCTUATED_TICKS: WatermarkStrategy<Tick> = WatermarkStrategy.forGenerator<Tick>(
  () => ({
    onEvent: (_tick, timestamp, output) => output.emitWatermark(timestamp - 1),
    onPeriodicEmit: () => {},
  }),
).withTimestampAssigner((tick) => tick.ts);

/** The window assigners under test. */
export type AssignerKind = "tumbling" | "sliding" | "session";
/** The window functions under test. */
export type FunctionKind = "reduce" | "aggregate" | "process";

/** Every assigner kind, in test order. */
export const ASSIGNER_KINDS: readonly AssignerKind[] = ["tumbling", "sliding", "session"];
/** Every function kind, in test order. */
export const FUNCTION_KINDS: readonly FunctionKind[] = ["reduce", "aggregate", "process"];

/** The event-time assigner of `kind`, with this kit's sizes. */
export function assignerOf(kind: AssignerKind): WindowAssigner<unknown, TimeWindow> {
  switch (kind) {
    case "tumbling":
      return TumblingEventTimeWindows.of(TUMBLING_SIZE_MS);
    case "sliding":
      return SlidingEventTimeWindows.of(SLIDING_SIZE_MS, SLIDING_SLIDE_MS);
    case "session":
      return EventTimeSessionWindows.withGap(SESSION_GAP_MS);
  }
}

/** `k0`, `k1`, ...: the keys of split `split` when `keys` keys are dealt round-robin over `splits`. */
export function keysOfSplit(split: number, splits: number, keys: number): string[] {
  const out: string[] = [];
  for (let k = split; k < keys; k += splits) out.push(`k${k}`);
  return out;
}

/** Options of {@linkcode tickSplits}. */
export interface TickSplitsOptions {
  /** Number of splits. */
  readonly splits: number;
  /** Number of keys, dealt round-robin over the splits. */
  readonly keys: number;
  /** Records per key. */
  readonly recordsPerKey: number;
  /** An `awaitCheckpoint` marker after every this many records of a split. */
  readonly awaitCheckpointEvery: number;
  /**
   * A `fail` marker (attempt 0 only) in split 0, {@linkcode failDelayRecords}
   * records after its `failAfterCheckpoints`-th `awaitCheckpoint` marker: at
   * least that many checkpoints have completed when it throws. A checkpoint
   * never holds split 0 past it, so the same input without the marker
   * restores to the same records (what a resumed run, whose attempts count
   * from 0, needs).
   */
  readonly failAfterCheckpoints?: number | undefined;
  /**
   * How many records of split 0 come between that `awaitCheckpoint` marker
   * and the `fail` marker (default 0): with some, windows fire between the
   * checkpoint and the failure, and their results must not be committed.
   */
  readonly failDelayRecords?: number;
}

/**
 * The items of each split: its keys' ticks interleaved round-robin (so every
 * split's timestamps never decrease), with `awaitCheckpoint` markers (so
 * checkpoints land while windows are open) and, optionally, a `fail` marker.
 */
export function tickSplits(options: TickSplitsOptions): TestItem<Tick>[][] {
  const lists: TestItem<Tick>[][] = [];
  for (let split = 0; split < options.splits; split++) {
    const keys = keysOfSplit(split, options.splits, options.keys);
    const items: TestItem<Tick>[] = [];
    let emitted = 0;
    let markers = 0;
    let failAt = -1;
    const fail = () =>
      items.push(TestSource.fail(`induced failure after ${markers} completed checkpoints`));
    for (let seq = 0; seq < options.recordsPerKey; seq++) {
      for (const key of keys) {
        items.push({ key, seq, ts: tickTime(seq) });
        if (++emitted === failAt) fail();
        if (emitted % options.awaitCheckpointEvery !== 0) continue;
        items.push(TestSource.awaitCheckpoint());
        markers++;
        if (split !== 0 || markers !== options.failAfterCheckpoints) continue;
        const delay = options.failDelayRecords ?? 0;
        if (delay === 0) fail();
        else failAt = emitted + delay;
      }
    }
    lists.push(items);
  }
  return lists;
}

/** The key of a window in a result map: `<key>@<end>`. */
export function windowId(key: string, end: number): string {
  return `${key}@${end}`;
}

/** Adds `seq` to the window `[_, end)` of `key` in `out`. */
function add(out: Map<string, WindowSum>, key: string, end: number, seq: number): void {
  const id = windowId(key, end);
  const w = out.get(id) ?? { key, end, sum: 0, count: 0 };
  out.set(id, { key, end, sum: w.sum + seq, count: w.count + 1 });
}

/**
 * Every window `kind` gives for `keys` keys of `recordsPerKey` ticks each,
 * by `<key>@<end>`, computed from the window semantics directly (see the
 * module docs).
 */
export function expectedWindows(
  kind: AssignerKind,
  keys: number,
  recordsPerKey: number,
): Map<string, WindowSum> {
  const out = new Map<string, WindowSum>();
  for (let k = 0; k < keys; k++) {
    const key = `k${k}`;
    let sessionEnd = Number.NEGATIVE_INFINITY;
    let session: { seqs: number[]; last: number } = { seqs: [], last: Number.NEGATIVE_INFINITY };
    const closeSession = () => {
      for (const seq of session.seqs) add(out, key, sessionEnd, seq);
    };
    for (let seq = 0; seq < recordsPerKey; seq++) {
      const ts = tickTime(seq);
      if (kind === "tumbling") {
        add(out, key, (Math.floor(ts / TUMBLING_SIZE_MS) + 1) * TUMBLING_SIZE_MS, seq);
      } else if (kind === "sliding") {
        // Every start s = n·slide with s <= ts < s + size.
        for (
          let start = Math.floor(ts / SLIDING_SLIDE_MS) * SLIDING_SLIDE_MS;
          start > ts - SLIDING_SIZE_MS;
          start -= SLIDING_SLIDE_MS
        ) {
          add(out, key, start + SLIDING_SIZE_MS, seq);
        }
      } else {
        if (ts - session.last > SESSION_GAP_MS) {
          closeSession();
          session = { seqs: [], last: ts };
        }
        session.seqs.push(seq);
        session.last = ts;
        sessionEnd = ts + SESSION_GAP_MS;
      }
    }
    if (kind === "session") closeSession();
  }
  return out;
}

/** The partial sum of `reduce`: one key's sum and count so far. */
interface Partial {
  readonly key: string;
  readonly sum: number;
  readonly count: number;
}

/** Sums `seq` and counts ticks, keeping the key (the accumulator of `aggregate`). */
export const SUM_AGGREGATE: AggregateFunction<Tick, Partial, Partial> = {
  createAccumulator: () => ({ key: "", sum: 0, count: 0 }),
  add: (tick, acc) => ({ key: tick.key, sum: acc.sum + tick.seq, count: acc.count + 1 }),
  getResult: (acc) => acc,
  merge: (a, b) => ({ key: a.key || b.key, sum: a.sum + b.sum, count: a.count + b.count }),
};

/** Turns a window's result, stamped with its `maxTimestamp()`, into a {@linkcode WindowSum}. */
const stampEnd = {
  processElement(partial: Partial, ctx: ProcessContext, out: Collector<WindowSum>): void {
    const maxTimestamp = ctx.timestamp();
    if (maxTimestamp === undefined) {
      throw new Error(`the window result of key ${partial.key} carries no timestamp`);
    }
    out.collect({
      key: partial.key,
      end: maxTimestamp + 1,
      sum: partial.sum,
      count: partial.count,
    });
  },
};

/**
 * Keys `ticks` by key, applies `assigner` and the window function `fn`, with
 * uid `uid` for the window operator. For `reduce`, each tick is first mapped
 * to a partial sum (a reduce keeps its input type).
 * @returns the stream of window sums.
 */
export function windowSums(
  ticks: DataStream<Tick>,
  assigner: WindowAssigner<unknown, TimeWindow>,
  fn: FunctionKind,
  uid: string,
): SingleOutputStreamOperator<WindowSum> {
  switch (fn) {
    case "reduce":
      return ticks
        .map((tick): Partial => ({ key: tick.key, sum: tick.seq, count: 1 }))
        .keyBy((partial) => partial.key)
        .window(assigner as WindowAssigner<Partial, TimeWindow>)
        .reduce((a, b) => ({ key: a.key, sum: a.sum + b.sum, count: a.count + b.count }))
        .uid(uid)
        .process(stampEnd);
    case "aggregate":
      return ticks
        .keyBy((tick) => tick.key)
        .window(assigner as WindowAssigner<Tick, TimeWindow>)
        .aggregate(SUM_AGGREGATE)
        .uid(uid)
        .process(stampEnd);
    case "process":
      return ticks
        .keyBy((tick) => tick.key)
        .window(assigner as WindowAssigner<Tick, TimeWindow>)
        .process<WindowSum>({
          process(
            key: string,
            ctx: ProcessWindowContext<TimeWindow>,
            elements: readonly Tick[],
            out: Collector<WindowSum>,
          ) {
            let sum = 0;
            for (const tick of elements) sum += tick.seq;
            out.collect({ key, end: ctx.window().end, sum, count: elements.length });
          },
        })
        .uid(uid);
  }
}

/**
 * Asserts that `committed` holds every window of `expected` exactly once,
 * with its exact sum and count, and no other window.
 * @param context names the run in assertion messages.
 */
export function assertEveryWindowOnce(
  committed: readonly WindowSum[],
  expected: ReadonlyMap<string, WindowSum>,
  context: string,
): void {
  const seen = new Map<string, WindowSum>();
  const twice: string[] = [];
  for (const w of committed) {
    const id = windowId(w.key, w.end);
    if (seen.has(id)) twice.push(id);
    seen.set(id, w);
  }
  assert.deepEqual(twice, [], `${context}: windows that fired more than once`);
  const missing = [...expected.keys()].filter((id) => !seen.has(id));
  assert.deepEqual(missing, [], `${context}: windows that never fired`);
  const unexpected = [...seen.keys()].filter((id) => !expected.has(id));
  assert.deepEqual(unexpected, [], `${context}: windows that should not exist`);
  for (const [id, w] of expected) {
    assert.deepEqual(seen.get(id), w, `${context}: window ${id}`);
  }
}

/** What a {@linkcode RestoreProbe} saw, shared by all its subtask copies. */
export interface RestoreLog {
  /** Per subtask start: the attempt, and the checkpoint restored from (`undefined`: fresh). */
  readonly starts: { attempt: number; restoredFrom: number | undefined }[];
}

/**
 * An identity map that logs, for every subtask start, the attempt and the
 * checkpoint it was restored from; chain it to the source.
 */
export class RestoreProbe implements CheckpointedFunction {
  readonly log: RestoreLog;
  // Copied per subtask (shallowly): no #private fields.
  private restoredFrom: number | undefined;
  constructor(log: RestoreLog) {
    this.log = log;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.restoredFrom = context.restoredCheckpointId;
  }
  snapshotState(): void {}
  open(context: RuntimeContext): void {
    this.log.starts.push({ attempt: context.attempt, restoredFrom: this.restoredFrom });
  }
  map(tick: Tick): Tick {
    return tick;
  }
}

/** Window results emitted per execution attempt (committed or not), shared by all subtask copies. */
export interface FiringLog {
  readonly byAttempt: number[];
}

/** An identity map that counts the window results passing it per attempt; chain it to the window. */
export class FiringProbe {
  readonly log: FiringLog;
  // Copied per subtask (shallowly): no #private fields.
  private attempt = -1;
  constructor(log: FiringLog) {
    this.log = log;
  }
  open(context: RuntimeContext): void {
    this.attempt = context.attempt;
  }
  map(sum: WindowSum): WindowSum {
    this.log.byAttempt[this.attempt] = (this.log.byAttempt[this.attempt] ?? 0) + 1;
    return sum;
  }
}
