/**
 * Nexmark q4 (average closing price per category) and q6 (average selling
 * price per seller) as Weir DataStream jobs, after the SQL of Flink's
 * Nexmark repository (`nexmark-flink/src/main/resources/queries/q4.sql`,
 * `q6.sql`). Both results are **updating**: their jobs emit changelogs of
 * `Row`s (`+I`, `-U`, `+U`), and what a run must equal is the table the
 * changelog folds to (a retract sink's final content), not the sequence of
 * changes. {@linkcode q4Batch} and {@linkcode q6Batch} compute that table
 * straight from the events, in memory: the tests' oracle (the harness's
 * baseline is the one-pass loop of `q4_q6_baseline.ts`). The SQL versions,
 * `sql/q4.sql` and `sql/q6.sql`, fold to the same tables (`sql_test.ts`).
 *
 * ## q4
 *
 *     SELECT Q.category, AVG(Q.final)
 *     FROM (
 *         SELECT MAX(B.price) AS final, A.category
 *         FROM auction A, bid B
 *         WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
 *         GROUP BY A.id, A.category
 *     ) Q
 *     GROUP BY Q.category;
 *
 * One row `(category, average)` per category that has an auction with at
 * least one bid in `[A.dateTime, A.expires]` (both ends included): the
 * average over those auctions of their highest such bid. `AVG` of a
 * `BIGINT` is a `BIGINT`, truncated toward zero, as Flink's.
 *
 * ## q6
 *
 *     SELECT Q.seller, AVG(Q.price) OVER
 *         (PARTITION BY Q.seller ORDER BY Q.dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
 *     FROM (
 *         SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
 *         FROM (SELECT A.id, A.seller, B.price, B.dateTime FROM auction AS A, bid AS B
 *               WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
 *         WHERE rownum <= 1
 *     ) AS Q;
 *
 * Per auction its winning bid (the highest price in the auction's
 * interval), then per seller, with the winners ordered by the winning
 * bid's `dateTime`: for each winner one row `(seller, average)`, the
 * average of its price and the prices of the (up to) 10 winners before it
 * (the SQL's `ROWS BETWEEN 10 PRECEDING AND CURRENT ROW`: 11 rows, where
 * Beam's original Query6 averages the last 10).
 *
 * Flink cannot run this query (Nexmark's README lists q6 as unsupported:
 * an OVER aggregation needs an append-only input ordered by a time
 * attribute, and the Top-1 gives neither). The table above is what the
 * SQL means as a batch query; this job computes it as a stream, and where
 * the SQL leaves an order open it fixes one:
 *
 * - among bids of the same highest price, the winner is the earliest
 *   (least `dateTime`; two such bids in the same millisecond give the same
 *   row);
 * - winners of one seller with the same `dateTime` are ordered by auction id.
 *
 * ## The jobs
 *
 * Both share the first stage ({@linkcode WinningBid}): bids and auctions,
 * connected and keyed by auction id, in event time. An auction keeps the
 * highest bid of its interval and closes, emitting its {@linkcode Winner},
 * when the watermark reaches `expires` (an event-time timer): every bid
 * with `dateTime <= expires` has arrived by then (the watermark's promise).
 * A bid that arrives before its auction (the generator lets a bid name an
 * auction a few ids ahead) waits until the watermark passes its
 * `dateTime`: an auction arriving later than that has a later `dateTime`,
 * so the bid is outside its interval and is dropped.
 *
 * - **q4** ({@linkcode Q4Average}), keyed by category: the sum and count of
 *   the closing prices; each winner emits `+I` (the first) or `-U` old,
 *   `+U` new.
 * - **q6** ({@linkcode Q6Average}), keyed by seller: the seller's winners
 *   sorted by `(dateTime, auction)`. A winner lands anywhere in that order
 *   (auctions close by `expires`, not by their winning bid's time), and
 *   changes the average of itself and of the up to 10 rows after it: it
 *   emits `+I` for its own row and `-U`/`+U` for each of those whose
 *   average moved. The changelog folds to the batch table in any arrival
 *   order. The seller's winners stay in state for the whole run (no
 *   winner is ever final: a later-closing auction can sort before it).
 *
 * @module
 */

