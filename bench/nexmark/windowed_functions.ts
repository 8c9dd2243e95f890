/**
 * The functions of the windowed Nexmark jobs (`windowed_queries.ts`): the
 * window aggregations, the process window functions that attach a window
 * to their result, the second stage that picks each window's best items
 * across keys ({@linkcode WindowTopSelect}), and q7's running-maximum
 * pre-filter ({@linkcode Q7RunningMaxFilter}). What crosses a shuffle is a
 * flat tuple where it can be (`[end, auction, count]`): the data plane
 * encodes those faster than nested objects.
 *
 * Aggregate functions change their accumulator in place and return it, as
 * `AggregateFunction` allows; their accumulators are plain arrays and
 * objects (state must be MessagePack-encodable). What they hand downstream
 * (`getResult`) is a fresh value, never the accumulator itself, since
 * records are immutable after `collect`.
 *
 * @module
 */

import {
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type OnTimerContext,
  type ProcessWindowContext,
  type ProcessWindowFunction,
  type RuntimeContext,
  TimeWindow,
  type ValueState,
  ValueStateDescriptor,
} from "../../mod.ts";
import type { AggregateFunction, FunctionHooks } from "../../runtime/api/functions.ts";
import type { CoGroupFunction } from "../../runtime/api/co_grouped_streams.ts";
import type { Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { type Q11Row, type Q5Row, type Q7Row, Q8_SIZE_MS, type Q8Row } from "./windowed_rows.ts";

/**
 * How {@linkcode WindowTopSelect} reads a record of the first stage: the
 * window it belongs to (by its end, ms, exclusive), its score (q5: a bid
 * count; q7: a price) and the item to emit if the score is the window's
 * highest.
 */
export interface TopOf<I, T> {
  /** The end of the record's window, ms (exclusive): the second stage's key. */
  end(input: I): number;
  /** The record's score. */
  score(input: I): number;
  /** What to emit for the record when its score is its window's highest. */
  item(input: I): T;
}

/** What {@linkcode WindowTopSelect} keeps per window: the best score so far and its items. */
interface KeptTop<T> {
  readonly score: number;
  readonly items: readonly T[];
}

/**
 * The second stage of q5 and q7: keyed by window end, it keeps the highest
 * score of the window's records and the items of every record reaching it
 * (ties included, Flink's `num >= maxn` and `price = maxprice`), and emits
 * those items when the watermark passes the window, from an event-time
 * timer at the window's last instant (`end - 1`).
 *
 * Every record of a window arrives before that timer fires: the first
 * stage emits a window's records when its own watermark reaches `end - 1`
 * and forwards that watermark after them, and this operator's watermark is
 * the minimum over its input channels. The kept state is replaced, never
 * changed in place (state values are immutable, `runtime/api/state.ts`).
 */
export class WindowTopSelect<I, T> implements KeyedProcessFunction<number, I, T> {
  private readonly of: TopOf<I, T>;
  private top!: ValueState<KeptTop<T>>;

  /** @param of how to read a record's window end, score and item. */
  constructor(of: TopOf<I, T>) {
    this.of = of;
  }

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.top = ctx.getState(new ValueStateDescriptor<KeptTop<T>>("window-top"));
  }

  /** Folds one record into its window's top, and sets the window's timer with its first. */
  processElement(input: I, ctx: KeyedProcessContext<number>, _out: Collector<T>): void {
    const score = this.of.score(input);
    const kept = this.top.value();
    if (kept === undefined) {
      this.top.update({ score, items: [this.of.item(input)] });
      ctx.timerService().registerEventTimeTimer(this.of.end(input) - 1);
    } else if (score > kept.score) {
      this.top.update({ score, items: [this.of.item(input)] });
    } else if (score === kept.score) {
      this.top.update({ score, items: [...kept.items, this.of.item(input)] });
    }
  }

  /** The window is complete: emits its best items and forgets it. */
  onTimer(_timestamp: number, _ctx: OnTimerContext<number>, out: Collector<T>): void {
    const kept = this.top.value();
    if (kept === undefined) return;
    for (const item of kept.items) out.collect(item);
    this.top.clear();
  }
}

