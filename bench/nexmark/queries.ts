/**
 * Nexmark queries q0, q1, q2, q3, q18-style dedup, q20 and the windowed q5,
 * q7, q8 and q11 as Weir DataStream jobs, each ending in a counting blackhole
 * sink (Flink's `blackhole` connector, which the Nexmark suite uses as every
 * query's sink).
 *
 * The queries follow the SQL of Flink's Nexmark repository
 * (`nexmark/nexmark`, `nexmark-flink/src/main/resources/queries/`), where
 * `bid`, `person` and `auction` are views of the one generated event stream:
 *
 * - **q0** (pass-through): `SELECT auction, bidder, price, dateTime, extra FROM bid`
 *   — bids only, as Flink's q0 (not every event).
 * - **q1** (currency conversion): `SELECT auction, bidder, 0.908 * price AS price,
 *   dateTime, extra FROM bid`.
 * - **q2** (selection): `SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0`.
 * - **q3** (local item suggestion): `SELECT P.name, P.city, P.state, A.id FROM auction A
 *   JOIN person P ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR','ID','CA')`,
 *   an incremental (non-windowed) inner join: the persons and the auctions are
 *   connected (`connect`), keyed by person id (`seller` for auctions), and meet
 *   in one {@linkcode Q3Join}, a `KeyedCoProcessFunction` whose two inputs share
 *   the key's state.
 * - **dedup** (Flink's keep-first-row deduplication, on q18's key): `ROW_NUMBER() OVER
 *   (PARTITION BY bidder, auction ORDER BY PROCTIME() ASC) = 1`, an append stream: the
 *   first bid to arrive for each (bidder, auction) is emitted, later ones are dropped
 *   ({@linkcode DedupFirst}). Its output count is the number of distinct (bidder, auction)
 *   keys whatever the arrival order, so it is the same at every parallelism. (q18 itself
 *   keeps the *latest* bid, `ORDER BY dateTime DESC`; as an append stream, "emit when
 *   newer than the kept one", its count depends on the order in which a key's bids
 *   arrive, which parallelism > 1 does not fix, so the harness could not check it
 *   exactly.)
 * - **q20** (expand bid with auction): `SELECT ... FROM bid B INNER JOIN auction A
 *   ON B.auction = A.id WHERE A.category = 10`, a regular join of bids and auctions
 *   connected and keyed by auction id, in `q20.ts` with its baseline.
 * - **q5, q7, q8, q11** (hot items, highest bid, new users, user sessions):
 *   event-time windows, in `windowed_queries.ts`; their baselines are in
 *   `windowed_baseline.ts`.
 * - **q4, q6** (average closing price per category, average selling price
 *   per seller): updating results, as retract changelogs of `Row`s, in
 *   `queries_q4_q6.ts`; their baselines (the final tables) are in
 *   `q4_q6_baseline.ts`.
 *
 * The per-record logic ({@linkcode q1Convert}, {@linkcode q2Keep},
 * {@linkcode q3Person}, {@linkcode q3Auction}, {@linkcode Q3Join},
 * {@linkcode DedupFirst}) is shared with the hand-written baseline
 * (`baseline.ts`) where it is a pure function.
 *
 * ## Invariant
 *
 * Every query's output count is a function of the events alone (not of
 * arrival order, parallelism or checkpoint timing), so the harness
 * (`main.ts`) checks the engine's committed count against the baseline's for
 * equality. The windowed queries' sinks also sum a hash of each record
 * (`windowedRowHash`), so the harness compares their committed output with
 * the baseline's record by record (`windowed_rows.ts`). The updating queries'
 * (q4, q6) changelogs differ with arrival order, so their sinks digest the
 * table the changelog folds to (`net` rows, signed hashes: {@linkcode RecordDigest}),
 * which the harness compares with the baseline's final table.
 *
 * ## Adding a query
 *
 * Add its name to {@linkcode QUERY_NAMES}, its job to {@linkcode QUERIES}
 * and its loop to `LOOPS` in `baseline.ts` (the type checker asks for both);
 * a windowed query goes to `windowed_rows.ts`, `windowed_queries.ts` and
 * `windowed_baseline.ts` instead, an updating one to `queries_q4_q6.ts` and
 * `q4_q6_baseline.ts`. Its SQL version goes to `sql/<name>.sql`, with the
 * mapping of its records to the SQL's columns in `sql_queries.ts`.
 * The harness, `--all`, the chart and the smoke test (`main_test.ts`) pick
 * it up from `QUERY_NAMES`.
 *
 * @module
 */

