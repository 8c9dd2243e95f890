/**
 * The child process of `sqlite_large_state_test.ts`: keeps `--keys` keys of
 * ValueState in a {@linkcode SqliteKeyedStateBackend} whose cache holds
 * `--cache` entries, in a process started with a capped V8 heap
 * (`--v8-flags=--max-old-space-size=<MB>`), then checks them: the number of
 * keys, a full streamed scan of the keys (`keys()`), and every 997th key's
 * value read back through the cache. Prints the figures and a `RESULT`
 * line; exits 1 when a check fails.
 *
 * With `--backend heap` it writes the same keys into a `HeapKeyedStateBackend`
 * instead (the control: under the same cap it runs out of memory).
 *
 *     deno run -A --v8-flags=--max-old-space-size=64 runtime/state/sqlite/_large_state_main.ts \
 *       --keys 20000000 --cache 20000 --dir /tmp/weir-large
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ValueStateDescriptor } from "../../api/state.ts";
import { KeyGroupRange } from "../key_group.ts";
import { SqliteKeyedStateBackend } from "./sqlite_keyed_backend.ts";
import { HeapKeyedStateBackend } from "../heap_keyed_backend.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    keys: { type: "string", default: "1000000" },
    cache: { type: "string", default: "20000" },
    dir: { type: "string" },
    backend: { type: "string", default: "sqlite" },
  },
});
const keys = Number(args.keys);
const cache = Number(args.cache);
if (!Number.isInteger(keys) || keys < 1 || !Number.isInteger(cache) || cache < 1) {
  throw new RangeError(
    `--keys and --cache must be positive integers: current values are ${args.keys} and ${args.cache}`,
  );
}

function fail(what: string): never {
  console.error(`CHECK FAILED: ${what}`);
  Deno.exit(1);
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
let peakHeap = 0;
const sampleHeap = () => {
  peakHeap = Math.max(peakHeap, Deno.memoryUsage().heapUsed);
};

if (args.backend === "heap") {
  const heap = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  const v = heap.getValueState(new ValueStateDescriptor<number>("value"));
  for (let k = 0; k < keys; k++) {
    heap.setCurrentKey(k);
    v.update(k * 3 + 1);
  }
  console.log(`RESULT backend=heap keys=${heap.numKeys("value")}`);
  Deno.exit(0);
}
if (args.backend !== "sqlite") {
  throw new RangeError(`--backend must be sqlite or heap: current value is ${args.backend}`);
}

const backend = await SqliteKeyedStateBackend.create({
  keyGroupRange: new KeyGroupRange(0, 127),
  maxParallelism: 128,
  cacheEntries: cache,
  writeBatchSize: 10_000,
  name: "large-state",
  ...(args.dir === undefined ? {} : { localDirectory: args.dir }),
});
const value = backend.getValueState(new ValueStateDescriptor<number>("value"));
const t0 = performance.now();
for (let k = 0; k < keys; k++) {
  backend.setCurrentKey(k);
  value.update(k * 3 + 1);
  if ((k & 0xfffff) === 0) sampleHeap();
}
const writeMs = performance.now() - t0;
const n = backend.numKeys("value"); // writes the last dirty entries back first
if (n !== keys) fail(`numKeys("value") is ${n}, expected ${keys}`);
const t1 = performance.now();
let scanned = 0;
let sum = 0;
for (const key of backend.keys("value")) {
  scanned++;
  sum += key as number;
  if ((scanned & 0xfffff) === 0) sampleHeap();
}
const scanMs = performance.now() - t1;
if (scanned !== keys) fail(`keys("value") listed ${scanned} keys, expected ${keys}`);
if (sum !== (keys - 1) * keys / 2) fail(`keys("value") listed other keys: sum ${sum}`);
const t2 = performance.now();
let read = 0;
for (let k = 0; k < keys; k += 997) {
  backend.setCurrentKey(k);
  const v = value.value();
  if (v !== k * 3 + 1) fail(`key ${k} reads ${v}, expected ${k * 3 + 1}`);
  read++;
}
const readMs = performance.now() - t2;
sampleHeap();
const dbBytes = (await Deno.stat(backend.databasePath)).size +
  ((await Deno.stat(`${backend.databasePath}-wal`).catch(() => undefined))?.size ?? 0);
await backend.dispose();
console.log(
  `${keys} keys: written in ${(writeMs / 1000).toFixed(1)} s (${
    Math.round(keys / (writeMs / 1000))
  } keys/s), scanned in ${(scanMs / 1000).toFixed(1)} s, ${read} reads checked in ${
    (readMs / 1000).toFixed(1)
  } s; database ${mb(dbBytes)} MiB; peak JS heap used ${mb(peakHeap)} MiB`,
);
console.log(
  `RESULT keys=${keys} write_keys_per_s=${Math.round(keys / (writeMs / 1000))} db_mib=${
    mb(dbBytes)
  } peak_heap_mib=${mb(peakHeap)}`,
);
