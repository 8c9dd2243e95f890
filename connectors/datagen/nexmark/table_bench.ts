/**
 * What the `nexmark` table connector costs over the DataStream source it
 * mirrors: reading 100 000 event numbers as `bid` rows (7 columns, the
 * `dateTime` as `TIMESTAMP(3)` text) through `NexmarkRowSource`'s reader,
 * against `NexmarkSource`'s reader emitting the events (the baseline, what
 * the DataStream queries read before their own `flatMap` to bids).
 *
 *     deno bench -A connectors/datagen/nexmark/table_bench.ts
 *
 * Measured on the project's 2-core machine under load 10-12 from other
 * work: the bid table read 1.15x and 1.62x as fast as the baseline in two
 * runs (it builds only the bids, 92% of the events, and skips the rest by
 * `NexmarkGenerator.kind`; the timestamp text is cached per millisecond).
 *
 * @module
 */

import type { ReaderOutput, SourceReaderContext } from "../../../runtime/api/source.ts";
import { ManualClock } from "../../../runtime/time/manual_clock.ts";
import { TYPES } from "../../../runtime/table/types.ts";
import { NexmarkSource } from "./source.ts";
import { NexmarkRowSource } from "./table.ts";

const EVENTS = 100_000;
const clock = new ManualClock();
const context: SourceReaderContext = {
  subtaskIndex: 0,
  parallelism: 1,
  attempt: 0,
  operatorName: "bench",
  currentProcessingTime: () => clock.now(),
  clock,
};

/** Counts what a reader emits; no allocation per record. */
function countingOutput(): ReaderOutput<unknown> & { count: number } {
  const output = {
    count: 0,
    collect() {
      output.count++;
    },
    emitWatermark() {},
    markIdle() {},
    markActive() {},
    output() {},
    createOutputForSplit: () => output,
    releaseOutputForSplit() {},
  };
  return output;
}

function drain(source: NexmarkSource | NexmarkRowSource): number {
  const reader = source.createReader(context);
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const output = countingOutput();
  while (reader.pollNext(output as never) !== "END_OF_INPUT");
  return output.count;
}

const column = (name: string, type = TYPES.BIGINT) => ({ name, type });
const bidTable = new NexmarkRowSource({
  name: "bid",
  columns: [
    column("auction"),
    column("bidder"),
    column("price"),
    column("channel", TYPES.STRING),
    column("url", TYPES.STRING),
    column("dateTime", TYPES.TIMESTAMP),
    column("extra", TYPES.STRING),
  ],
  options: { connector: "nexmark", "nexmark.table": "bid", "events.num": String(EVENTS) },
  rows: [],
  primaryKey: null,
  watermark: null,
});

Deno.bench({
  name: `NexmarkSource reader, ${EVENTS} events (baseline)`,
  baseline: true,
  fn() {
    if (drain(new NexmarkSource({ events: EVENTS })) !== EVENTS) throw new Error("lost events");
  },
});

Deno.bench(`nexmark table 'bid', ${EVENTS} event numbers as bid rows`, () => {
  if (drain(bidTable) < EVENTS * 0.9) throw new Error("too few bids");
});