import {
  type Collector,
  type DataStream,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type ListState,
  ListStateDescriptor,
  OutputTag,
  type ProcessContext,
  type Row,
  type RuntimeContext,
  type SingleOutputStreamOperator,
  type SinkInitContext,
  type StreamExecutionEnvironment,
  type TwoPhaseCommitSink,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../../mod.ts";
import type { SinkFunction } from "../../runtime/api/sink.ts";
import type { Auction, Bid, NexmarkEvent, Person } from "../../connectors/datagen/nexmark/model.ts";
import { NexmarkSource, type NexmarkSourceOptions } from "../../connectors/datagen/nexmark/mod.ts";
import { wallClockMs } from "../jobs/_report.ts";
import { nexmarkEventTimeEvents, WINDOWED_JOBS } from "./windowed_queries.ts";
import { q20Job } from "./q20.ts";
import { q4Job, q6Job, rowSign, signedRowHash } from "./queries_q4_q6.ts";
import { UPDATING_QUERY_NAMES } from "./q4_q6_baseline.ts";
import { WINDOWED_QUERY_NAMES, type WindowedQueryName, windowedRowHash } from "./windowed_rows.ts";

/** The queries, by name. */
export const QUERY_NAMES = [
  "q0",
  "q1",
  "q2",
  "q3",
  "dedup",
  "q20",
  ...WINDOWED_QUERY_NAMES,
  ...UPDATING_QUERY_NAMES,
] as const;
/** A query's name. */
export type QueryName = typeof QUERY_NAMES[number];

/** Whether `name` is one of {@linkcode QUERY_NAMES}. */
export function isQueryName(name: string): name is QueryName {
  return (QUERY_NAMES as readonly string[]).includes(name);
}

/** q1's output: a bid with its price converted (cents × 0.908, a float). */
export interface Q1Bid {
  /** Auction id. */
  readonly auction: number;
  /** Bidder id. */
  readonly bidder: number;
  /** Converted price. */
  readonly price: number;
  /** Event time, ms since the epoch. */
  readonly dateTime: number;
  /** Padding, passed through. */
  readonly extra: string;
}

/** q1's projection: Flink's `0.908 * price` (dollars to euros in the original suite). */
export function q1Convert(bid: Bid): Q1Bid {
  return {
    auction: bid.auction,
    bidder: bid.bidder,
    price: bid.price * 0.908,
    dateTime: bid.dateTime,
    extra: bid.extra,
  };
}

/** q2's predicate: `MOD(auction, 123) = 0` (Flink's modulus). */
export function q2Keep(bid: Bid): boolean {
  return bid.auction % 123 === 0;
}

/** One side of q3's join, already filtered and projected (what crosses the keyBy). */
export type Q3Input =
  | {
    readonly side: "person";
    readonly id: number;
    readonly name: string;
    readonly city: string;
    readonly state: string;
  }
  | { readonly side: "auction"; readonly id: number; readonly seller: number };

/** q3's output row `(name, city, state, auction id)`. */
export type Q3Row = readonly [name: string, city: string, state: string, auction: number];

const Q3_STATES: ReadonlySet<string> = new Set(["OR", "ID", "CA"]);
/** q3's auction category. */
export const Q3_CATEGORY = 10;

/** q3's person filter and projection: persons in OR, ID or CA; else `undefined`. */
export function q3Person(p: Person): Q3Input | undefined {
  return Q3_STATES.has(p.state)
    ? { side: "person", id: p.id, name: p.name, city: p.city, state: p.state }
    : undefined;
}

/** q3's auction filter and projection: auctions of category 10; else `undefined`. */
export function q3Auction(a: Auction): Q3Input | undefined {
  return a.category === Q3_CATEGORY ? { side: "auction", id: a.id, seller: a.seller } : undefined;
}

/** q3's side output of the auctions it keeps (the persons are the main output). */
export const Q3_AUCTIONS: OutputTag<Q3Input> = new OutputTag<Q3Input>("q3-auctions");

/** q3's join key: the person's id, or the auction's seller. */
export function q3Key(r: Q3Input): number {
  return r.side === "person" ? r.id : r.seller;
}

/**
 * q3's incremental inner join for one person id (the key), Flink's
 * `KeyedCoProcessFunction`: input 1 is the persons, input 2 the auctions.
 * The person (at most one per id) is kept in a `ValueState`; auctions that
 * arrive before their seller wait in a `ListState` and are emitted, then
 * dropped, when the person arrives. Later auctions join at once. Either
 * arrival order gives the same rows, as Flink's regular join does.
 */
export class Q3Join implements KeyedCoProcessFunction<number, Q3Input, Q3Input, Q3Row> {
  private person!: ValueState<readonly [name: string, city: string, state: string]>;
  private pending!: ListState<number>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.person = ctx.getState(new ValueStateDescriptor("person"));
    this.pending = ctx.getListState(new ListStateDescriptor<number>("pending-auctions"));
  }

  /** Keeps a person and emits the auctions that waited for it. */
  processElement1(r: Q3Input, _ctx: KeyedProcessContext<number>, out: Collector<Q3Row>): void {
    if (r.side !== "person") {
      throw new TypeError(`q3: input 1 takes persons, got an auction ${r.id}`);
    }
    this.person.update([r.name, r.city, r.state]);
    const waiting = this.pending.get();
    if (waiting.length > 0) {
      for (const id of waiting) out.collect([r.name, r.city, r.state, id]);
      this.pending.clear();
    }
  }

  /** Joins an auction with its seller, or keeps it until the seller arrives. */
  processElement2(r: Q3Input, _ctx: KeyedProcessContext<number>, out: Collector<Q3Row>): void {
    if (r.side !== "auction") {
      throw new TypeError(`q3: input 2 takes auctions, got a person ${r.id}`);
    }
    const p = this.person.value();
    if (p === undefined) this.pending.add(r.id);
    else out.collect([p[0], p[1], p[2], r.id]);
  }
}

