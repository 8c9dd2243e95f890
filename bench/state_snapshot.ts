/**
 * Benchmark: the heap keyed state backend's copy-on-write snapshot
 * (`runtime/state/_heap_cow.ts`) against state size, and what a snapshot in
 * flight costs the record path.
 *
 *     deno task bench:snapshot
 *     deno run -A --v8-flags=--expose-gc,--max-old-space-size=6144 bench/state_snapshot.ts --sizes 1000,10000,100000,1000000,10000000
 *
 * **Table 1, per state size** (`n` ValueState keys, numbers, one backend of
 * all 128 key groups):
 *
 * - `pause`: the synchronous part, `backend.snapshot(...)`, median (and
 *   max) of 7 calls, each discarded right after;
 * - `full copy`: the baseline in the same process, `snapshotCanonical()`
 *   (the synchronous copy of every entry the backend did before), median of
 *   3 calls; `ratio` = pause / full copy;
 * - `write`: the asynchronous part, `result.write(writer)` to an in-memory
 *   writer, wall time and this process's CPU time meanwhile (the probe
 *   below is idle; on a loaded machine wall time includes other processes'
 *   turns); `blob` its size; `longest turn`: the longest time the
 *   event loop was blocked while it ran (gap between two consecutive
 *   `setImmediate` ticks of a probe), in wall time and in this process's
 *   CPU time (all threads, GC included; the wall figure also counts the
 *   time other processes held the cores).
 *
 * **Table 2, the record path with a snapshot in flight**: a keyed running
 * sum (`setCurrentKey`, `sum.update(sum.value() + x)`) over the largest
 * size up to 1M keys, in batches of 1000 records with a yield to the event
 * loop after each (a subtask's mailbox), for as long as a snapshot's
 * `write()` runs, against the same loop without a snapshot for the same
 * time; the ratio is records/s with / without. Both loops are interleaved
 * over 3 rounds and the medians compared.
 *
 * Each written blob up to 1M keys is decoded and checked (every key, its
 * value, the count); a mismatch ends the benchmark with an error (exit code
 * 1). Nothing is asserted on timing. The last line is `RESULT keys=…
 * pause_ms=… pause_max_ms=… full_copy_ms=… write_ms=… write_cpu_ms=…
 * pause_1m_ms=… pause_10m_ms=… in_flight_ratio=…` (the first six of the
 * largest size; `pause_1m_ms`/`pause_10m_ms` empty when that size was not
 * run).
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ValueStateDescriptor } from "../runtime/api/state.ts";
import { HeapKeyedStateBackend } from "../runtime/state/heap_keyed_backend.ts";
import { KeyGroupRange } from "../runtime/state/key_group.ts";
import { yieldToEventLoop } from "../runtime/actor/async.ts";
import { cpuBetween, readCpu } from "./_rounds.ts";
import { expectEqual } from "./_result.ts";
import { decode } from "../runtime/actor/codec.ts";
import type { KeyedStateSnapshot } from "../runtime/state/keyed_state_snapshot.ts";
import type {
  SnapshotResult,
  StateHandle,
  StateHandleKind,
  StateWriter,
} from "../runtime/checkpoint/snapshot_contract.ts";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    sizes: { type: "string", default: "1000,10000,100000,1000000,10000000" },
    rounds: { type: "string", default: "3" },
  },
});
const sizes = args.sizes.split(",").map((s) => {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(
      `--sizes must be positive integers separated by commas: current value is '${s}'`,
    );
  }
  return n;
});
const rounds = Number(args.rounds);
if (!Number.isSafeInteger(rounds) || rounds < 1) {
  throw new RangeError(`--rounds must be a positive integer: current value is '${args.rounds}'`);
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/** A writer that keeps the blob in memory. */
class MemoryWriter implements StateWriter {
  readonly checkpointId = 1;
  readonly type = "checkpoint" as const;
  readonly cancelled = false;
  bytes = 0;
  last: Uint8Array | undefined;
  writePrivate(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> {
    this.bytes += bytes.length;
    this.last = bytes;
    return Promise.resolve({
      path: `chk-1/${name}`,
      bytes: bytes.length,
      kind,
      shared: false,
      uid,
      ...(keyGroupRange ? { keyGroupRange } : {}),
    });
  }
  writeShared(): Promise<StateHandle> {
    return Promise.reject(new Error("not used"));
  }
}

function backendOf(n: number) {
  const backend = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
  for (let k = 0; k < n; k++) {
    backend.setCurrentKey(k);
    sum.update(k);
  }
  return { backend, sum };
}

/** Runs `result.write` while a probe measures the longest event-loop turn. */
async function timedWrite(
  result: SnapshotResult,
): Promise<
  {
    ms: number;
    cpuMs: number;
    bytes: number;
    longestTurnMs: number;
    longestTurnCpuMs: number;
    blob: Uint8Array;
  }
> {
  const writer = new MemoryWriter();
  let done = false;
  let longest = 0;
  let longestCpu = 0;
  const probe = (async () => {
    let last = performance.now();
    let lastCpu = readCpu().selfMs;
    while (!done) {
      await yieldToEventLoop();
      const now = performance.now();
      const cpu = readCpu().selfMs;
      longest = Math.max(longest, now - last);
      longestCpu = Math.max(longestCpu, cpu - lastCpu);
      last = now;
      lastCpu = cpu;
    }
  })();
  const cpu0 = readCpu();
  const t0 = performance.now();
  await result.write(writer);
  const ms = performance.now() - t0;
  const cpuMs = cpuBetween(cpu0, readCpu()).selfMs;
  done = true;
  await probe;
  return {
    ms,
    cpuMs,
    bytes: writer.bytes,
    longestTurnMs: longest,
    longestTurnCpuMs: longestCpu,
    blob: writer.last!,
  };
}

/**
 * Checks that a blob holds keys `0..n-1` with value `k` each (what
 * {@linkcode backendOf} wrote); ends the benchmark with an error otherwise.
 */
function checkBlob(blob: Uint8Array, n: number): void {
  const snapshot = decode(blob) as KeyedStateSnapshot;
  let keys = 0;
  let sum = 0;
  for (const group of snapshot.states["sum"]!.keyGroups) {
    keys += group.keys.length;
    group.keys.forEach((k, i) => {
      expectEqual(`the value of key ${k} in the snapshot`, k as number, group.values[i] as number);
      sum += k as number;
    });
  }
  expectEqual(`keys in the snapshot of ${n}`, n, keys);
  expectEqual(`the sum of the keys in the snapshot of ${n}`, (n * (n - 1)) / 2, sum);
}

interface Row {
  n: number;
  pauseMs: number;
  pauseMaxMs: number;
  fullCopyMs: number;
  writeMs: number;
  writeCpuMs: number;
  bytes: number;
  longestTurnMs: number;
  longestTurnCpuMs: number;
}

const rows: Row[] = [];
for (const n of sizes) {
  gc();
  const { backend } = backendOf(n);
  const pauses: number[] = [];
  const fulls: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const result = backend.snapshot(i, "checkpoint", "bench");
    pauses.push(performance.now() - t0);
    result.discard?.();
    if (i < 3) {
      const t1 = performance.now();
      backend.snapshotCanonical();
      fulls.push(performance.now() - t1);
      gc();
    }
  }
  const write = await timedWrite(backend.snapshot(100, "checkpoint", "bench"));
  if (n <= 1_000_000) checkBlob(write.blob, n);
  rows.push({
    n,
    pauseMs: median(pauses),
    pauseMaxMs: Math.max(...pauses),
    fullCopyMs: median(fulls),
    writeMs: write.ms,
    writeCpuMs: write.cpuMs,
    bytes: write.bytes,
    longestTurnMs: write.longestTurnMs,
    longestTurnCpuMs: write.longestTurnCpuMs,
  });
  await backend.dispose();
}

