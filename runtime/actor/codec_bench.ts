/**
 * Compares Weir's codec (msgpackr with inline records) to JSON and to plain
 * MessagePack maps on the data plane's typical message: a batch of 1000
 * same-shaped records. Before measuring, it checks that each decodes what
 * it encoded (an `AssertionError` ends the run otherwise).
 *
 * Run with `deno bench -A runtime/actor/codec_bench.ts`. Records/s is
 * `1000 / time per iteration`, e.g. 200 µs/iter is 5M records/s.
 * With `WEIR_BENCH_SMOKE=1` each benchmark runs one iteration (the smoke
 * test `bench/micro_benches_test.ts` does so) instead of Deno's calibrated
 * count.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Packr, Unpackr } from "npm:msgpackr@2.1.4";
import { decode, encode } from "./codec.ts";

/** One iteration each in the smoke test (`WEIR_BENCH_SMOKE=1`), else Deno's defaults. */
const smoke = Deno.env.get("WEIR_BENCH_SMOKE") === "1" ? { n: 1, warmup: 1 } : {};

const batchSize = 1_000;
const batch = Array.from({ length: batchSize }, (_, i) => ({
  id: `sensor_${i % 100}`,
  ts: 1_547_718_199 + i,
  temp: 35.8 + (i % 7) / 10,
}));

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();
const jsonEncode = (value: unknown) => textEncoder.encode(JSON.stringify(value));
const jsonDecode = (bytes: Uint8Array): unknown => JSON.parse(textDecoder.decode(bytes));

const mapsOptions = { useRecords: false } as const;
const mapsPackr = new Packr(mapsOptions);
const mapsUnpackr = new Unpackr(mapsOptions);

const encoded = encode(batch);
const jsonEncoded = jsonEncode(batch);
const mapsEncoded = mapsPackr.pack(batch);
// What is measured must be right: each codec gives back what it was given.
assert.deepStrictEqual(decode(encoded), batch, "codec");
assert.deepStrictEqual(jsonDecode(jsonEncoded), batch, "JSON");
assert.deepStrictEqual(mapsUnpackr.unpack(mapsEncoded), batch, "msgpack maps");
console.log(
  `bytes per batch of ${batchSize}: codec ${encoded.byteLength}, JSON ${jsonEncoded.byteLength}, ` +
    `msgpack maps ${mapsEncoded.byteLength}`,
);

Deno.bench("codec", { ...smoke, group: "encode + decode", baseline: true }, () => {
  decode(encode(batch));
});
Deno.bench("JSON", { ...smoke, group: "encode + decode" }, () => {
  jsonDecode(jsonEncode(batch));
});
Deno.bench("msgpack maps (useRecords: false)", { ...smoke, group: "encode + decode" }, () => {
  mapsUnpackr.unpack(mapsPackr.pack(batch));
});

Deno.bench("codec", { ...smoke, group: "encode", baseline: true }, () => {
  encode(batch);
});
Deno.bench("JSON", { ...smoke, group: "encode" }, () => {
  jsonEncode(batch);
});

Deno.bench("codec", { ...smoke, group: "decode", baseline: true }, () => {
  decode(encoded);
});
Deno.bench("JSON", { ...smoke, group: "decode" }, () => {
  jsonDecode(jsonEncoded);
});
