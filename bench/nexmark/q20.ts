/**
 * Nexmark q20 (expand bid with auction), after the SQL of Flink's Nexmark
 * repository (`nexmark-flink/src/main/resources/queries/q20.sql`):
 *
 *     SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
 *            itemName, description, initialBid, reserve, A.dateTime, expires, seller, category, A.extra
 *     FROM bid AS B INNER JOIN auction AS A on B.auction = A.id
 *     WHERE A.category = 10;
 *
 * A regular (non-windowed) inner join: every bid whose auction is of
 * category 10, in either arrival order, widened with the auction's fields.
 * Here the bids (input 1) and the auctions (input 2) are connected, keyed by
 * auction id, and meet in {@linkcode Q20Join}, a `KeyedCoProcessFunction`;
 * the baseline ({@linkcode q20Loop}) does the same with two `Map`s.
 *
 * ## State, and how it differs from Flink's plan
 *
 * Flink pushes the category filter below the join, so a bid whose auction
 * is of another category waits in the join's state for good (a regular
 * join keeps both sides). Auction ids are unique in Nexmark (one auction
 * event per id), so here the join also takes the auctions of other
 * categories and remembers only that they are (`false`): their waiting
 * bids are dropped and later ones are never kept. The rows are the same;
 * the state holds the category-10 auctions, one flag per other auction, and
 * the bids whose auction has not arrived yet (the generator lets a bid name
 * an auction up to 10 ids ahead, see `connectors/datagen/nexmark/`).
 *
 * ## Measured (2 shared, loaded cores; `deno task nexmark --query q20 --rounds 3`)
 *
 * | events | checkpoint interval | engine events/CPU s | baseline events/CPU s | ratio |
 * | ------ | ------------------- | ------------------- | --------------------- | ----- |
 * | 2M     | 1 s                 | 0.75M–0.77M         | 1.76M–2.53M           | 0.33–0.53 |
 * | 5M     | 1 s                 | 0.58M–0.99M         | 1.36M–3.66M           | 0.28–0.49 |
 * | 5M     | final only          | 1.30M               | 3.82M                 | 0.36  |
 *
 * Below half of the loop: every bid (92% of the events) crosses the keyed
 * edge into the two-input operator and reads keyed state, and the state
 * (about 30 MiB at 5M events, mostly the category-10 auctions' padding) is
 * copied into every checkpoint. The loop keeps two `Map`s and no copies.
 *
 * @module
 */

