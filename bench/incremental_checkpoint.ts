/**
 * Benchmark: bytes uploaded per checkpoint, full against incremental
 * (the changelog keyed state backend, FLIP-158), and the changelog's
 * per-write overhead against the bare heap backend, in one process.
 *
 *     deno run -A --v8-flags=--expose-gc bench/incremental_checkpoint.ts
 *     deno run -A --v8-flags=--expose-gc bench/incremental_checkpoint.ts --mb 100 --changed 0.01 --checkpoints 5
 *
 * **Workload** (issue 10's target: 100 MB of state, 1% of it changing per
 * interval, each checkpoint uploading at most 2 MB): `--mb` MB of
 * ValueState (keys `k<i>`, values of 90-character strings: about 100 bytes
 * per entry in the canonical snapshot), built before checkpoint 1; then,
 * before each of `--checkpoints` more checkpoints, a random `--changed`
 * share of the keys gets a new value. The same writes go to a bare
 * {@linkcode HeapKeyedStateBackend} (full checkpoints: the canonical
 * snapshot each time) and to a {@linkcode ChangelogKeyedStateBackend} over a
 * heap backend (default materialization: every 10 min, or when the
 * changelog outgrows the materialization). Each checkpoint is written
 * through a writer that counts the bytes of each blob it is asked to write
 * (and keeps none); referenced blobs cost nothing. It prints bytes uploaded
 * and the synchronous part's time per checkpoint for both.
 *
 * **Per-write overhead:** `--records` `setCurrentKey` + `ValueState.update`
 * calls over 100k keys, on the bare heap and on the changelog backend, in
 * `--rounds` interleaved rounds (heap, changelog, heap, ...), each followed
 * by a checkpoint's synchronous capture (whose time is reported apart); the
 * ratio is the median of per-round ratios of ns per write, in wall time
 * and in this process's CPU time (less disturbed by other processes on a
 * shared machine).
 *
 * Checks before figures count: after the last checkpoint, a fresh changelog
 * backend restored from its handles holds the same value as the bare heap
 * backend for a sample of 1000 keys (exit code 1 otherwise). The last line
 * is `RESULT mb=… full_bytes=… incremental_bytes=… incremental_max_bytes=… write_ns_heap=… write_ns_changelog=… write_ratio=… write_ratio_cpu=… capture_ms=…`.
 * Nothing is asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import process from "node:process";
import { ValueStateDescriptor } from "../runtime/api/state.ts";
import { HeapKeyedStateBackend } from "../runtime/state/heap_keyed_backend.ts";
import { KeyGroupRange } from "../runtime/state/key_group.ts";
import type { KeyedStateBackend } from "../runtime/state/keyed_state_backend.ts";
import type {
  StateHandle,
  StateHandleKind,
  StateWriter,
} from "../runtime/checkpoint/snapshot_contract.ts";
import { ChangelogKeyedStateBackend } from "../runtime/state/changelog/changelog_keyed_backend.ts";
import { resultLine } from "./_result.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    mb: { type: "string", default: "20" },
    changed: { type: "string", default: "0.01" },
    checkpoints: { type: "string", default: "5" },
    records: { type: "string", default: "2000000" },
    rounds: { type: "string", default: "5" },
  },
});
const MB = Number(args.values.mb);
const CHANGED = Number(args.values.changed);
const CHECKPOINTS = Number(args.values.checkpoints);
const RECORDS = Number(args.values.records);
const ROUNDS = Number(args.values.rounds);
for (const [name, v] of Object.entries({ MB, CHANGED, CHECKPOINTS, RECORDS, ROUNDS })) {
  if (!(Number.isFinite(v) && v > 0)) {
    throw new RangeError(
      `--${name.toLowerCase()} must be a positive number: current value is ${v}`,
    );
  }
}

const MAX_P = 128;
const RANGE = new KeyGroupRange(0, MAX_P - 1);
const VALUE = "v".repeat(88);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

/** Blobs stored by path: written bytes are counted (and the blobs kept for the restore check). */
class CountingStore {
  readonly blobs = new Map<string, Uint8Array>();
  written = 0;
  writer(checkpointId: number): StateWriter {
    const write = (
      path: string,
      bytes: Uint8Array,
      kind: StateHandleKind,
      uid: string,
      keyGroupRange: readonly [number, number] | undefined,
      shared: boolean,
    ): Promise<StateHandle> => {
      this.written += bytes.length;
      this.blobs.set(path, bytes);
      const handle: StateHandle = { path, bytes: bytes.length, kind, shared, uid };
      return Promise.resolve(keyGroupRange === undefined ? handle : { ...handle, keyGroupRange });
    };
    return {
      checkpointId,
      type: "checkpoint",
      cancelled: false,
      writePrivate: (name, bytes, kind, uid, kgr) =>
        write(`chk-${checkpointId}/${name}`, bytes, kind, uid, kgr, false),
      writeShared: (name, bytes, kind, uid, kgr) =>
        write(`shared/${name}`, bytes, kind, uid, kgr, true),
    };
  }
  read = (handle: StateHandle): Promise<Uint8Array> =>
    Promise.resolve(this.blobs.get(handle.path)!);
}

