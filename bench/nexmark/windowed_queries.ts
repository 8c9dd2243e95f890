/**
 * The windowed Nexmark queries q5, q7, q8 and q11 as Weir DataStream jobs, after
 * the SQL of Flink's Nexmark repository (`nexmark/nexmark`,
 * `nexmark-flink/src/main/resources/queries/`):
 *
 * - **q5** (hot items): per `HOP(dateTime, 2 s, 10 s)` window, the
 *   auctions with the most bids: `SELECT auction, num` from the per-auction
 *   counts of each window joined with the window's maximum count,
 *   `num >= maxn`.
 * - **q7** (highest bid): per `TUMBLE(dateTime, 10 s)` window, the bids
 *   whose price is the window's maximum: `(auction, bidder, price, dateTime,
 *   extra)`.
 * - **q8** (monitor new users): persons and auctions in the same
 *   `TUMBLE(dateTime, 10 s)` window with `person.id = auction.seller`:
 *   `(id, name, starttime)`, one row per person and window.
 * - **q11** (user sessions, not in the original suite): per bidder and
 *   `SESSION(dateTime, 10 s)`, `(bidder, count(*), starttime, endtime)`.
 *
 * Windows are Flink's: aligned to the epoch, `[start, start + size)`. The
 * rows and the digest the harness compares with the baseline are in
 * `windowed_rows.ts`; the functions in `windowed_functions.ts`.
 *
 * ## Shapes
 *
 * Each job scales out: no stage runs at parallelism 1 (no `windowAll`).
 *
 * - **q5**, by panes (Li et al., "No pane, no gain", 2005; Flink SQL's
 *   window slicing): the bids' auction ids, keyed by auction, counted per
 *   2 s tumbling pane; the pane counts, keyed by auction again, summed per
 *   10 s sliding window (a pane count carries the pane's last instant, so it
 *   falls in exactly the five windows holding the pane); then keyed by
 *   window end, the auctions at the window's maximum count. A bid touches
 *   one window, not five.
 * - **q7**, local-global: a running-maximum pre-filter chained to the source
 *   ({@linkcode Q7RunningMaxFilter}); keyed by auction, each auction's
 *   highest bids per 10 s tumbling window; keyed by window end, the bids at
 *   the window's highest price. Without the pre-filter every bid would
 *   cross the shuffle, and every auction's top bids (with their `extra`)
 *   would sit in window state and in every checkpoint until the window
 *   fires; with it, a handful of bids per window and subtask do.
 * - **q8**: a window coGroup (Flink's `CoGroupedStreams`, the window join
 *   that hands over both sides' groups) of the persons `[id, name,
 *   dateTime]` and the auctions' sellers, where person id equals seller,
 *   per 10 s tumbling window: a row when both groups are non-empty. That is
 *   the SQL's join of the window's distinct persons with its distinct
 *   sellers; `join` (the pairwise inner join) would emit one row per
 *   auction of the person instead. The window keeps every person and
 *   seller of the window in list state (Flink's window join does the same),
 *   copied into every checkpoint: measured against its loop (2 shared,
 *   loaded cores, checkpoint every 1 s), 0.51–0.55 of its events per CPU
 *   second at 2M events, 0.44–0.52 at 5M and 0.445 at 10M (the aggregate it
 *   replaced, one accumulator per person and window: 0.555 at 5M).
 * - **q11**: the bids' bidder ids, keyed by bidder, counted per event-time
 *   session window (gap 10 s; sessions merge with their state and timers).
 *
 * Only the fields a query needs cross a shuffle (q5: the auction id, its
 * time travelling as the record's timestamp; q7: the row's five fields;
 * q8: persons as `[id, name, dateTime]`, sellers as numbers, each tagged with its side; q11: the
 * bidder id), as flat tuples where they
 * can be, which the data plane encodes column by column.
 *
 * ## How much event time a run covers
 *
 * The generator's default is 1 µs of event time between events (a million
 * events per second of event time; Flink's Nexmark suite generates 10M per
 * second), so the harness's 5M events span 5 s: q7 and q8 see one 10 s
 * window, q5 seven sliding windows (those holding some of the 5 s) and q11
 * one session per bidder. Windows stay open for the whole run, so their
 * state grows until the end of input fires them, and every checkpoint
 * carries all of it.
 *
 * ## Event time
 *
 * Timestamps are the events' `dateTime`, with Flink's monotonous-timestamps
 * watermarks ({@linkcode nexmarkEventTimeEvents}); no record is late, so
 * the jobs' rows equal the baseline's, which sees every event.
 *
 * ## Simplification (q7)
 *
 * Flink's q7 joins every bid with the window maxima on
 * `B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime`,
 * where `B1.dateTime` is the window's end: both bounds are inclusive, so a
 * bid at exactly a window's end (the first instant of the next window)
 * whose price equals the previous window's maximum is a row of both
 * windows. Here, as in Beam's original Query7, a window's rows are its own
 * bids (`[start, end)`) at its maximum price; the baseline does the same.
 *
 * ## Simplification (q11)
 *
 * A bid exactly 10 s after its bidder's last one touches the session, and
 * the baseline merges it (as Flink merges touching session windows). The
 * engine merges it only if the session has not fired yet: when the
 * watermark already reached the session's last instant, the bid starts a
 * new session (so in Flink). Which happens depends on when watermarks are
 * emitted, so the two outputs can differ for such a bid. With the
 * generator's default 1 µs between events, the harness's runs of up to 10M
 * events span less than 10 s of event time, so no session ends before the
 * input does; the smoke test checks that its events hold no such bid.
 *
 * @module
 */

