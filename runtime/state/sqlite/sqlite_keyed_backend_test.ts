import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { SqliteKeyedStateBackend } from "./sqlite_keyed_backend.ts";
import { HeapKeyedStateBackend } from "../heap_keyed_backend.ts";
import {
  assignToKeyGroup,
  computeKeyGroupRangeForOperatorIndex,
  type Key,
  KeyGroupRange,
} from "../key_group.ts";
import {
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../../api/state.ts";
import type { KeyedStateBackend } from "../keyed_state_backend.ts";
import type { StateHandle } from "../../checkpoint/snapshot_contract.ts";
import { TestBlobs } from "./_test_blobs.ts";

const MAX = 128;
const ALL = new KeyGroupRange(0, MAX - 1);

async function withBackend(
  options: {
    cacheEntries?: number;
    writeBatchSize?: number;
    snapshotChunkRows?: number;
    localDirectory?: string;
    range?: KeyGroupRange;
    clock?: () => number;
  },
  body: (b: SqliteKeyedStateBackend) => Promise<void> | void,
): Promise<void> {
  const { range, ...rest } = options;
  const b = await SqliteKeyedStateBackend.create({
    keyGroupRange: range ?? ALL,
    maxParallelism: MAX,
    name: "unit",
    ...rest,
  });
  try {
    await body(b);
  } finally {
    await b.dispose();
  }
}

const sumOf = new ValueStateDescriptor<number>("sum", { defaultValue: 0 });

Deno.test("SqliteKeyedStateBackend keeps its database in a fresh directory under localDirectory, in WAL mode, and deletes it on dispose", async () => {
  const local = await Deno.makeTempDir({ prefix: "weir-sqlite-unit-" });
  try {
    const b = await SqliteKeyedStateBackend.create({
      keyGroupRange: ALL,
      maxParallelism: MAX,
      localDirectory: `${local}/nested`,
      name: "job/op#0",
    });
    const path = b.databasePath;
    assert.ok(path.startsWith(`${local}/nested/weir-sqlite-job_op_0-`), path);
    const sum = b.getValueState(sumOf);
    b.setCurrentKey("a");
    sum.update(1);
    b.snapshot(1, "checkpoint", "op").discard?.(); // flushes
    const peek = new DatabaseSync(path, { readOnly: true });
    assert.equal(
      (peek.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode,
      "wal",
    );
    assert.equal((peek.prepare("SELECT count(*) AS n FROM s0").get() as { n: number }).n, 1);
    peek.close();
    await b.dispose();
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    assert.throws(() => b.setCurrentKey("a") === undefined && sum.update(2), /disposed/);
  } finally {
    await Deno.remove(local, { recursive: true });
  }
});

Deno.test("reads and writes of a hot key are served by the cache without touching SQLite", async () => {
  await withBackend({ cacheEntries: 100 }, (b) => {
    const sum = b.getValueState(sumOf);
    b.setCurrentKey("hot");
    sum.update(1);
    const misses = b.cacheStats.misses;
    for (let i = 0; i < 10_000; i++) {
      b.setCurrentKey("hot");
      sum.update(sum.value()! + 1);
    }
    assert.equal(b.cacheStats.misses, misses);
    assert.equal(b.cacheStats.writeBacks, 0);
    assert.equal(sum.value(), 10_001);
  });
});

Deno.test("a cache ten times too small writes dirty entries back in batches and loses nothing", async () => {
  await withBackend({ cacheEntries: 100, writeBatchSize: 50 }, (b) => {
    const sum = b.getValueState(sumOf);
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 1000; k++) {
        b.setCurrentKey(k);
        sum.update(sum.value()! + k);
      }
    }
    assert.ok(b.cachedEntries <= 100, `${b.cachedEntries} entries cached`);
    const { writeBacks, entriesWritten } = b.cacheStats;
    assert.ok(entriesWritten >= 2900, `${entriesWritten} entries written`);
    assert.ok(entriesWritten / writeBacks >= 40, `${entriesWritten} in ${writeBacks} batches`);
    for (let k = 0; k < 1000; k++) {
      b.setCurrentKey(k);
      assert.equal(sum.value(), 3 * k);
    }
    assert.equal(b.numKeys("sum"), 1000);
  });
});