/** Checkpoints `backend`, returning bytes uploaded, sync-part ms and the handles. */
async function checkpoint(backend: KeyedStateBackend, store: CountingStore, id: number) {
  const before = store.written;
  const t0 = performance.now();
  const result = backend.snapshot(id, "checkpoint", "op");
  const syncMs = performance.now() - t0;
  const handles = await result.write(store.writer(id));
  if (store !== fullStore) fullStore.blobs.clear(); // keep only what the restore check needs
  return { bytes: store.written - before, syncMs, handles };
}

const fullStore = new CountingStore();
const incStore = new CountingStore();

function fmtBytes(n: number): string {
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

// ---------------------------------------------------------------------------
// Bytes per checkpoint

const keys = Math.round(MB * 1e6 / 100);
console.log(
  `state: ${keys} ValueState keys of ~100 bytes (${MB} MB), ${
    CHANGED * 100
  }% of keys changed per interval, ${CHECKPOINTS} incremental intervals`,
);
const heap = new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_P });
const changelog = new ChangelogKeyedStateBackend({
  inner: new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_P }),
});
const backends = [heap, changelog] as const;
const states = backends.map((b) => b.getValueState(new ValueStateDescriptor<string>("v")));
const build0 = performance.now();
for (let i = 0; i < keys; i++) {
  const key = `k${i}`;
  for (let b = 0; b < 2; b++) {
    backends[b]!.setCurrentKey(key);
    states[b]!.update(VALUE);
  }
}
console.log(`built in ${((performance.now() - build0) / 1000).toFixed(1)} s`);

let seed = 42;
const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const fullBytes: number[] = [];
const incBytes: number[] = [];
let incHandles: StateHandle[] = [];
for (let id = 1; id <= CHECKPOINTS + 1; id++) {
  if (id > 1) {
    const n = Math.round(keys * CHANGED);
    for (let j = 0; j < n; j++) {
      const key = `k${Math.floor(random() * keys)}`;
      const value = `${id}-${j}`.padEnd(88, "x");
      for (let b = 0; b < 2; b++) {
        backends[b]!.setCurrentKey(key);
        states[b]!.update(value);
      }
    }
  }
  gc();
  const full = await checkpoint(heap, fullStore, id);
  gc();
  const inc = await checkpoint(changelog, incStore, id);
  incHandles = inc.handles;
  fullBytes.push(full.bytes);
  incBytes.push(inc.bytes);
  console.log(
    `checkpoint ${id}: full ${fmtBytes(full.bytes)} (sync ${
      full.syncMs.toFixed(1)
    } ms) | incremental ${fmtBytes(inc.bytes)} (sync ${inc.syncMs.toFixed(1)} ms; ${
      inc.handles.filter((h) => h.kind === "keyed").length
    } materialization + ${
      inc.handles.filter((h) => h.kind === "keyed-incremental").length
    } segment handle(s))`,
  );
}

