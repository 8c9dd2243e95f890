import assert from "node:assert/strict";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  ReducingStateDescriptor,
} from "../../api/state.ts";
import type { AggregateFunction } from "../../api/functions.ts";
import { HeapKeyedStateBackend } from "../../state/heap_keyed_backend.ts";
import { KeyGroupRange } from "../../state/key_group.ts";
import { CountEvictor } from "../../time/windows/evictors.ts";
import { TimeWindow } from "../../time/windows/window.ts";
import {
  EvictingContents,
  ListContents,
  ValueContents,
  type WindowContents,
} from "./window_contents.ts";

const count: AggregateFunction<number, number, number> = {
  createAccumulator: () => 0,
  add: (_v, acc) => acc + 1,
  getResult: (acc) => acc,
  merge: (a, b) => a + b,
};

/** Each contents kind over a fresh heap backend, with the backend to set keys on. */
function kinds(): [string, WindowContents, HeapKeyedStateBackend][] {
  const backend = () =>
    new HeapKeyedStateBackend({ keyGroupRange: new KeyGroupRange(0, 127), maxParallelism: 128 });
  const list = backend();
  const reducing = backend();
  const aggregating = backend();
  const evicting = backend();
  return [
    ["list", new ListContents(list.getListState(new ListStateDescriptor("c"))), list],
    [
      "reducing",
      new ValueContents(
        reducing.getReducingState(new ReducingStateDescriptor<unknown>("c", (_a, b) => b)),
      ),
      reducing,
    ],
    [
      "aggregating",
      new ValueContents(
        aggregating.getAggregatingState(
          new AggregatingStateDescriptor("c", count as AggregateFunction<unknown, number, number>),
        ),
      ),
      aggregating,
    ],
    [
      "evicting",
      new EvictingContents({
        state: evicting.getListState(
          new ListStateDescriptor<readonly [unknown, number | null]>("c"),
        ),
        evictor: CountEvictor.of(1),
        fold: { kind: "none" },
        context: { currentProcessingTime: () => 0, currentWatermark: () => 0 },
      }),
      evicting,
    ],
  ];
}

Deno.test("WindowContents.add tells whether the key's window held contents before, per window and key", async (t) => {
  for (const [kind, contents, backend] of kinds()) {
    await t.step(kind, () => {
      const [w1, w2] = [new TimeWindow(0, 10).namespace, new TimeWindow(10, 20).namespace];
      backend.setCurrentKey("a");
      assert.equal(contents.add(w1, 1, 1), false, "the first element");
      assert.equal(contents.add(w1, 2, 2), true, "the second element");
      assert.equal(contents.add(w2, 3, 11), false, "another window");
      backend.setCurrentKey("b");
      assert.equal(contents.add(w1, 4, 3), false, "another key");
      backend.setCurrentKey("a");
      contents.clear(w1);
      assert.equal(contents.add(w1, 5, 4), false, "after the window was cleared");
    });
  }
});
