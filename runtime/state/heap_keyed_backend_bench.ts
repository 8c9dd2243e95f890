/**
 * Keyed state on the per-record hot path: a keyed running sum
 * (`sum.update(sum.value() + x)` after `setCurrentKey(key)`) over 10k keys,
 * 1M records per iteration, against a plain `Map` doing the same work.
 *
 * Run: `deno bench -A runtime/state/heap_keyed_backend_bench.ts`.
 * Divide 1M by the reported time per iteration for records per second (each
 * record is one state read and one state write).
 * The group "namespaces" runs the same sum in a window's namespace, as a
 * window operator does (`setCurrentNamespace` per record), against the
 * default namespace: on the project's 2-core machine a namespace costs about
 * 1.2× (median CPU time of 15 interleaved runs), four live windows per key
 * (four times the entries) about 2.25×.
 *
 * The group "composite keys" runs the sum keyed by `[bidder, auction]`
 * tuples (Nexmark dedup's key), a fresh array per record: the backend
 * (which interns tuples, `_key_interner.ts`) against nested `Map`s and a
 * `Map` keyed by the string `stateKeyOf` builds per record (the backend's
 * tuple identity before interning).
 *
 * With `WEIR_BENCH_SMOKE=1` each benchmark runs one iteration of 200k
 * records (the smoke test `bench/micro_benches_test.ts` does so) instead of
 * Deno's calibrated count.
 *
 * @module
 */

import { ReducingStateDescriptor, ValueStateDescriptor } from "../api/state.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { assignToKeyGroup, KeyGroupRange, type StateKey, stateKeyOf } from "./key_group.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";

/** One iteration each in the smoke test (`WEIR_BENCH_SMOKE=1`), else Deno's defaults. */
const SMOKE = Deno.env.get("WEIR_BENCH_SMOKE") === "1";
const smoke = SMOKE ? { n: 1, warmup: 1 } : {};

/** Records per iteration (200k in the smoke test: still enough to reach all 10k keys). */
const RECORDS = SMOKE ? 200_000 : 1_000_000;
const KEYS = 10_000;

// A fixed pseudo-random sequence of key indexes, so every variant sees the same records.
const order = new Uint32Array(RECORDS);
let seed = 42;
for (let i = 0; i < RECORDS; i++) {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  order[i] = seed % KEYS;
}
const numberKeys = Array.from({ length: KEYS }, (_, i) => i * 7 + 1);
const stringKeys = Array.from({ length: KEYS }, (_, i) => `sensor_${i}`);

function runBackend<K extends number | string>(keys: readonly K[]): number {
  const backend = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  for (let i = 0; i < RECORDS; i++) {
    backend.setCurrentKey(keys[order[i]!]!);
    sum.update(sum.value()! + i);
  }
  return backend.numKeys("sum");
}

function runMap<K extends number | string>(keys: readonly K[]): number {
  const map = new Map<K, number>();
  for (let i = 0; i < RECORDS; i++) {
    const key = keys[order[i]!]!;
    map.set(key, (map.get(key) ?? 0) + i);
  }
  return map.size;
}

function runMapWithKeyGroup<K extends number | string>(keys: readonly K[]): number {
  const map = new Map<K, number>();
  let groups = 0;
  for (let i = 0; i < RECORDS; i++) {
    const key = keys[order[i]!]!;
    groups += assignToKeyGroup(key, 128);
    map.set(key, (map.get(key) ?? 0) + i);
  }
  return map.size + (groups & 0);
}

function check(n: number): void {
  if (n !== KEYS) throw new Error(`expected ${KEYS} keys: current value is ${n}`);
}

Deno.bench(
  "plain Map, 10k numeric keys",
  { ...smoke, group: "numeric keys", baseline: true },
  () => {
    check(runMap(numberKeys));
  },
);
Deno.bench("plain Map + key group, 10k numeric keys", { ...smoke, group: "numeric keys" }, () => {
  check(runMapWithKeyGroup(numberKeys));
});
Deno.bench("HeapKeyedStateBackend ValueState, 10k numeric keys", {
  ...smoke,
  group: "numeric keys",
}, () => {
  check(runBackend(numberKeys));
});

Deno.bench("plain Map, 10k string keys", { ...smoke, group: "string keys", baseline: true }, () => {
  check(runMap(stringKeys));
});
Deno.bench("plain Map + key group, 10k string keys", { ...smoke, group: "string keys" }, () => {
  check(runMapWithKeyGroup(stringKeys));
});
Deno.bench(
  "HeapKeyedStateBackend ValueState, 10k string keys",
  { ...smoke, group: "string keys" },
  () => {
    check(runBackend(stringKeys));
  },
);

// ---------------------------------------------------------------------------
// Namespaces

const WINDOWS = ["0:1000", "1000:2000", "2000:3000", "3000:4000"];

/** Record `i`'s window among the first `n` of `WINDOWS`: runs of 4096 records, round robin. */
function windowOf(i: number, n: number): string {
  return WINDOWS[(i >> 12) % n]!;
}