import {
  type Collector,
  type DataStream,
  EventTimeSessionWindows,
  OutputTag,
  type ProcessContext,
  type SingleOutputStreamOperator,
  SlidingEventTimeWindows,
  type StreamExecutionEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../../mod.ts";
import type { NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { NexmarkSource, type NexmarkSourceOptions } from "../../connectors/datagen/nexmark/mod.ts";
import {
  COUNT_BIDS,
  Q11Session,
  Q5_TOP,
  Q5WindowCount,
  Q7_TOP,
  Q7RunningMaxFilter,
  Q7WindowTop,
  Q8_NEW_SELLER,
  type Q8Person,
  SUM_COUNTS,
  TOP_BIDS,
  WindowTopSelect,
} from "./windowed_functions.ts";
import {
  Q11_GAP_MS,
  type Q11Row,
  Q5_SIZE_MS,
  Q5_SLIDE_MS,
  type Q5Row,
  Q7_SIZE_MS,
  type Q7Row,
  Q8_SIZE_MS,
  type Q8Row,
  type WindowedQueryName,
  type WindowedRow,
} from "./windowed_rows.ts";

/**
 * The Nexmark events of `source` as a stream with event time: each event's
 * `dateTime` (the source's timestamp) and Flink's monotonous-timestamps
 * watermarks (the largest timestamp seen minus 1 ms).
 *
 * Nothing is late: each split of the source generates its event numbers in
 * increasing order, whose times never decrease (see
 * `connectors/datagen/nexmark/generator.ts`), and the watermark of a source
 * subtask stays behind every split it reads; downstream, an operator's
 * watermark is the minimum over its inputs. So every window holds all its
 * events when it fires, as the baseline's do.
 *
 * @throws {RangeError} when `source` is invalid (see `NexmarkSource`).
 */
export function nexmarkEventTimeEvents(
  env: StreamExecutionEnvironment,
  source: NexmarkSourceOptions,
): SingleOutputStreamOperator<NexmarkEvent> {
  return env.fromSource(
    new NexmarkSource(source),
    WatermarkStrategy.forMonotonousTimestamps<NexmarkEvent>(),
    "nexmark",
  ).uid("nexmark");
}

/** q5 over `events` (see the module docs: panes, sliding sums, the maximum per window). */
export function q5Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Q5Row> {
  return events
    .flatMap<number>((e: NexmarkEvent, out) => {
      if (e.type === "bid") out.collect(e.bid.auction);
    })
    .name("q5-bid-auction")
    .keyBy((auction) => auction)
    .window(TumblingEventTimeWindows.of(Q5_SLIDE_MS))
    .aggregate(COUNT_BIDS)
    .uid("q5-pane-counts")
    .keyBy((pane) => pane[0])
    .window(SlidingEventTimeWindows.of(Q5_SIZE_MS, Q5_SLIDE_MS))
    .aggregate(SUM_COUNTS, new Q5WindowCount())
    .uid("q5-window-counts")
    .keyBy(Q5_TOP.end)
    .process(new WindowTopSelect(Q5_TOP))
    .uid("q5-hottest");
}

/** q7 over `events` (see the module docs: running-maximum pre-filter, per auction, per window). */
export function q7Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Q7Row> {
  return events
    .flatMap(new Q7RunningMaxFilter(Q7_SIZE_MS))
    .name("q7-running-max")
    .keyBy((row) => row.auction)
    .window(TumblingEventTimeWindows.of(Q7_SIZE_MS))
    .aggregate(TOP_BIDS, new Q7WindowTop())
    .uid("q7-top-per-auction")
    .keyBy(Q7_TOP.end)
    .process(new WindowTopSelect(Q7_TOP))
    .uid("q7-highest");
}

/** q8's side output of the auctions' sellers (the persons are the main output). */
export const Q8_SELLERS: OutputTag<number> = new OutputTag<number>("q8-sellers");

/** q8 over `events` (see the module docs: a window coGroup of persons and sellers). */
export function q8Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Q8Row> {
  // One pass over the events: persons on the main output, sellers on a side output.
  const persons = events
    .process<Q8Person>({
      processElement(e: NexmarkEvent, ctx: ProcessContext, out: Collector<Q8Person>) {
        if (e.type === "person") out.collect([e.person.id, e.person.name, e.person.dateTime]);
        else if (e.type === "auction") ctx.output(Q8_SELLERS, e.auction.seller);
      },
    })
    .name("q8-split");
  return persons.coGroup(persons.getSideOutput(Q8_SELLERS))
    .where((p) => p[0])
    .equalTo((seller) => seller)
    .window(TumblingEventTimeWindows.of(Q8_SIZE_MS))
    .apply(Q8_NEW_SELLER)
    .uid("q8-new-sellers");
}

/** q11 over `events` (see the module docs: bids keyed by bidder, counted per session). */
export function q11Job(events: DataStream<NexmarkEvent>): SingleOutputStreamOperator<Q11Row> {
  return events
    .flatMap<number>((e: NexmarkEvent, out) => {
      if (e.type === "bid") out.collect(e.bid.bidder);
    })
    .name("q11-bid-bidder")
    .keyBy((bidder) => bidder)
    .window(EventTimeSessionWindows.withGap(Q11_GAP_MS))
    .aggregate(COUNT_BIDS, new Q11Session())
    .uid("q11-sessions");
}

/** Each windowed query's job: its rows over a stream of events. */
export const WINDOWED_JOBS: {
  readonly [Q in WindowedQueryName]: (
    events: DataStream<NexmarkEvent>,
  ) => SingleOutputStreamOperator<WindowedRow<Q>>;
} = { q5: q5Job, q7: q7Job, q8: q8Job, q11: q11Job };
