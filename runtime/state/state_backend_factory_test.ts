import assert from "node:assert/strict";
import { checkStateBackendConfig, createKeyedStateBackend } from "./state_backend_factory.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { SqliteKeyedStateBackend } from "./sqlite/sqlite_keyed_backend.ts";
import { KeyGroupRange } from "./key_group.ts";

const params = { keyGroupRange: new KeyGroupRange(0, 15), maxParallelism: 16, name: "t" };

Deno.test("createKeyedStateBackend builds the heap backend by default and the SQLite backend under localDirectory", async () => {
  const heap = await createKeyedStateBackend(undefined, params);
  assert.ok(heap instanceof HeapKeyedStateBackend);
  await heap.dispose();
  const dir = await Deno.makeTempDir({ prefix: "weir-factory-test-" });
  try {
    const sqlite = await createKeyedStateBackend({ kind: "sqlite", localDirectory: dir }, params);
    assert.ok(sqlite instanceof SqliteKeyedStateBackend);
    assert.ok(sqlite.databasePath.startsWith(dir));
    assert.equal(sqlite.keyGroupRange.endKeyGroup, 15);
    await sqlite.dispose();
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkStateBackendConfig refuses an unknown kind, a sqlite option on heap and a bad cache size, naming the value", () => {
  assert.throws(
    () => checkStateBackendConfig({ kind: "rocksdb" as "heap" }, "job 'x'"),
    /job 'x': unknown state backend \(known: heap, sqlite\): current value is "rocksdb"/,
  );
  assert.throws(
    () => checkStateBackendConfig({ kind: "heap", localDirectory: "/tmp" }, "w"),
    /'localDirectory' applies to the "sqlite" state backend only/,
  );
  assert.throws(
    () => checkStateBackendConfig({ kind: "sqlite", cacheEntries: 0.5 }, "w"),
    /'cacheEntries' must be an integer ≥ 1: current value is 0.5/,
  );
  assert.throws(
    () => checkStateBackendConfig({ kind: "sqlite", localDirectory: "" }, "w"),
    TypeError,
  );
  assert.deepEqual(checkStateBackendConfig(undefined, "w"), { kind: "heap" });
});
