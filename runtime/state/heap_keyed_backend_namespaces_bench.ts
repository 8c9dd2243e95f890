/**
 * The cost of state namespaces on the per-record path: the keyed running sum
 * of `heap_keyed_backend_bench.ts` (10k keys, 1M records per iteration) in
 * the default namespace, against the same in a window's namespace, as a
 * window operator runs it (`setCurrentKey`, `setCurrentNamespace`, `add`).
 *
 * Run: `deno bench -A runtime/state/heap_keyed_backend_namespaces_bench.ts`.
 * With `WEIR_BENCH_SMOKE=1` each benchmark runs one iteration.
 *
 * Measured on the project's 2-core machine (median CPU time of 15 runs in
 * one process): a namespace costs about 1.2× the default namespace; four
 * live windows per key (four times the entries) about 2.25×.
 *
 * @module
 */

import { ReducingStateDescriptor, ValueStateDescriptor } from "../api/state.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { KeyGroupRange } from "./key_group.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";

/** One iteration each in the smoke test (`WEIR_BENCH_SMOKE=1`), else Deno's defaults. */
const smoke = Deno.env.get("WEIR_BENCH_SMOKE") === "1" ? { n: 1, warmup: 1 } : {};

const RECORDS = 1_000_000;
const KEYS = 10_000;

// A fixed pseudo-random sequence of key indexes, so every variant sees the same records.
const order = new Uint32Array(RECORDS);
let seed = 42;
for (let i = 0; i < RECORDS; i++) {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  order[i] = seed % KEYS;
}
const keys = Array.from({ length: KEYS }, (_, i) => i * 7 + 1);

function backend(): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
}

/** ValueState running sum with the state object in `namespace`; returns the entries. */
function runValue(namespace: string): number {
  const b = backend();
  const sum = b.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  sum.setCurrentNamespace(namespace);
  for (let i = 0; i < RECORDS; i++) {
    b.setCurrentKey(keys[order[i]!]!);
    sum.update(sum.value()! + i);
  }
  return b.numEntries();
}

/** ReducingState running sum, each record into `windows[(i / 4096) % n]` as a window operator would. */
function runReducing(windows: readonly string[]): number {
  const b = backend();
  const sum = b.getReducingState(new ReducingStateDescriptor<number>("sum", (a, x) => a + x));
  for (let i = 0; i < RECORDS; i++) {
    b.setCurrentKey(keys[order[i]!]!);
    sum.setCurrentNamespace(windows[(i >> 12) % windows.length]!);
    sum.add(i);
  }
  return b.numEntries();
}

function check(n: number, expected: number): void {
  if (n !== expected) throw new Error(`expected ${expected} entries: current value is ${n}`);
}

const group = "running sum, 10k numeric keys";
Deno.bench("ValueState, default namespace", { ...smoke, group, baseline: true }, () => {
  check(runValue(VOID_NAMESPACE), KEYS);
});
Deno.bench("ValueState, one window namespace", { ...smoke, group }, () => {
  check(runValue("0:1000"), KEYS);
});
Deno.bench("ReducingState, default namespace", { ...smoke, group }, () => {
  check(runReducing([VOID_NAMESPACE]), KEYS);
});
Deno.bench("ReducingState, one window namespace", { ...smoke, group }, () => {
  check(runReducing(["0:1000"]), KEYS);
});
Deno.bench("ReducingState, four window namespaces", { ...smoke, group }, () => {
  check(runReducing(["0:1000", "1000:2000", "2000:3000", "3000:4000"]), 4 * KEYS);
});