/** dedup's key: `(bidder, auction)`. */
export function dedupKey(bid: Bid): [number, number] {
  return [bid.bidder, bid.auction];
}

/**
 * Keep-first-row deduplication: emits the first bid to arrive for each
 * (bidder, auction) and drops the later ones, remembering in a
 * `ValueState` that the key was seen. One output record per distinct key,
 * in any arrival order.
 */
export class DedupFirst implements KeyedProcessFunction<[number, number], Bid, Bid> {
  private seen!: ValueState<true>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.seen = ctx.getState(new ValueStateDescriptor<true>("seen"));
  }

  /** Emits `bid` when it is the first of its key, and marks the key seen. */
  processElement(
    bid: Bid,
    _ctx: KeyedProcessContext<[number, number]>,
    out: Collector<Bid>,
  ): void {
    if (this.seen.value() !== undefined) return;
    this.seen.update(true);
    out.collect(bid);
  }
}

/**
 * What a counting sink counted. In local mode every subtask of the sink
 * shares one tally (function objects are copied shallowly per subtask, so
 * they share the object); in cluster mode each slot thread has its own and
 * reports it through `reportDir`.
 */
export interface CountTally {
  /** Records the sink received. */
  records: number;
  /** Records of committed transactions (two-phase-commit sink only). */
  committed: number;
  /** Transactions committed. */
  transactions: number;
  /**
   * With a record hash (the windowed queries): the sum mod 2^32 of the
   * hashes of the committed records (of the records received, for the
   * simple sink); else 0.
   */
  checksum: number;
  /** Wall-clock time ({@linkcode wallClockMs}) of the first record, ms; 0 before it. */
  firstMs: number;
  /** Wall-clock time of the sink's close, ms; 0 before it. */
  closedMs: number;
  /**
   * Records of committed transactions, each counted with its sign (see
   * {@linkcode RecordDigest}; +1 without one): for a changelog, the number
   * of rows of the table it folds to.
   */
  net: number;
  /** Ids of committed transactions, so a repeated commit (restore) counts once. */
  readonly committedIds: Set<string>;
}