/** q5's count of one auction's bids in one pane or window: `[auction, count]`. */
export type AuctionCount = readonly [auction: number, count: number];

/**
 * Counts a key's bids in a window, the input being the key itself (q5's
 * panes: the auction id; q11's sessions: the bidder id), as an
 * `AggregateFunction` whose accumulator `[key, count]` also carries the key.
 */
export const COUNT_BIDS: AggregateFunction<number, [number, number], AuctionCount> = {
  createAccumulator: () => [0, 0],
  add: (auction, acc) => {
    acc[0] = auction;
    acc[1]++;
    return acc;
  },
  getResult: (acc) => [acc[0], acc[1]],
  merge: (a, b) => [a[1] > 0 ? a[0] : b[0], a[1] + b[1]],
};

/**
 * Sums an auction's pane counts over a window (q5's second stage), as an
 * `AggregateFunction` with the same `[auction, count]` accumulator.
 */
export const SUM_COUNTS: AggregateFunction<AuctionCount, [number, number], AuctionCount> = {
  createAccumulator: () => [0, 0],
  add: (pane, acc) => {
    acc[0] = pane[0];
    acc[1] += pane[1];
    return acc;
  },
  getResult: (acc) => [acc[0], acc[1]],
  merge: (a, b) => [a[1] > 0 ? a[0] : b[0], a[1] + b[1]],
};

/** q5's count of one auction in one sliding window: `[window end, auction, count]`. */
export type Q5Count = readonly [end: number, auction: number, count: number];

/** Reads a {@linkcode Q5Count} for {@linkcode WindowTopSelect}: scored by count, item `(auction, num)`. */
export const Q5_TOP: TopOf<Q5Count, Q5Row> = {
  end: (c) => c[0],
  score: (c) => c[2],
  item: (c) => [c[1], c[2]],
};

/** Gives an auction's count in a window the window's end ({@linkcode Q5Count}). */
export class Q5WindowCount
  implements ProcessWindowFunction<AuctionCount, Q5Count, number, TimeWindow> {
  /** Emits `[end, auction, count]`. */
  process(
    _auction: number,
    ctx: ProcessWindowContext<TimeWindow>,
    counts: readonly AuctionCount[],
    out: Collector<Q5Count>,
  ): void {
    const count = counts[0]!;
    out.collect([ctx.window().end, count[0], count[1]]);
  }
}

/** q7's projection of a bid. */
export function q7Row(bid: Bid): Q7Row {
  return {
    auction: bid.auction,
    bidder: bid.bidder,
    price: bid.price,
    dateTime: bid.dateTime,
    extra: bid.extra,
  };
}

/**
 * q7's local phase (the "local" of Flink's local-global aggregation, a
 * combiner): keeps, per source subtask, the highest price seen so far in
 * the current 10 s window, and drops the bids below it, projecting the rest
 * to {@linkcode Q7Row}s. A dropped bid can never be a row: the window's
 * maximum is at least the maximum of any of its bids. So only bids that
 * raise or equal their subtask's running maximum cross the shuffle (about
 * `ln n` of a window's `n` bids, plus ties), and the global stage finds the
 * same rows.
 *
 * Its two fields are a cache, not state: a restored subtask starts with
 * none and passes more bids until it has seen one of the window, which
 * changes throughput only. A bid of an earlier window than the current one
 * (possible only when a subtask reads several splits) is passed unfiltered.
 * It is a `FlatMapFunction<NexmarkEvent, Q7Row>` object.
 */
export class Q7RunningMaxFilter implements FunctionHooks {
  private readonly sizeMs: number;
  private window = Number.NEGATIVE_INFINITY;
  private max = Number.NEGATIVE_INFINITY;

  /**
   * @param sizeMs the tumbling window's size, ms (q7: 10 000).
   * @throws {RangeError} unless `sizeMs` is a positive integer.
   */
  constructor(sizeMs: number) {
    if (!Number.isSafeInteger(sizeMs) || sizeMs <= 0) {
      throw new RangeError(
        `Q7RunningMaxFilter needs a window size that is a positive integer (ms): current value is ${sizeMs}`,
      );
    }
    this.sizeMs = sizeMs;
  }