// The check: the incremental checkpoint restores the bare heap backend's state.
const restored = new ChangelogKeyedStateBackend({
  inner: new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_P }),
});
await restored.restore(incHandles, incStore.read);
const rv = restored.getValueState(new ValueStateDescriptor<string>("v"));
for (let i = 0; i < keys; i += Math.max(1, Math.floor(keys / 1000))) {
  const key = `k${i}`;
  heap.setCurrentKey(key);
  restored.setCurrentKey(key);
  if (rv.value() !== states[0]!.value()) {
    console.error(`restore check failed at key ${key}: ${rv.value()} != ${states[0]!.value()}`);
    Deno.exit(1);
  }
}
await Promise.all([heap.dispose(), changelog.dispose(), restored.dispose()]);
fullStore.blobs.clear();
incStore.blobs.clear();
gc();

// ---------------------------------------------------------------------------
// Per-write overhead

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const KEYS = 100_000;
const writeKeys = Array.from({ length: KEYS }, (_, i) => `u${i}`);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
function writeLoop(backend: KeyedStateBackend): { ns: number; cpuNs: number; captureMs: number } {
  const v = backend.getValueState(new ValueStateDescriptor<number>("n", { defaultValue: 0 }));
  const t0 = performance.now();
  const c0 = cpuMs();
  for (let i = 0; i < RECORDS; i++) {
    backend.setCurrentKey(writeKeys[i % KEYS]!);
    v.update(i);
  }
  const cpuNs = (cpuMs() - c0) * 1e6 / RECORDS;
  const ns = (performance.now() - t0) * 1e6 / RECORDS;
  const t1 = performance.now();
  backend.snapshot(1, "checkpoint", "op").discard?.();
  return { ns, cpuNs, captureMs: performance.now() - t1 };
}
const heapNs: number[] = [];
const clNs: number[] = [];
const ratios: number[] = [];
const cpuRatios: number[] = [];
const capture: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const bare = new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_P });
  const wrapped = new ChangelogKeyedStateBackend({
    inner: new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: MAX_P }),
    materialization: { intervalMs: Infinity, maxChangelogRatio: Infinity },
  });
  gc();
  const a = writeLoop(bare);
  gc();
  const b = writeLoop(wrapped);
  heapNs.push(a.ns);
  clNs.push(b.ns);
  ratios.push(b.ns / a.ns);
  cpuRatios.push(b.cpuNs / a.cpuNs);
  capture.push(b.captureMs);
  console.log(
    `round ${round + 1}: heap ${a.ns.toFixed(1)} ns/write (CPU ${a.cpuNs.toFixed(1)}), changelog ${
      b.ns.toFixed(1)
    } ns/write (CPU ${b.cpuNs.toFixed(1)}); ratio ${(b.ns / a.ns).toFixed(2)}, CPU ratio ${
      (b.cpuNs / a.cpuNs).toFixed(2)
    }; changelog capture of ${KEYS} changed keys ${b.captureMs.toFixed(1)} ms`,
  );
  await Promise.all([bare.dispose(), wrapped.dispose()]);
}

const incremental = incBytes.slice(1);
console.log(
  `full checkpoints: median ${fmtBytes(median(fullBytes))}; incremental after the first: median ${
    fmtBytes(median(incremental))
  }, max ${fmtBytes(Math.max(...incremental))} (target <= 2 MiB at 100 MB / 1%)`,
);
console.log(
  `per write: heap ${median(heapNs).toFixed(1)} ns, changelog ${
    median(clNs).toFixed(1)
  } ns, ratio ${median(ratios).toFixed(2)} (per-round ${
    ratios.map((r) => r.toFixed(2)).join(", ")
  })`,
);
console.log(resultLine({
  mb: MB,
  full_bytes: median(fullBytes),
  incremental_bytes: median(incremental),
  incremental_max_bytes: Math.max(...incremental),
  write_ns_heap: median(heapNs),
  write_ns_changelog: median(clNs),
  write_ratio: median(ratios),
  write_ratio_cpu: median(cpuRatios),
  capture_ms: median(capture),
}));