/**
 * How a sink digests each record into its tally's `checksum` and `net`:
 * a 32-bit hash and, for a changelog, a sign (+1 for `+I`/`+U`, -1 for
 * `-U`/`-D`), so the digest is that of the table the changelog folds to.
 * A bare function is a hash with sign +1.
 */
export type RecordDigest =
  | ((record: unknown) => number)
  | { readonly hash: (record: unknown) => number; readonly sign: (record: unknown) => 1 | -1 };

function hashOf(digest: RecordDigest | undefined): ((record: unknown) => number) | undefined {
  return digest === undefined ? undefined : typeof digest === "function" ? digest : digest.hash;
}

function signOf(digest: RecordDigest | undefined): ((record: unknown) => 1 | -1) | undefined {
  return digest === undefined || typeof digest === "function" ? undefined : digest.sign;
}

/** An empty {@linkcode CountTally}. */
export function newTally(): CountTally {
  return {
    records: 0,
    committed: 0,
    transactions: 0,
    checksum: 0,
    firstMs: 0,
    closedMs: 0,
    net: 0,
    committedIds: new Set(),
  };
}

/** A blackhole transaction: its id and the records it took. */
export interface CountTxn {
  /** `<jobId>/<uid>/<subtask>/<attempt>/<n>`. */
  readonly id: string;
  /** Records invoked into it. */
  count: number;
  /** Their signs summed (see {@linkcode RecordDigest}). */
  net: number;
  /** Sum mod 2^32 of their hashes (0 without a record hash). */
  checksum: number;
}

/**
 * The exactly-once blackhole: a {@linkcode TwoPhaseCommitSink} whose
 * transactions count records; `commit` adds a transaction's count to the
 * tally's `committed` once (it is idempotent, as restore requires). Each
 * checkpoint pre-commits the open transaction, so the sink takes part in
 * every checkpoint like a real transactional sink, minus the I/O.
 */
export class CountingTwoPhaseCommitSink implements TwoPhaseCommitSink<unknown, CountTxn> {
  /** Always `"two-phase-commit"`. */
  readonly kind = "two-phase-commit";
  private readonly tally: CountTally;
  private readonly onClose: ((tally: CountTally, subtask: number) => void) | undefined;
  private readonly hash: ((record: unknown) => number) | undefined;
  private readonly sign: ((record: unknown) => 1 | -1) | undefined;
  private next = 0;
  private subtask = 0;

  /**
   * @param tally where counts go.
   * @param onClose called at `close()` with the tally (cluster mode writes a report there).
   * @param digest a 32-bit hash of a record, summed into the tally's
   *   `checksum`, and its sign, summed into `net` (see {@linkcode RecordDigest}).
   */
  constructor(
    tally: CountTally,
    onClose?: (tally: CountTally, subtask: number) => void,
    digest?: RecordDigest,
  ) {
    this.tally = tally;
    this.onClose = onClose;
    this.hash = hashOf(digest);
    this.sign = signOf(digest);
  }