import {
  type Collector,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  keyHash,
  type ListState,
  ListStateDescriptor,
  type OnTimerContext,
  OutputTag,
  type ProcessContext,
  type Row,
  type RuntimeContext,
  type SingleOutputStreamOperator,
  type SqlValue,
  type ValueState,
  ValueStateDescriptor,
} from "../../mod.ts";
import type { Auction, Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";

/** An auction's closing: its winning bid's price and time, with what q4 and q6 group by. */
export interface Winner {
  /** Auction id. */
  readonly auction: number;
  /** The auction's seller. */
  readonly seller: number;
  /** The auction's category. */
  readonly category: number;
  /** The winning (highest) price, cents. */
  readonly price: number;
  /** The winning bid's event time, ms. */
  readonly dateTime: number;
}

/** What {@linkcode WinningBid} keeps of an auction: `[dateTime, expires, seller, category]`. */
type OpenAuction = readonly [dateTime: number, expires: number, seller: number, category: number];
/** A bid as {@linkcode WinningBid} keeps it: `[price, dateTime]`. */
type KeptBid = readonly [price: number, dateTime: number];

/** Whether bid `b` beats `best`: a higher price, or the same price earlier. */
function beats(b: KeptBid, best: KeptBid | undefined): boolean {
  return best === undefined || b[0] > best[0] || (b[0] === best[0] && b[1] < best[1]);
}

/**
 * The first stage of q4 and q6, per auction id (the key): input 1 the bids,
 * input 2 the auctions (Flink's `KeyedCoProcessFunction`); emits the
 * auction's {@linkcode Winner} when the watermark reaches its `expires`,
 * if some bid fell in `[dateTime, expires]`. See the module docs.
 */
export class WinningBid implements KeyedCoProcessFunction<number, Bid, Auction, Winner> {
  private auction!: ValueState<OpenAuction>;
  private best!: ValueState<KeptBid>;
  private pending!: ListState<KeptBid>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.auction = ctx.getState(new ValueStateDescriptor<OpenAuction>("auction"));
    this.best = ctx.getState(new ValueStateDescriptor<KeptBid>("best-bid"));
    this.pending = ctx.getListState(new ListStateDescriptor<KeptBid>("early-bids"));
  }

  /** Keeps the bid if it beats the auction's best so far; waits for an auction not seen yet. */
  processElement1(bid: Bid, ctx: KeyedProcessContext<number>, _out: Collector<Winner>): void {
    const kept: KeptBid = [bid.price, bid.dateTime];
    const a = this.auction.value();
    if (a !== undefined) {
      if (bid.dateTime >= a[0] && bid.dateTime <= a[1] && beats(kept, this.best.value())) {
        this.best.update(kept);
      }
      return;
    }
    // No auction (yet, or it closed): the auction can still come only with a
    // dateTime >= the watermark; a bid at or before the watermark cannot fall in it.
    const timers = ctx.timerService();
    if (bid.dateTime <= timers.currentWatermark()) return;
    this.pending.add(kept);
    timers.registerEventTimeTimer(bid.dateTime);
  }

  /** Opens the auction, takes the early bids in its interval, and closes it at `expires`. */
  processElement2(a: Auction, ctx: KeyedProcessContext<number>, _out: Collector<Winner>): void {
    if (a.expires < a.dateTime) {
      throw new RangeError(
        `nexmark q4/q6: auction ${a.id} expires (${a.expires}) before it starts (${a.dateTime})`,
      );
    }
    this.auction.update([a.dateTime, a.expires, a.seller, a.category]);
    let best = this.best.value();
    for (const b of this.pending.get()) {
      if (b[1] >= a.dateTime && b[1] <= a.expires && beats(b, best)) best = b;
    }
    this.pending.clear();
    if (best !== undefined) this.best.update(best);
    ctx.timerService().registerEventTimeTimer(a.expires);
  }

  /** At `expires`: emits the winner and forgets the auction; at a waiting bid's time: drops it. */
  onTimer(timestamp: number, ctx: OnTimerContext<number>, out: Collector<Winner>): void {
    const a = this.auction.value();
    if (a !== undefined && a[1] === timestamp) {
      const best = this.best.value();
      if (best !== undefined) {
        out.collect({
          auction: ctx.getCurrentKey(),
          seller: a[2],
          category: a[3],
          price: best[0],
          dateTime: best[1],
        });
      }
      this.auction.clear();
      this.best.clear();
    }
    if (a === undefined) {
      const waiting = this.pending.get();
      if (waiting.length === 0) return;
      const later = waiting.filter((b) => b[1] > timestamp);
      if (later.length === 0) this.pending.clear();
      else this.pending.update(later);
    }
  }
}