const f = (x: number, d = 3) => x.toFixed(d);
console.log(
  "\nTable 1: snapshot of n ValueState keys (heap backend, 128 key groups)\n",
);
console.log(
  "| keys | pause (median, max) ms | full copy ms (baseline) | pause / full copy | write ms (wall) | write CPU ms | blob MB | longest event-loop turn during write: wall ms, CPU ms |",
);
console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) {
  console.log(
    `| ${r.n.toLocaleString("en")} | ${f(r.pauseMs)}, ${f(r.pauseMaxMs)} | ${
      f(r.fullCopyMs, 1)
    } | ${f(r.pauseMs / r.fullCopyMs, 4)} | ${f(r.writeMs, 1)} | ${f(r.writeCpuMs, 1)} | ${
      f(r.bytes / 1e6, 1)
    } | ${f(r.longestTurnMs, 2)}, ${f(r.longestTurnCpuMs, 2)} |`,
  );
}

// Table 2: the record path while a snapshot is in flight.
const n2 = Math.max(...sizes.filter((s) => s <= 1_000_000), 1000);
gc();
const { backend, sum } = backendOf(n2);
let seed = 7;
/** Runs the keyed sum in batches of 1000 until `until()`, yielding after each batch; returns records/s. */
async function runSum(
  until: () => boolean,
): Promise<{ records: number; rate: number; ms: number }> {
  let records = 0;
  const t0 = performance.now();
  do {
    for (let i = 0; i < 1000; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      backend.setCurrentKey(seed % n2);
      sum.update(sum.value()! + 1);
    }
    records += 1000;
    await yieldToEventLoop();
  } while (!until());
  const ms = performance.now() - t0;
  return { records, rate: records / (ms / 1000), ms };
}
const withRates: number[] = [];
const withoutRates: number[] = [];
for (let r = 0; r < rounds; r++) {
  let done = false;
  const writing = backend.snapshot(r, "checkpoint", "bench").write(new MemoryWriter()).then(() => {
    done = true;
  });
  const withSnapshot = await runSum(() => done);
  await writing;
  const end = performance.now() + withSnapshot.ms;
  const without = await runSum(() => performance.now() >= end);
  withRates.push(withSnapshot.rate);
  withoutRates.push(without.rate);
  gc();
}
const ratio = median(withRates) / median(withoutRates);
console.log(
  `\nTable 2: keyed running sum over ${
    n2.toLocaleString("en")
  } keys, batches of 1000, ${rounds} rounds (medians)\n`,
);
console.log("| variant | records/s |");
console.log("| --- | ---: |");
console.log(`| without a snapshot | ${Math.round(median(withoutRates)).toLocaleString("en")} |`);
console.log(`| while write() runs | ${Math.round(median(withRates)).toLocaleString("en")} |`);
console.log(`| ratio with / without | ${f(ratio)} |`);
const largest = rows[rows.length - 1]!;
const at = (n: number) => rows.find((r) => r.n === n);
console.log(
  `\nRESULT keys=${largest.n} pause_ms=${f(largest.pauseMs)} pause_max_ms=${
    f(largest.pauseMaxMs)
  } full_copy_ms=${f(largest.fullCopyMs, 1)} write_ms=${f(largest.writeMs, 1)} write_cpu_ms=${
    f(largest.writeCpuMs, 1)
  } pause_1m_ms=${at(1_000_000) ? f(at(1_000_000)!.pauseMs) : ""} pause_10m_ms=${
    at(10_000_000) ? f(at(10_000_000)!.pauseMs) : ""
  } in_flight_ratio=${f(ratio)}`,
);