/** How many (key, window) pairs the records fill with `n` windows, to check against. */
function pairsIn(n: number): number {
  const pairs = new Set<string>();
  for (let i = 0; i < RECORDS; i++) pairs.add(`${order[i]}|${windowOf(i, n)}`);
  return pairs.size;
}
const PAIRS_IN_FOUR_WINDOWS = pairsIn(4);

function emptyBackend(): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
}

/** The ValueState running sum with the state object in `namespace`; returns the entries. */
function runValueIn(namespace: string): number {
  const backend = emptyBackend();
  const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  sum.setCurrentNamespace(namespace);
  for (let i = 0; i < RECORDS; i++) {
    backend.setCurrentKey(numberKeys[order[i]!]!);
    sum.update(sum.value()! + i);
  }
  return backend.numEntries();
}

/** A ReducingState running sum, each record into its window (`n` windows, or the default namespace for 0). */
function runReducingIn(n: number): number {
  const backend = emptyBackend();
  const sum = backend.getReducingState(new ReducingStateDescriptor<number>("sum", (a, x) => a + x));
  for (let i = 0; i < RECORDS; i++) {
    backend.setCurrentKey(numberKeys[order[i]!]!);
    sum.setCurrentNamespace(n === 0 ? VOID_NAMESPACE : windowOf(i, n));
    sum.add(i);
  }
  return backend.numEntries();
}

function checkEntries(n: number, expected: number): void {
  if (n !== expected) throw new Error(`expected ${expected} entries: current value is ${n}`);
}

const namespaces = { ...smoke, group: "namespaces" };
Deno.bench("ValueState, default namespace", { ...namespaces, baseline: true }, () => {
  checkEntries(runValueIn(VOID_NAMESPACE), KEYS);
});
Deno.bench("ValueState, one window namespace", namespaces, () => {
  checkEntries(runValueIn(WINDOWS[0]!), KEYS);
});
Deno.bench("ReducingState, default namespace", namespaces, () => {
  checkEntries(runReducingIn(0), KEYS);
});
Deno.bench("ReducingState, one window namespace", namespaces, () => {
  checkEntries(runReducingIn(1), KEYS);
});
Deno.bench("ReducingState, four window namespaces", namespaces, () => {
  checkEntries(runReducingIn(4), PAIRS_IN_FOUR_WINDOWS);
});

// ---------------------------------------------------------------------------
// Composite keys

/** Nexmark dedup's key shape: (bidder, auction), a fresh array per record as a key selector returns it. */
const bidders = Array.from({ length: KEYS }, (_, i) => 1000 + (i % 97));
const auctions = Array.from({ length: KEYS }, (_, i) => 2000 + i);

/** The ValueState running sum keyed by `[bidder, auction]`, with the key group given as a hash edge gives it. */
function runBackendTuples(): number {
  const backend = emptyBackend();
  const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  for (let i = 0; i < RECORDS; i++) {
    const k = order[i]!;
    const key: [number, number] = [bidders[k]!, auctions[k]!];
    backend.setCurrentKey(key, assignToKeyGroup(key, 128));
    sum.update(sum.value()! + i);
  }
  return backend.numKeys("sum");
}

/** The same sum in a `Map` keyed by the string `stateKeyOf` builds per record (the backend's identity before interning). */
function runMapOfBuiltStrings(): number {
  const map = new Map<StateKey, number>();
  let groups = 0;
  for (let i = 0; i < RECORDS; i++) {
    const k = order[i]!;
    const key: [number, number] = [bidders[k]!, auctions[k]!];
    groups += assignToKeyGroup(key, 128);
    const sk = stateKeyOf(key);
    map.set(sk, (map.get(sk) ?? 0) + i);
  }
  return map.size + (groups & 0);
}

/** The same sum in nested `Map`s (bidder, then auction): what a hand-written loop would do. */
function runNestedMaps(): number {
  const outer = new Map<number, Map<number, number>>();
  let n = 0;
  for (let i = 0; i < RECORDS; i++) {
    const k = order[i]!;
    const key: [number, number] = [bidders[k]!, auctions[k]!];
    let inner = outer.get(key[0]);
    if (inner === undefined) outer.set(key[0], inner = new Map());
    const old = inner.get(key[1]);
    if (old === undefined) n++;
    inner.set(key[1], (old ?? 0) + i);
  }
  return n;
}

const composite = { ...smoke, group: "composite keys" };
Deno.bench("nested Maps, 10k (bidder, auction) keys", { ...composite, baseline: true }, () => {
  check(runNestedMaps());
});
Deno.bench("Map of stateKeyOf strings + key group, 10k (bidder, auction) keys", composite, () => {
  check(runMapOfBuiltStrings());
});
Deno.bench("HeapKeyedStateBackend ValueState, 10k (bidder, auction) keys", composite, () => {
  check(runBackendTuples());
});