Deno.test("keys of every type stay distinct through SQLite: 1, '1', 1n, true, tuples and strings with U+0000/U+0001", async () => {
  const keys: Key[] = [
    1,
    "1",
    1n,
    true,
    false,
    0,
    "",
    "\u0000",
    "\u0001",
    "a\u0000b",
    "a\u0001\u0002b",
    [
      "a",
      1,
    ],
    ["a", "1"],
    ["\u0000(", 2n, true],
  ];
  await withBackend({ cacheEntries: 2, writeBatchSize: 1 }, (b) => {
    const v = b.getValueState(new ValueStateDescriptor<string>("v"));
    const m = b.getMapState(new MapStateDescriptor<unknown, number>("m"));
    keys.forEach((k, i) => {
      b.setCurrentKey(k);
      v.update(`value ${i}`);
      m.put(1, i);
      m.put("1", 100 - i);
      m.put("\u0000x", i * 10);
    });
    keys.forEach((k, i) => {
      b.setCurrentKey(k);
      assert.equal(v.value(), `value ${i}`, `key ${JSON.stringify(String(k))}`);
      assert.deepEqual(
        new Map(m.entries()),
        new Map<unknown, number>([[1, i], ["1", 100 - i], ["\u0000x", i * 10]]),
      );
    });
    const listed = [...b.keys("v")];
    assert.equal(listed.length, keys.length);
    for (const k of keys) {
      assert.ok(
        listed.some((l) =>
          JSON.stringify(String(l)) === JSON.stringify(String(k)) && typeof l === typeof k
        ),
      );
    }
  });
});

Deno.test("a map state refuses a user key that is not a primitive, naming the state", async () => {
  await withBackend({}, (b) => {
    const m = b.getMapState(new MapStateDescriptor<unknown, number>("lookup"));
    b.setCurrentKey("a");
    assert.throws(
      () => m.put({ x: 1 }, 1),
      (e: Error) => e instanceof TypeError && /MapState 'lookup'/.test(e.message),
    );
    assert.ok(m.isEmpty());
  });
});

Deno.test("option checks name the option and its value", async () => {
  await assert.rejects(
    SqliteKeyedStateBackend.create({ keyGroupRange: ALL, maxParallelism: MAX, cacheEntries: 0 }),
    /'cacheEntries' must be an integer ≥ 1: current value is 0/,
  );
  await assert.rejects(
    SqliteKeyedStateBackend.create({
      keyGroupRange: new KeyGroupRange(0, 200),
      maxParallelism: MAX,
    }),
    RangeError,
  );
});

Deno.test("snapshot isolation: a pinned read view ignores write-backs, deletes and re-inserts made after snapshot()", async () => {
  const blobs = new TestBlobs();
  await withBackend({ cacheEntries: 10, writeBatchSize: 5 }, async (b) => {
    const sum = b.getValueState(sumOf);
    const list = b.getListState(new ListStateDescriptor<number>("list"));
    for (let k = 0; k < 200; k++) {
      b.setCurrentKey(k);
      sum.update(k);
      list.add(k);
    }
    const result = b.snapshot(1, "checkpoint", "op");
    assert.equal(b.openSnapshots, 1);
    // After the capture: overwrite, clear and append through a cache that writes back constantly.
    for (let k = 0; k < 200; k++) {
      b.setCurrentKey(k);
      if (k % 2 === 0) sum.clear();
      else sum.update(-k);
      list.add(1000 + k);
    }
    b.setCurrentKey(999);
    sum.update(999);
    assert.ok(b.cacheStats.writeBacks > 10);
    const handles = await blobs.write(result);
    assert.equal(b.openSnapshots, 0);
    const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX });
    await heap.restore(handles, blobs.read);
    const hs = heap.getValueState(sumOf);
    const hl = heap.getListState(new ListStateDescriptor<number>("list"));
    assert.equal(heap.numKeys("sum"), 200);
    for (let k = 0; k < 200; k++) {
      heap.setCurrentKey(k);
      assert.equal(hs.value(), k);
      assert.deepEqual(hl.get(), [k]);
    }
  });
});

