/**
 * Benchmark: a keyed running sum on the SQLite keyed state backend against
 * the heap backend, interleaved in one process, with the state inside the
 * SQLite backend's cache and with ten times more keys than the cache holds.
 *
 *     deno task bench:sqlite
 *     deno run -A --v8-flags=--expose-gc bench/sqlite_state.ts --records 1000000 --cache 10000 --rounds 3
 *
 * Each run drives one backend directly (no job around it): per record,
 * `setCurrentKey(key)` then `sum.update(sum.value() + x)` on a ValueState,
 * keys drawn uniformly (a fixed-seed generator, the same sequence in every
 * run) from `keys` keys. The variants, run in this order each round
 * ({@linkcode runRounds}):
 *
 * | variant      | backend | keys          | cache        |
 * | ------------ | ------- | ------------- | ------------ |
 * | `heap-fit`   | heap    | `cache / 10`  | —            |
 * | `sqlite-fit` | SQLite  | `cache / 10`  | `cache`      |
 * | `heap-10x`   | heap    | `10 × cache`  | —            |
 * | `sqlite-10x` | SQLite  | `10 × cache`  | `cache`      |
 *
 * With the state inside the cache every access is a cache hit after the
 * first; with ten times the cache about 90% of accesses miss (uniform keys),
 * so each costs a SQLite point read, and evictions write dirty entries back
 * in batches. Every run ends with a snapshot's synchronous part (which
 * writes every dirty entry back) and is checked: the sum over all keys,
 * read back through the backend, must equal the sum of the values fed in;
 * a mismatch ends the benchmark with an error (exit code 1).
 *
 * Figures: records per CPU-second and per wall second, medians over the
 * rounds; the ratio `sqlite / heap` of each size is the median of the
 * per-round ratios. The last line is `RESULT heap_fit_eps=… sqlite_fit_eps=…
 * heap_10x_eps=… sqlite_10x_eps=… ratio_fit=… ratio_10x=… rounds=…` (CPU
 * figures). Nothing is asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ValueStateDescriptor } from "../runtime/api/state.ts";
import { HeapKeyedStateBackend } from "../runtime/state/heap_keyed_backend.ts";
import { SqliteKeyedStateBackend } from "../runtime/state/sqlite/sqlite_keyed_backend.ts";
import type { KeyedStateBackend } from "../runtime/state/keyed_state_backend.ts";
import { KeyGroupRange } from "../runtime/state/key_group.ts";
import { formatRate, formatRatio, runRounds, type Sample } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";

const MAX_PARALLELISM = 128;

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    records: { type: "string", default: "1000000" },
    cache: { type: "string", default: "10000" },
    rounds: { type: "string", default: "3" },
  },
});

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`--${name} must be a positive integer: current value is ${text}`);
  }
  return n;
}

const records = positive("records", args.records);
const cache = positive("cache", args.cache);
const rounds = positive("rounds", args.rounds);
if (cache < 10) throw new RangeError(`--cache must be at least 10: current value is ${cache}`);

/** What a run measured. */
interface Outcome {
  /** Records processed. */
  readonly records: number;
  /** Cache misses (SQLite only). */
  readonly misses: number;
}

/** Feeds `records` updates over `keys` keys into `backend` and checks the total. */
function runningSum(backend: KeyedStateBackend, keys: number): Outcome {
  const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  let seed = 12345;
  let fed = 0;
  for (let i = 0; i < records; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const key = seed % keys;
    const x = i & 7;
    backend.setCurrentKey(key);
    sum.update(sum.value()! + x);
    fed += x;
  }
  backend.snapshot(1, "checkpoint", "bench").discard?.();
  let total = 0;
  for (let k = 0; k < keys; k++) {
    backend.setCurrentKey(k);
    total += sum.value()!;
  }
  expectEqual(`sum over ${keys} keys`, fed, total);
  return {
    records,
    misses: backend instanceof SqliteKeyedStateBackend ? backend.cacheStats.misses : 0,
  };
}

const range = new KeyGroupRange(0, MAX_PARALLELISM - 1);
const heap = (keys: number) => () =>
  runningSum(
    new HeapKeyedStateBackend({ keyGroupRange: range, maxParallelism: MAX_PARALLELISM }),
    keys,
  );
const sqlite = (keys: number) => async () => {
  const backend = await SqliteKeyedStateBackend.create({
    keyGroupRange: range,
    maxParallelism: MAX_PARALLELISM,
    cacheEntries: cache,
    name: "bench",
  });
  try {
    return runningSum(backend, keys);
  } finally {
    await backend.dispose();
  }
};

const fit = Math.max(1, Math.floor(cache / 10));
const tenfold = cache * 10;
const gc = (globalThis as { gc?: () => void }).gc;
console.log(
  `keyed running sum: ${records} records per run; cache ${cache} entries; ${fit} keys (fit) and ${tenfold} keys (10x); ${rounds} rounds${
    gc ? "" : " (no --expose-gc: runs are not preceded by a garbage collection)"
  }`,
);
const perCpuSecond = (s: Sample<Outcome>) => s.value.records / (s.cpuMs / 1000);
const perWallSecond = (s: Sample<Outcome>) => s.value.records / (s.wallMs / 1000);
const result = await runRounds<Outcome>({
  rounds,
  variants: [
    { name: "heap-fit", run: heap(fit) },
    { name: "sqlite-fit", run: sqlite(fit) },
    { name: "heap-10x", run: heap(tenfold) },
    { name: "sqlite-10x", run: sqlite(tenfold) },
  ],
  before: () => gc?.(),
  onSample: (s) =>
    console.log(
      `round ${s.round}: ${s.variant.padEnd(10)} ${formatRate(perCpuSecond(s), "records/CPU-s")}, ${
        formatRate(perWallSecond(s))
      }${s.value.misses > 0 ? `, ${s.value.misses} cache misses` : ""}`,
    ),
});
const eps = (v: string) => result.median(v, perCpuSecond);
const ratioFit = result.ratio("sqlite-fit", "heap-fit", perCpuSecond);
const ratio10x = result.ratio("sqlite-10x", "heap-10x", perCpuSecond);
console.log(`sqlite/heap, state inside the cache:  ${formatRatio(ratioFit)}`);
console.log(`sqlite/heap, state 10x the cache:     ${formatRatio(ratio10x)}`);
console.log(`every run's sum over all keys checked`);
console.log(resultLine({
  heap_fit_eps: Math.round(eps("heap-fit")),
  sqlite_fit_eps: Math.round(eps("sqlite-fit")),
  heap_10x_eps: Math.round(eps("heap-10x")),
  sqlite_10x_eps: Math.round(eps("sqlite-10x")),
  ratio_fit: Number(ratioFit.medianOfRatios.toFixed(4)),
  ratio_10x: Number(ratio10x.medianOfRatios.toFixed(4)),
  rounds,
}));