  /** Remembers the subtask index. */
  open(context: SinkInitContext): void {
    this.subtask = context.subtaskIndex;
  }

  /** A new, empty transaction. */
  beginTransaction(c: SinkInitContext): CountTxn {
    return {
      id: `${c.jobId}/${c.uid}/${c.subtaskIndex}/${c.attempt}/${this.next++}`,
      count: 0,
      net: 0,
      checksum: 0,
    };
  }

  /** Counts one record (and its hash) into `txn`. */
  invoke(txn: CountTxn, record: unknown): void {
    if (this.tally.records++ === 0) this.tally.firstMs = wallClockMs();
    txn.count++;
    txn.net += this.sign === undefined ? 1 : this.sign(record);
    if (this.hash !== undefined) txn.checksum = (txn.checksum + this.hash(record)) >>> 0;
  }

  /** Nothing to flush: the count travels in the checkpointed transaction handle. */
  preCommit(): void {}

  /** Adds `txn`'s count to the committed total, once per transaction id. */
  commit(txn: CountTxn): void {
    if (this.tally.committedIds.has(txn.id)) return;
    this.tally.committedIds.add(txn.id);
    this.tally.committed += txn.count;
    this.tally.net += txn.net;
    this.tally.checksum = (this.tally.checksum + txn.checksum) >>> 0;
    this.tally.transactions++;
  }

  /** Drops `txn`'s count. */
  abort(): void {}

  /** Stamps the close time and hands the tally to `onClose`. */
  close(): void {
    this.tally.closedMs = wallClockMs();
    this.onClose?.(this.tally, this.subtask);
  }
}

/** The at-least-once blackhole: a {@linkcode SinkFunction} counting records. */
export class CountingSink implements SinkFunction<unknown> {
  /** Always `"simple"`. */
  readonly kind = "simple";
  private readonly tally: CountTally;
  private readonly onClose: ((tally: CountTally, subtask: number) => void) | undefined;
  private readonly hash: ((record: unknown) => number) | undefined;
  private readonly sign: ((record: unknown) => 1 | -1) | undefined;
  private subtask = 0;

  /** Like {@linkcode CountingTwoPhaseCommitSink}'s constructor. */
  constructor(
    tally: CountTally,
    onClose?: (tally: CountTally, subtask: number) => void,
    digest?: RecordDigest,
  ) {
    this.tally = tally;
    this.onClose = onClose;
    this.hash = hashOf(digest);
    this.sign = signOf(digest);
  }

  /** Remembers the subtask index. */
  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
  }

  /** Counts one record (and its hash and sign). */
  invoke(record: unknown): void {
    if (this.tally.records++ === 0) this.tally.firstMs = wallClockMs();
    this.tally.net += this.sign === undefined ? 1 : this.sign(record);
    if (this.hash !== undefined) {
      this.tally.checksum = (this.tally.checksum + this.hash(record)) >>> 0;
    }
  }

  /** Stamps the close time and hands the tally to `onClose`. */
  close(): void {
    this.tally.closedMs = wallClockMs();
    this.onClose?.(this.tally, this.subtask);
  }
}

/** What a query job is built with. */
export interface QueryJobOptions {
  /** The generator source's options (events, rate, batch size, generator config). */
  readonly source: NexmarkSourceOptions;
  /** Where the sink counts. */
  readonly tally: CountTally;
  /** Two-phase-commit blackhole (default) or the simple counting sink. */
  readonly exactlyOnce?: boolean;
  /** Called by each sink subtask at `close()`. */
  readonly onSinkClose?: (tally: CountTally, subtask: number) => void;
  /**
   * How the sink digests each record, instead of the query's own (the
   * windowed queries' row hash, q4's and q6's signed changelog hash; none
   * for the others): the SQL comparison (`sql_queries.ts`) digests both
   * sides' rows alike.
   */
  readonly digest?: RecordDigest;
}