Deno.test("a snapshot writes one private 'keyed' blob per chunk of key groups, the chunks covering the range in order", async () => {
  const blobs = new TestBlobs();
  const range = new KeyGroupRange(10, 73);
  await withBackend({ snapshotChunkRows: 50, range }, async (b) => {
    const sum = b.getValueState(sumOf);
    let n = 0;
    for (let k = 0; n < 500; k++) {
      const kg = assignToKeyGroup(k, MAX);
      if (!range.contains(kg)) continue;
      b.setCurrentKey(k, kg);
      sum.update(k);
      n++;
    }
    const handles = await blobs.write(b.snapshot(7, "savepoint", "my op"));
    assert.ok(handles.length >= 5, `${handles.length} handles`);
    let next = 10;
    for (const h of handles) {
      assert.equal(h.kind, "keyed");
      assert.equal(h.shared, false);
      assert.equal(h.uid, "my op");
      assert.equal(h.keyGroupRange![0], next);
      next = h.keyGroupRange![1] + 1;
    }
    assert.equal(next, 74);
  });
});

/** Writes `keys` into value, list, map and reducing state, in the default namespace and one window. */
function populate(b: KeyedStateBackend, keys: readonly number[]): void {
  const v = b.getValueState(sumOf);
  const l = b.getListState(new ListStateDescriptor<number>("list"));
  const m = b.getMapState(new MapStateDescriptor<string, number>("map"));
  const r = b.getReducingState(
    new ReducingStateDescriptor<number>("max", (a, x) => Math.max(a, x)),
  );
  for (const k of keys) {
    b.setCurrentKey(k);
    v.update(k * 2);
    l.addAll([k, k + 1]);
    m.put("a", k);
    m.put("b", 1000 - k);
    r.setCurrentNamespace("0:1000");
    r.add(k);
    r.add(k - 1);
    r.setCurrentNamespace("");
  }
}

/** Reads back what {@linkcode populate} wrote, for `keys` this backend owns. */
function check(b: KeyedStateBackend, keys: readonly number[]): void {
  const v = b.getValueState(sumOf);
  const l = b.getListState(new ListStateDescriptor<number>("list"));
  const m = b.getMapState(new MapStateDescriptor<string, number>("map"));
  const r = b.getReducingState(
    new ReducingStateDescriptor<number>("max", (a, x) => Math.max(a, x)),
  );
  r.setCurrentNamespace("0:1000");
  for (const k of keys) {
    b.setCurrentKey(k);
    assert.equal(v.value(), k * 2);
    assert.deepEqual(l.get(), [k, k + 1]);
    assert.deepEqual(m.entries().sort(), [["a", k], ["b", 1000 - k]]);
    assert.equal(r.get(), k);
  }
  assert.equal(b.numKeys("sum"), keys.length);
}

async function snapshotAll(
  backends: readonly KeyedStateBackend[],
  blobs: TestBlobs,
  id: number,
): Promise<StateHandle[]> {
  const handles: StateHandle[] = [];
  for (const b of backends) {
    handles.push(...await blobs.write(b.snapshot(id, "savepoint", "op"), id, "savepoint"));
  }
  return handles;
}

