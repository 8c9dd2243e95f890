/**
 * Compares the record codec (`record_codec.ts`) to the MessagePack codec
 * (`../actor/codec.ts`, msgpackr with inline records) on the same buffers of
 * 1000 records, one group per shape: the keyed-sum benchmark's `{key, value}`
 * pairs, sensor readings with a string field, bare numbers, bare strings,
 * `[string, number]` tuples, and a mixed buffer that falls back to
 * MessagePack. Before measuring, it checks that both codecs decode each
 * buffer to the records and timestamps encoded (an `AssertionError` ends
 * the run otherwise).
 *
 * Run with `deno bench -A runtime/task/record_codec_bench.ts`. Records/s is
 * `1000 / time per iteration`, e.g. 20 µs/iter is 50M records/s.
 * With `WEIR_BENCH_SMOKE=1` each benchmark runs one iteration (the smoke
 * test `bench/micro_benches_test.ts` does so) instead of Deno's calibrated
 * count.
 *
 * @module
 */

import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import { decodeRecords, encodeRecords } from "./record_codec.ts";

/** One iteration each in the smoke test (`WEIR_BENCH_SMOKE=1`), else Deno's defaults. */
const smoke = Deno.env.get("WEIR_BENCH_SMOKE") === "1" ? { n: 1, warmup: 1 } : {};

const batchSize = 1_000;
const timestamps = Array.from({ length: batchSize }, (_, i) => 1_547_718_199_000 + i);

const batches: Record<string, readonly unknown[]> = {
  "{key, value} numbers": Array.from({ length: batchSize }, (_, i) => ({
    key: i % 10_000,
    value: i * 3,
  })),
  "{id, ts, temp} sensor": Array.from({ length: batchSize }, (_, i) => ({
    id: `sensor_${i % 100}`,
    ts: 1_547_718_199 + i,
    temp: 35.8 + (i % 7) / 10,
  })),
  "numbers": Array.from({ length: batchSize }, (_, i) => i * 1.5),
  "strings": Array.from({ length: batchSize }, (_, i) => `word-${i % 300}`),
  "[string, number] tuples": Array.from({ length: batchSize }, (_, i) => [`k${i % 50}`, i]),
  "mixed (fallback)": Array.from({ length: batchSize }, (_, i) => i % 2 === 0 ? i : `s${i}`),
};

for (const [name, values] of Object.entries(batches)) {
  const ours = encodeRecords(values, timestamps);
  const theirs = encode({ v: values, ts: timestamps });
  // What is measured must be right: both codecs give back what they were given.
  assert.deepStrictEqual(decodeRecords(ours), { values, timestamps }, `record codec: ${name}`);
  assert.deepStrictEqual(decode(theirs), { v: values, ts: timestamps }, `msgpackr: ${name}`);
  console.log(
    `${name}: record codec ${ours.byteLength} bytes, MessagePack ${theirs.byteLength} bytes per ${batchSize} records with timestamps`,
  );
  Deno.bench(
    "record codec",
    { ...smoke, group: `${name}: encode + decode`, baseline: true },
    () => {
      decodeRecords(encodeRecords(values, timestamps));
    },
  );
  Deno.bench("msgpackr", { ...smoke, group: `${name}: encode + decode` }, () => {
    decode(encode({ v: values, ts: timestamps }));
  });
  Deno.bench("record codec", { ...smoke, group: `${name}: encode`, baseline: true }, () => {
    encodeRecords(values, timestamps);
  });
  Deno.bench("msgpackr", { ...smoke, group: `${name}: encode` }, () => {
    encode({ v: values, ts: timestamps });
  });
  Deno.bench("record codec", { ...smoke, group: `${name}: decode`, baseline: true }, () => {
    decodeRecords(ours);
  });
  Deno.bench("msgpackr", { ...smoke, group: `${name}: decode` }, () => {
    decode(theirs);
  });
}
