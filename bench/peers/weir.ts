/**
 * The side-by-side's queries on Weir: the jobs of `../nexmark/queries.ts`
 * (the same source, operators and per-record functions; q3's
 * {@linkcode Q3Join} and dedup's {@linkcode DedupFirst} on keyed state)
 * plus the keyed count ({@linkcode CountPerKey}), each ending in the
 * exactly-once blackhole ({@linkcode CountingTwoPhaseCommitSink}) summing
 * {@linkcode ROW_HASH} over the records of committed transactions only.
 *
 * Local mode (the job runs in this process, one engine thread), parallelism
 * 1, a checkpoint every second (Flink's `enableCheckpointing(1000)`) to a
 * temporary directory, exactly-once. Time is that of `execute()`: building
 * the JobGraph, deployment, every checkpoint and the final checkpoint with its
 * commit.
 *
 * @module
 */

import {
  type Collector,
  type DataStream,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type ProcessContext,
  type RuntimeContext,
  type StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../../mod.ts";
import { NexmarkSource } from "../../connectors/datagen/nexmark/mod.ts";
import type { Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import {
  CountingTwoPhaseCommitSink,
  DedupFirst,
  dedupKey,
  newTally,
  q1Convert,
  q2Keep,
  Q3_AUCTIONS,
  q3Auction,
  type Q3Input,
  Q3Join,
  q3Key,
  q3Person,
} from "../nexmark/queries.ts";
import { StreamExecutionEnvironment as Env } from "../../mod.ts";
import { type CountRow, type Digest, type PeerQueryName, type Q2Row, ROW_HASH } from "./records.ts";

/**
 * The keyed count's operator: the number of bids of the current key so
 * far, in a `ValueState` (Flink's keyed `ValueState` running count), emitted
 * as `(auction, count)` with every bid.
 */
export class CountPerKey implements KeyedProcessFunction<number, Bid, CountRow> {
  private count!: ValueState<number>;

  /** Registers the keyed state. */
  open(ctx: RuntimeContext): void {
    this.count = ctx.getState(new ValueStateDescriptor<number>("count"));
  }

  /** Adds one to the key's count and emits `(auction, count)`. */
  processElement(bid: Bid, _ctx: KeyedProcessContext<number>, out: Collector<CountRow>): void {
    const c = (this.count.value() ?? 0) + 1;
    this.count.update(c);
    out.collect([bid.auction, c]);
  }
}

function events(env: StreamExecutionEnvironment, n: number): DataStream<NexmarkEvent> {
  return env.fromSource(
    new NexmarkSource({ events: n }),
    WatermarkStrategy.noWatermarks(),
    "nexmark",
  )
    .uid("nexmark");
}

function bids(env: StreamExecutionEnvironment, n: number): DataStream<Bid> {
  return events(env, n).flatMap<Bid>((e: NexmarkEvent, out) => {
    if (e.type === "bid") out.collect(e.bid);
  }).name("bid");
}

type Job = (env: StreamExecutionEnvironment, n: number, sink: CountingTwoPhaseCommitSink) => void;

const JOBS: Readonly<Record<PeerQueryName, Job>> = {
  q1: (env, n, sink) => {
    bids(env, n).map(q1Convert).name("q1-convert").sinkTo(sink).uid("blackhole");
  },
  q2: (env, n, sink) => {
    bids(env, n).filter(q2Keep).map((b): Q2Row => [b.auction, b.price]).name("q2-project")
      .sinkTo(sink).uid("blackhole");
  },
  q3: (env, n, sink) => {
    // As bench/nexmark/queries.ts: persons on the main output, auctions on a side output, connected.
    const persons = events(env, n).process<Q3Input>({
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
      .sinkTo(sink).uid("blackhole");
  },
  dedup: (env, n, sink) => {
    bids(env, n).keyBy(dedupKey).process(new DedupFirst()).uid("dedup")
      .sinkTo(sink).uid("blackhole");
  },
  count: (env, n, sink) => {
    bids(env, n).keyBy((b) => b.auction).process(new CountPerKey()).uid("count")
      .sinkTo(sink).uid("blackhole");
  },
};

/** What a Weir run produced. */
export interface WeirRun extends Digest {
  /** Checkpoints completed (the final one included). */
  readonly checkpoints: number;
}

/**
 * Runs `query` on Weir in local mode over events `0..events-1`, exactly-once,
 * checkpointing every `checkpointInterval` ms (default 1000).
 * @returns the digest of the committed records and the checkpoints completed.
 * @throws {Error} when the sink received records it did not commit (naming
 *   both counts), or whatever the job fails with.
 */
export async function runWeir(
  query: PeerQueryName,
  events: number,
  checkpointInterval = 1000,
): Promise<WeirRun> {
  const directory = await Deno.makeTempDir({ prefix: "weir-peers-" });
  try {
    const env = Env.getExecutionEnvironment();
    env.setParallelism(1);
    env.enableCheckpointing(checkpointInterval, { directory });
    const tally = newTally();
    const hash = ROW_HASH[query] as (row: unknown) => number;
    JOBS[query](env, events, new CountingTwoPhaseCommitSink(tally, undefined, hash));
    const result = await env.execute(`peers-${query}`);
    if (tally.committed !== tally.records) {
      throw new Error(
        `peers ${query} on Weir: the sink received ${tally.records} records but committed ` +
          `${tally.committed} (${tally.transactions} transactions)`,
      );
    }
    return {
      count: tally.committed,
      checksum: tally.checksum,
      checkpoints: result.checkpoints.completed,
    };
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}