/** The side output of the auctions in {@linkcode winners}' split (the bids are the main output). */
export const Q4_Q6_AUCTIONS: OutputTag<Auction> = new OutputTag<Auction>("q4-q6-auctions");

/**
 * The winners of `events` (which must carry event-time timestamps and
 * watermarks, e.g. `nexmarkEventTimeEvents`): one pass splits bids and
 * auctions, then {@linkcode WinningBid} keyed by auction id.
 * @param prefix names and uids the operators (`<prefix>-split`, `<prefix>-winning-bid`).
 */
export function winners(
  events: DataStream<NexmarkEvent>,
  prefix: string,
): SingleOutputStreamOperator<Winner> {
  const bids = events.process<Bid>({
    processElement(e: NexmarkEvent, ctx: ProcessContext, out: Collector<Bid>) {
      if (e.type === "bid") out.collect(e.bid);
      else if (e.type === "auction") ctx.output(Q4_Q6_AUCTIONS, e.auction);
    },
  }).name(`${prefix}-split`);
  return bids.connect(bids.getSideOutput(Q4_Q6_AUCTIONS))
    .keyBy((b) => b.auction, (a) => a.id)
    .process(new WinningBid())
    .uid(`${prefix}-winning-bid`);
}

/** `AVG` of integers as Flink's `AVG(BIGINT)`: truncated toward zero. */
function averageOf(sum: number, count: number): number {
  return Math.trunc(sum / count);
}

/**
 * q4's second stage, per category (the key): the running `AVG` of the
 * closing prices as a retract changelog of `(category, average)` rows.
 */
export class Q4Average implements KeyedProcessFunction<number, Winner, Row> {
  /** `[sum of closing prices, auctions]`. */
  private acc!: ValueState<readonly [sum: number, count: number]>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.acc = ctx.getState(new ValueStateDescriptor<readonly [number, number]>("sum-count"));
  }

  /** Adds a closing price; emits `+I` or `-U`/`+U`. */
  processElement(w: Winner, _ctx: KeyedProcessContext<number>, out: Collector<Row>): void {
    const acc = this.acc.value();
    const sum = (acc?.[0] ?? 0) + w.price;
    const count = (acc?.[1] ?? 0) + 1;
    this.acc.update([sum, count]);
    const row = [w.category, averageOf(sum, count)];
    if (acc === undefined) {
      out.collect({ kind: "INSERT", fields: row });
      return;
    }
    out.collect({ kind: "UPDATE_BEFORE", fields: [w.category, averageOf(acc[0], acc[1])] });
    out.collect({ kind: "UPDATE_AFTER", fields: row });
  }
}

/** q6's window: the current row and this many before it (`ROWS BETWEEN 10 PRECEDING`). */
export const Q6_PRECEDING = 10;

/** A seller's winner as {@linkcode Q6Average} keeps it: `[dateTime, auction, price]`. */
type SellerRow = readonly [dateTime: number, auction: number, price: number];

function sellerRowBefore(a: SellerRow, b: SellerRow): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/** The average of `rows[i]`'s window: it and the up to {@linkcode Q6_PRECEDING} rows before. */
function windowAverage(rows: readonly SellerRow[], i: number): number {
  const from = Math.max(0, i - Q6_PRECEDING);
  let sum = 0;
  for (let j = from; j <= i; j++) sum += rows[j]![2];
  return averageOf(sum, i - from + 1);
}

/**
 * q6's second stage, per seller (the key): the seller's winners in
 * `(dateTime, auction)` order and, for each, the average over its window
 * of 11 rows, as a retract changelog of `(seller, average)` rows (see the
 * module docs).
 */
export class Q6Average implements KeyedProcessFunction<number, Winner, Row> {
  private rows!: ValueState<readonly SellerRow[]>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.rows = ctx.getState(new ValueStateDescriptor<readonly SellerRow[]>("winners"));
  }

  /** Inserts a winner in order; emits its row and the changed averages of the rows after it. */
  processElement(w: Winner, ctx: KeyedProcessContext<number>, out: Collector<Row>): void {
    const seller = ctx.getCurrentKey();
    const old = this.rows.value() ?? [];
    const row: SellerRow = [w.dateTime, w.auction, w.price];
    let at = old.length;
    while (at > 0 && sellerRowBefore(row, old[at - 1]!)) at--;
    const rows = [...old.slice(0, at), row, ...old.slice(at)];
    this.rows.update(rows);
    out.collect({ kind: "INSERT", fields: [seller, windowAverage(rows, at)] });
    const last = Math.min(rows.length - 1, at + Q6_PRECEDING);
    for (let i = at + 1; i <= last; i++) {
      const before = windowAverage(old, i - 1);
      const after = windowAverage(rows, i);
      if (before === after) continue;
      out.collect({ kind: "UPDATE_BEFORE", fields: [seller, before] });
      out.collect({ kind: "UPDATE_AFTER", fields: [seller, after] });
    }
  }
}