Deno.test("a savepoint moves between backends and parallelisms: heap 2 -> SQLite 4 -> SQLite 3 -> heap 1, every key kept", async () => {
  const blobs = new TestBlobs();
  const keys = Array.from({ length: 3000 }, (_, i) => i);
  const owned = (range: KeyGroupRange) =>
    keys.filter((k) => range.contains(assignToKeyGroup(k, MAX)));
  const ranges = (p: number) =>
    Array.from({ length: p }, (_, i) => computeKeyGroupRangeForOperatorIndex(MAX, p, i));

  const heaps = ranges(2).map((r) =>
    new HeapKeyedStateBackend({ keyGroupRange: r, maxParallelism: MAX })
  );
  heaps.forEach((h) => populate(h, owned(h.keyGroupRange)));
  let handles = await snapshotAll(heaps, blobs, 1);

  for (const [id, p] of [[2, 4], [3, 3]] as const) {
    const sqlites = await Promise.all(
      ranges(p).map((r) =>
        SqliteKeyedStateBackend.create({
          keyGroupRange: r,
          maxParallelism: MAX,
          cacheEntries: 300,
          snapshotChunkRows: 500,
        })
      ),
    );
    try {
      for (const s of sqlites) {
        await s.restore(handles, blobs.read);
        check(s, owned(s.keyGroupRange));
      }
      handles = await snapshotAll(sqlites, blobs, id);
    } finally {
      await Promise.all(sqlites.map((s) => s.dispose()));
    }
  }
  const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX });
  await heap.restore(handles, blobs.read);
  check(heap, keys);
});

Deno.test("restore skips handles whose key-group range misses the backend's, and refuses another kind naming the handle", async () => {
  const blobs = new TestBlobs();
  await withBackend({ range: new KeyGroupRange(0, 63) }, async (b) => {
    let read = 0;
    const counting = (h: StateHandle) => {
      read++;
      return blobs.read(h);
    };
    const missing: StateHandle = {
      path: "chk-1/x",
      bytes: 1,
      kind: "keyed",
      shared: false,
      uid: "op",
      keyGroupRange: [64, 127],
    };
    await b.restore([missing], counting);
    assert.equal(read, 0);
    await assert.rejects(
      b.restore([{ ...missing, kind: "keyed-incremental", keyGroupRange: [0, 127] }], counting),
      /handle 'chk-1\/x'.*kind 'keyed' only, current value is 'keyed-incremental'/,
    );
  });
});

Deno.test("a TTL enabled after the restore stamps every restored entry with the registration time", async () => {
  const blobs = new TestBlobs();
  let now = 1000;
  await withBackend({ clock: () => now }, async (a) => {
    const plain = a.getValueState(new ValueStateDescriptor<number>("t"));
    a.setCurrentKey("k");
    plain.update(5);
    const handles = await blobs.write(a.snapshot(1, "checkpoint", "op"));
    await withBackend({ clock: () => now }, async (b) => {
      await b.restore(handles, blobs.read);
      now = 5000;
      const ttl = b.getValueState(new ValueStateDescriptor<number>("t", { ttl: { ttlMs: 100 } }));
      b.setCurrentKey("k");
      now = 5099;
      assert.equal(ttl.value(), 5);
      now = 5100;
      assert.equal(ttl.value(), undefined);
    });
  });
});

Deno.test("dispose with a snapshot in flight closes its view: write() then fails, naming the operator", async () => {
  const blobs = new TestBlobs();
  const b = await SqliteKeyedStateBackend.create({ keyGroupRange: ALL, maxParallelism: MAX });
  const sum = b.getValueState(sumOf);
  b.setCurrentKey("a");
  sum.update(1);
  const result = b.snapshot(1, "checkpoint", "op-x");
  await b.dispose();
  await assert.rejects(
    blobs.write(result),
    /snapshot of 'op-x' \(checkpoint 1\) cannot be written: its SQLite keyed state backend was disposed/,
  );
});

Deno.test("dispose waits for a snapshot write in progress, then deletes the database", async () => {
  const blobs = new TestBlobs();
  const b = await SqliteKeyedStateBackend.create({
    keyGroupRange: ALL,
    maxParallelism: MAX,
    snapshotChunkRows: 10,
  });
  const sum = b.getValueState(sumOf);
  for (let k = 0; k < 500; k++) {
    b.setCurrentKey(k);
    sum.update(k);
  }
  const writing = blobs.write(b.snapshot(1, "checkpoint", "op")); // yields after every chunk
  const disposed = b.dispose();
  const handles = await writing;
  await disposed;
  await assert.rejects(Deno.stat(b.databasePath), Deno.errors.NotFound);
  const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX });
  await heap.restore(handles, blobs.read);
  assert.equal(heap.numKeys("sum"), 500);
});