import {
  type Collector,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type ListState,
  ListStateDescriptor,
  OutputTag,
  type ProcessContext,
  type RuntimeContext,
  type SingleOutputStreamOperator,
  type ValueState,
  ValueStateDescriptor,
} from "../../mod.ts";
import type { Auction, Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import type { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";

/** q20's auction category. */
export const Q20_CATEGORY = 10;

/** q20's output row: the bid's fields, then the auction's (Flink's column order). */
export interface Q20Row {
  /** Auction id. */
  readonly auction: number;
  /** Bidder id. */
  readonly bidder: number;
  /** Bid price. */
  readonly price: number;
  /** Bid channel. */
  readonly channel: string;
  /** Bid URL. */
  readonly url: string;
  /** The bid's event time, ms. */
  readonly bidDateTime: number;
  /** The bid's padding. */
  readonly bidExtra: string;
  /** Auction item name. */
  readonly itemName: string;
  /** Auction description. */
  readonly description: string;
  /** Auction initial bid. */
  readonly initialBid: number;
  /** Auction reserve. */
  readonly reserve: number;
  /** The auction's event time, ms. */
  readonly auctionDateTime: number;
  /** When the auction expires, ms. */
  readonly expires: number;
  /** Seller id. */
  readonly seller: number;
  /** Auction category (always {@linkcode Q20_CATEGORY}). */
  readonly category: number;
  /** The auction's padding. */
  readonly auctionExtra: string;
}

/** q20's row of `bid` and its auction `a`. */
export function q20Row(bid: Bid, a: Auction): Q20Row {
  return {
    auction: bid.auction,
    bidder: bid.bidder,
    price: bid.price,
    channel: bid.channel,
    url: bid.url,
    bidDateTime: bid.dateTime,
    bidExtra: bid.extra,
    itemName: a.itemName,
    description: a.description,
    initialBid: a.initialBid,
    reserve: a.reserve,
    auctionDateTime: a.dateTime,
    expires: a.expires,
    seller: a.seller,
    category: a.category,
    auctionExtra: a.extra,
  };
}

/**
 * q20's join for one auction id (the key), Flink's `KeyedCoProcessFunction`:
 * input 1 the bids, input 2 the auctions (see the module docs for the
 * state).
 */
export class Q20Join implements KeyedCoProcessFunction<number, Bid, Auction, Q20Row> {
  /** The auction when of category 10; `false` when of another; unset before it arrives. */
  private auction!: ValueState<Auction | false>;
  /** Bids that arrived before their auction. */
  private pending!: ListState<Bid>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.auction = ctx.getState(new ValueStateDescriptor<Auction | false>("auction"));
    this.pending = ctx.getListState(new ListStateDescriptor<Bid>("pending-bids"));
  }

  /** Joins a bid with its auction, or keeps it until the auction arrives. */
  processElement1(bid: Bid, _ctx: KeyedProcessContext<number>, out: Collector<Q20Row>): void {
    const a = this.auction.value();
    if (a === undefined) this.pending.add(bid);
    else if (a !== false) out.collect(q20Row(bid, a));
  }

  /** Keeps a category-10 auction and emits the bids that waited for it; drops them otherwise. */
  processElement2(a: Auction, _ctx: KeyedProcessContext<number>, out: Collector<Q20Row>): void {
    const keep = a.category === Q20_CATEGORY;
    this.auction.update(keep ? a : false);
    const waiting = this.pending.get();
    if (waiting.length === 0) return;
    if (keep) { for (const bid of waiting) out.collect(q20Row(bid, a)); }
    this.pending.clear();
  }
}

/** q20's side output of the auctions (the bids are the main output). */
export const Q20_AUCTIONS: OutputTag<Auction> = new OutputTag<Auction>("q20-auctions");

/** q20 over `events`: one pass splits bids and auctions, then the keyed connected join. */
export function q20Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Q20Row> {
  const bids = events.process<Bid>({
    processElement(e: NexmarkEvent, ctx: ProcessContext, out: Collector<Bid>) {
      if (e.type === "bid") out.collect(e.bid);
      else if (e.type === "auction") ctx.output(Q20_AUCTIONS, e.auction);
    },
  }).name("q20-split");
  return bids.connect(bids.getSideOutput(Q20_AUCTIONS))
    .keyBy((b) => b.auction, (a) => a.id)
    .process(new Q20Join())
    .uid("q20-join");
}

/**
 * q20's hand-written baseline over events `0..n-1` of `gen`: the same join
 * with a `Map` of auctions (or `false`) and a `Map` of waiting bids.
 * @returns the number of rows.
 */
export function q20Loop(gen: NexmarkGenerator, n: number): number {
  const auctions = new Map<number, Auction | false>();
  const pending = new Map<number, Bid[]>();
  let count = 0;
  let sink = 0;
  for (let i = 0; i < n; i++) {
    const e = gen.event(i);
    if (e.type === "bid") {
      const a = auctions.get(e.bid.auction);
      if (a === undefined) {
        const waiting = pending.get(e.bid.auction);
        if (waiting === undefined) pending.set(e.bid.auction, [e.bid]);
        else waiting.push(e.bid);
      } else if (a !== false) {
        sink += q20Row(e.bid, a).price;
        count++;
      }
    } else if (e.type === "auction") {
      const a = e.auction;
      const keep = a.category === Q20_CATEGORY;
      auctions.set(a.id, keep ? a : false);
      const waiting = pending.get(a.id);
      if (waiting === undefined) continue;
      if (keep) {
        for (const bid of waiting) {
          sink += q20Row(bid, a).price;
          count++;
        }
      }
      pending.delete(a.id);
    }
  }
  return sink < 0 ? -1 : count;
}