/** q4 over `events` with event time: winners, then per category the running average. */
export function q4Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Row> {
  return winners(events, "q4").keyBy((w) => w.category).process(new Q4Average()).uid("q4-average");
}

/** q6 over `events` with event time: winners, then per seller the windowed averages. */
export function q6Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Row> {
  return winners(events, "q6").keyBy((w) => w.seller).process(new Q6Average()).uid("q6-average");
}

/**
 * The winners of `events` as a batch: per auction, the highest bid in
 * `[dateTime, expires]` (the earliest among equal prices), for the
 * auctions that have one. Bids of auctions absent from `events` are ignored.
 */
export function batchWinners(events: Iterable<NexmarkEvent>): Winner[] {
  const auctions = new Map<number, Auction>();
  const bids: Bid[] = [];
  for (const e of events) {
    if (e.type === "auction") auctions.set(e.auction.id, e.auction);
    else if (e.type === "bid") bids.push(e.bid);
  }
  const best = new Map<number, KeptBid>();
  for (const b of bids) {
    const a = auctions.get(b.auction);
    if (a === undefined || b.dateTime < a.dateTime || b.dateTime > a.expires) continue;
    const kept: KeptBid = [b.price, b.dateTime];
    if (beats(kept, best.get(a.id))) best.set(a.id, kept);
  }
  return [...best].map(([id, [price, dateTime]]) => {
    const a = auctions.get(id)!;
    return { auction: id, seller: a.seller, category: a.category, price, dateTime };
  });
}

/** q4's final table over `events`, computed as a batch: `[category, average]` rows. */
export function q4Batch(events: Iterable<NexmarkEvent>): [number, number][] {
  const acc = new Map<number, [number, number]>();
  for (const w of batchWinners(events)) {
    const a = acc.get(w.category) ?? [0, 0];
    acc.set(w.category, [a[0] + w.price, a[1] + 1]);
  }
  return [...acc].map(([category, [sum, count]]) => [category, averageOf(sum, count)]);
}

/** q6's final table over `events`, computed as a batch: `[seller, average]` rows, one per winner. */
export function q6Batch(events: Iterable<NexmarkEvent>): [number, number][] {
  const bySeller = new Map<number, SellerRow[]>();
  for (const w of batchWinners(events)) {
    const rows = bySeller.get(w.seller) ?? [];
    rows.push([w.dateTime, w.auction, w.price]);
    bySeller.set(w.seller, rows);
  }
  const out: [number, number][] = [];
  for (const [seller, rows] of bySeller) {
    rows.sort((a, b) => sellerRowBefore(a, b) ? -1 : sellerRowBefore(b, a) ? 1 : 0);
    for (let i = 0; i < rows.length; i++) out.push([seller, windowAverage(rows, i)]);
  }
  return out;
}

/**
 * A changelog row's contribution to an order-independent digest of the
 * table it folds to: `+keyHash(fields)` for `+I`/`+U`, `-keyHash(fields)`
 * for `-U`/`-D` (summed mod 2^32 by the sinks), so a row inserted then
 * retracted adds nothing.
 */
export function signedRowHash(row: Row): number {
  const h = fieldsHash(row.fields);
  return row.kind === "INSERT" || row.kind === "UPDATE_AFTER" ? h : -h;
}

/** A 32-bit hash of a row's fields: `keyHash` of them as a tuple, SQL NULL as a string no value takes. */
export function fieldsHash(fields: readonly SqlValue[]): number {
  return keyHash(fields.map((f) => f === null ? "\u0000NULL" : f));
}

/** A changelog row's sign: +1 for `+I`/`+U`, -1 for `-U`/`-D`. */
export function rowSign(row: Row): 1 | -1 {
  return row.kind === "INSERT" || row.kind === "UPDATE_AFTER" ? 1 : -1;
}