/** Builds a query's job on `env` (it does not execute it). */
export type QueryBuilder = (env: StreamExecutionEnvironment, options: QueryJobOptions) => void;

function events(
  env: StreamExecutionEnvironment,
  options: QueryJobOptions,
): SingleOutputStreamOperator<NexmarkEvent> {
  return env.fromSource(
    new NexmarkSource(options.source),
    WatermarkStrategy.noWatermarks(),
    "nexmark",
  ).uid("nexmark");
}

function bids(env: StreamExecutionEnvironment, options: QueryJobOptions) {
  return events(env, options).flatMap<Bid>((e: NexmarkEvent, out) => {
    if (e.type === "bid") out.collect(e.bid);
  }).name("bid");
}

function sink(options: QueryJobOptions, digest?: RecordDigest) {
  const d = options.digest ?? digest;
  return options.exactlyOnce === false
    ? new CountingSink(options.tally, options.onSinkClose, d)
    : new CountingTwoPhaseCommitSink(options.tally, options.onSinkClose, d);
}

const CHANGELOG_DIGEST: RecordDigest = {
  hash: (r) => signedRowHash(r as Row),
  sign: (r) => rowSign(r as Row),
};

/** A windowed query's job: event-time events, the query, a sink summing its rows' hashes. */
function windowed(query: WindowedQueryName): QueryBuilder {
  const job = WINDOWED_JOBS[query] as (events: DataStream<NexmarkEvent>) => DataStream<unknown>;
  const hash = windowedRowHash(query) as (record: unknown) => number;
  return (env, o) => {
    job(nexmarkEventTimeEvents(env, o.source)).sinkTo(sink(o, hash)).uid("blackhole");
  };
}

/** The queries' job builders, by name. */
export const QUERIES: Readonly<Record<QueryName, QueryBuilder>> = {
  q0: (env, o) => {
    bids(env, o).sinkTo(sink(o)).uid("blackhole");
  },
  q1: (env, o) => {
    bids(env, o).map(q1Convert).name("q1-convert").sinkTo(sink(o)).uid("blackhole");
  },
  q2: (env, o) => {
    bids(env, o).filter(q2Keep).map((b) => [b.auction, b.price] as const).name("q2-project")
      .sinkTo(sink(o)).uid("blackhole");
  },
  q3: (env, o) => {
    // One pass over the events: persons on the main output, auctions on a side output.
    const persons = events(env, o).process<Q3Input>({
      processElement(e: NexmarkEvent, ctx: ProcessContext, out: Collector<Q3Input>) {
        if (e.type === "person") {
          const p = q3Person(e.person);
          if (p !== undefined) out.collect(p);
        } else if (e.type === "auction") {
          const a = q3Auction(e.auction);
          if (a !== undefined) ctx.output(Q3_AUCTIONS, a);
        }
      },
    }).name("q3-split");
    persons.connect(persons.getSideOutput(Q3_AUCTIONS)).keyBy(q3Key, q3Key)
      .process(new Q3Join()).uid("q3-join")
      .sinkTo(sink(o)).uid("blackhole");
  },
  dedup: (env, o) => {
    bids(env, o).keyBy(dedupKey).process(new DedupFirst()).uid("dedup")
      .sinkTo(sink(o)).uid("blackhole");
  },
  q20: (env, o) => {
    q20Job(events(env, o)).sinkTo(sink(o)).uid("blackhole");
  },
  q4: (env, o) => {
    q4Job(nexmarkEventTimeEvents(env, o.source)).sinkTo(sink(o, CHANGELOG_DIGEST)).uid("blackhole");
  },
  q6: (env, o) => {
    q6Job(nexmarkEventTimeEvents(env, o.source)).sinkTo(sink(o, CHANGELOG_DIGEST)).uid("blackhole");
  },
  q5: windowed("q5"),
  q7: windowed("q7"),
  q8: windowed("q8"),
  q11: windowed("q11"),
};