  /** Starts each subtask's copy without a window. */
  open(): void {
    this.window = Number.NEGATIVE_INFINITY;
    this.max = Number.NEGATIVE_INFINITY;
  }

  /** Passes a bid that is not below its window's running maximum, as a row. */
  flatMap(e: NexmarkEvent, out: Collector<Q7Row>): void {
    if (e.type !== "bid") return;
    const bid = e.bid;
    const window = TimeWindow.getWindowStartWithOffset(bid.dateTime, 0, this.sizeMs);
    if (window > this.window) {
      this.window = window;
      this.max = bid.price;
    } else if (window === this.window) {
      if (bid.price < this.max) return;
      this.max = bid.price;
    }
    out.collect(q7Row(bid));
  }
}

/** q7's accumulator: the highest price so far and the rows of the bids at it. */
export interface Q7Accumulator {
  /** The highest price seen, cents; `-Infinity` before the first bid. */
  price: number;
  /** The rows of the bids at `price`. */
  rows: Q7Row[];
}

/**
 * A key's bids at its highest price in a window (q7's per-auction stage), as
 * an `AggregateFunction` that changes its accumulator in place.
 */
export const TOP_BIDS: AggregateFunction<Q7Row, Q7Accumulator, Q7Accumulator> = {
  createAccumulator: () => ({ price: Number.NEGATIVE_INFINITY, rows: [] }),
  add: (row, acc) => {
    if (row.price > acc.price) {
      acc.price = row.price;
      acc.rows = [row];
    } else if (row.price === acc.price) acc.rows.push(row);
    return acc;
  },
  getResult: (acc) => ({ price: acc.price, rows: [...acc.rows] }),
  merge: (a, b) =>
    a.price > b.price
      ? a
      : b.price > a.price
      ? b
      : { price: a.price, rows: [...a.rows, ...b.rows] },
};

/** One bid at an auction's highest price in a window: `[window end, row]`. */
export type Q7Candidate = readonly [end: number, row: Q7Row];

/** Reads a {@linkcode Q7Candidate} for {@linkcode WindowTopSelect}: scored by price, item the row. */
export const Q7_TOP: TopOf<Q7Candidate, Q7Row> = {
  end: (c) => c[0],
  score: (c) => c[1].price,
  item: (c) => c[1],
};

/** Emits each of an auction's highest bids of a window with the window's end. */
export class Q7WindowTop
  implements ProcessWindowFunction<Q7Accumulator, Q7Candidate, number, TimeWindow> {
  /** Emits `[end, row]` per row. */
  process(
    _auction: number,
    ctx: ProcessWindowContext<TimeWindow>,
    tops: readonly Q7Accumulator[],
    out: Collector<Q7Candidate>,
  ): void {
    const end = ctx.window().end;
    for (const row of tops[0]!.rows) out.collect([end, row]);
  }
}

/** A person as q8's coGroup takes it: `[id, name, dateTime]` (a flat tuple crosses the keyBy cheaply). */
export type Q8Person = readonly [id: number, name: string, dateTime: number];

/**
 * q8's coGroup function for one person id and window: `(id, name,
 * starttime)` when the window holds the person and at least one auction of
 * theirs. The window's start is that of the person's `dateTime` (the person
 * is in the window).
 */
export const Q8_NEW_SELLER: CoGroupFunction<Q8Person, number, Q8Row> = (persons, sellers, out) => {
  if (persons.length === 0 || sellers.length === 0) return;
  for (const [id, name, dateTime] of persons) {
    out.collect([id, name, dateTime - (dateTime % Q8_SIZE_MS)]);
  }
};

/** Turns a bidder's count in a session window into q11's row. */
export class Q11Session implements ProcessWindowFunction<AuctionCount, Q11Row, number, TimeWindow> {
  /** Emits `(bidder, count, start, end)` of the session. */
  process(
    bidder: number,
    ctx: ProcessWindowContext<TimeWindow>,
    counts: readonly AuctionCount[],
    out: Collector<Q11Row>,
  ): void {
    const window = ctx.window();
    out.collect([bidder, counts[0]![1], window.start, window.end]);
  }
}
