/**
 * The changelog backend keys its dirty sets by the heap backend's own
 * identity of the current key (`currentKeyIdentity`: a composite key's
 * interned tuple) instead of building a string per write. A key none of
 * whose entries is stored may get a new identity after the interner's
 * sweep; these tests make that happen inside one checkpoint interval and
 * check that the changelog still replays to the state as written.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ValueStateDescriptor } from "../../api/state.ts";
import { HeapKeyedStateBackend } from "../heap_keyed_backend.ts";
import { KeyGroupRange } from "../key_group.ts";
import { MIN_SWEEP_SIZE } from "../_key_interner.ts";
import { MemoryBlobStore, writeSnapshot } from "../_conformance_kit.ts";
import { ChangelogKeyedStateBackend } from "./changelog_keyed_backend.ts";

const RANGE = new KeyGroupRange(0, 127);

function changelogOverHeap(): ChangelogKeyedStateBackend {
  return new ChangelogKeyedStateBackend({
    inner: new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: 128 }),
    materialization: { intervalMs: Infinity, maxChangelogRatio: Infinity },
  });
}

Deno.test("ChangelogKeyedStateBackend over the heap uses the heap's interned key identity", () => {
  const inner = new HeapKeyedStateBackend({ keyGroupRange: RANGE, maxParallelism: 128 });
  const backend = new ChangelogKeyedStateBackend({ inner });
  assert.equal(inner.currentKeyIdentity, undefined);
  backend.setCurrentKey([1, 2]);
  const first = inner.currentKeyIdentity;
  backend.setCurrentKey([1, 2]);
  assert.equal(inner.currentKeyIdentity, first); // the same canonical tuple
  backend.setCurrentKey("a");
  assert.equal(inner.currentKeyIdentity, "a");
});

Deno.test("ChangelogKeyedStateBackend replays a key cleared, swept from the interner and written again within one interval", async () => {
  const store = new MemoryBlobStore();
  const backend = changelogOverHeap();
  const seen = backend.getValueState(new ValueStateDescriptor<number>("seen"));
  // Checkpoint 1 holds keys [0, i].
  for (let i = 0; i < 100; i++) {
    backend.setCurrentKey([0, i]);
    seen.update(i);
  }
  await writeSnapshot(store, backend.snapshot(1, "checkpoint", "op"), 1, "checkpoint");
  // Interval 2: clear them all, then intern enough other keys that the
  // interner sweeps the cleared ones, then write [0, 7] again.
  for (let i = 0; i < 100; i++) {
    backend.setCurrentKey([0, i]);
    seen.clear();
  }
  backend.setCurrentKey([0, 7]);
  const before = backend.inner.currentKeyIdentity;
  for (let i = 0; i < 2 * MIN_SWEEP_SIZE; i++) {
    backend.setCurrentKey([1, i]);
    seen.value(); // interns the key, stores nothing
  }
  backend.setCurrentKey([0, 7]);
  assert.notEqual(backend.inner.currentKeyIdentity, before, "the sweep gave [0, 7] a new identity");
  seen.update(42);
  const handles = await writeSnapshot(
    store,
    backend.snapshot(2, "checkpoint", "op"),
    2,
    "checkpoint",
  );

  const restored = changelogOverHeap();
  await restored.restore(handles, store.read);
  const again = restored.getValueState(new ValueStateDescriptor<number>("seen"));
  restored.setCurrentKey([0, 7]);
  assert.equal(again.value(), 42);
  restored.setCurrentKey([0, 8]);
  assert.equal(again.value(), undefined);
  assert.equal(restored.numKeys("seen"), 1);
});
