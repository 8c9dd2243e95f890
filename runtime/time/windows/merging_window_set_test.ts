import assert from "node:assert/strict";
import {
  type MergeFunctionArgs,
  MergingWindowSet,
  type MergingWindowState,
} from "./merging_window_set.ts";
import { EventTimeSessionWindows, ProcessingTimeSessionWindows } from "./session_windows.ts";
import { TimeWindow } from "./window.ts";
import { ManualClock } from "../manual_clock.ts";

/** A list state stand-in that counts its writes. */
class StoredPairs implements MergingWindowState {
  pairs: (readonly [string, string])[] = [];
  writes = 0;
  get(): readonly (readonly [string, string])[] {
    return this.pairs;
  }
  update(pairs: Iterable<readonly [string, string]>): void {
    this.pairs = [...pairs];
    this.writes++;
  }
}

/** What a merge function saw, as namespaces. */
function recorder() {
  const merges: { result: string; merged: string[]; stateWindow: string; mergedState: string[] }[] =
    [];
  const fn = (m: MergeFunctionArgs<TimeWindow>) =>
    merges.push({
      result: m.mergeResult.namespace,
      merged: m.mergedWindows.map((w) => w.namespace),
      stateWindow: m.stateWindowResult.namespace,
      mergedState: m.mergedStateWindows.map((w) => w.namespace),
    });
  return { merges, fn };
}

const w = (start: number, end: number) => new TimeWindow(start, end);
const sessions = EventTimeSessionWindows.withGap(5);

Deno.test("MergingWindowSet keeps windows that do not overlap as their own state windows", () => {
  const set = new MergingWindowSet(sessions, new StoredPairs());
  const { merges, fn } = recorder();
  assert.deepEqual(set.addWindow(w(0, 5), fn), w(0, 5));
  assert.deepEqual(set.addWindow(w(10, 15), fn), w(10, 15));
  assert.deepEqual(merges, []);
  assert.deepEqual(set.getStateWindow(w(10, 15)), w(10, 15));
  assert.equal(set.getStateWindow(w(5, 10)), undefined);
});

Deno.test("MergingWindowSet merges an overlapping window into the live one and keeps its state window", () => {
  const set = new MergingWindowSet(sessions, new StoredPairs());
  const { merges, fn } = recorder();
  set.addWindow(w(0, 5), fn);
  assert.deepEqual(set.addWindow(w(3, 8), fn), w(0, 8));
  assert.deepEqual(merges, [{
    result: "0:8",
    merged: ["0:5"],
    stateWindow: "0:5",
    mergedState: [],
  }]);
  assert.deepEqual(set.getStateWindow(w(0, 8)), w(0, 5));
  assert.equal(set.getStateWindow(w(0, 5)), undefined, "the merged window is no longer live");
});

Deno.test("MergingWindowSet bridges two sessions: one state window survives, the other is merged into it", () => {
  const set = new MergingWindowSet(sessions, new StoredPairs());
  const { merges, fn } = recorder();
  set.addWindow(w(0, 5), fn);
  set.addWindow(w(10, 15), fn);
  assert.deepEqual(set.addWindow(w(4, 11), fn), w(0, 15));
  assert.deepEqual(merges, [{
    result: "0:15",
    merged: ["0:5", "10:15"],
    stateWindow: "0:5",
    mergedState: ["10:15"],
  }]);
  assert.deepEqual(set.windows(), [w(0, 15)]);
});

Deno.test("MergingWindowSet adds a window inside a live one without a merge of state", () => {
  const set = new MergingWindowSet(sessions, new StoredPairs());
  const { merges, fn } = recorder();
  set.addWindow(w(0, 10), fn);
  assert.deepEqual(set.addWindow(w(2, 7), fn), w(0, 10));
  assert.deepEqual(merges, [], "the new window never had state: nothing to merge");
  assert.deepEqual(set.getStateWindow(w(0, 10)), w(0, 10));
});

Deno.test("MergingWindowSet keeps the state window when a window equal to a merged one is added again", () => {
  const dynamic = EventTimeSessionWindows.withDynamicGap<number>((gap) => gap);
  const set = new MergingWindowSet(dynamic, new StoredPairs());
  const { fn } = recorder();
  set.addWindow(w(0, 10), fn); // element at 0, gap 10
  set.addWindow(w(5, 15), fn); // element at 5, gap 10: [0, 15) stored under [0, 10)
  assert.deepEqual(set.addWindow(w(0, 15), fn), w(0, 15)); // element at 0, gap 15
  assert.deepEqual(set.getStateWindow(w(0, 15)), w(0, 10), "Flink would lose [0, 10) here");
});

Deno.test("MergingWindowSet.retireWindow removes a live window and refuses an unknown one", () => {
  const set = new MergingWindowSet(sessions, new StoredPairs());
  set.addWindow(w(0, 5), () => {});
  set.retireWindow(w(0, 5));
  assert.deepEqual(set.windows(), []);
  assert.throws(
    () => set.retireWindow(w(0, 5)),
    /TimeWindow\{start=0, end=5\} is not in the in-flight/,
  );
});

Deno.test("MergingWindowSet persists only changes, and a new set reads what was persisted", () => {
  const stored = new StoredPairs();
  const first = new MergingWindowSet(sessions, stored);
  first.addWindow(w(0, 5), () => {});
  first.addWindow(w(3, 8), () => {});
  first.persist();
  assert.deepEqual(stored.pairs, [["0:8", "0:5"]]);
  assert.equal(stored.writes, 1);

  const second = new MergingWindowSet(sessions, stored);
  assert.deepEqual(second.getStateWindow(w(0, 8)), w(0, 5));
  second.persist();
  assert.equal(stored.writes, 1, "unchanged: no write");
  second.addWindow(w(20, 25), () => {});
  second.retireWindow(w(20, 25));
  second.persist();
  assert.equal(stored.writes, 1, "changed and changed back: no write");
  second.retireWindow(w(0, 8));
  second.persist();
  assert.deepEqual(stored.pairs, []);
});

Deno.test("MergingWindowSet merges processing-time sessions as the ManualClock moves", () => {
  const clock = new ManualClock(1_000);
  const context = { currentProcessingTime: () => clock.now() };
  const assigner = ProcessingTimeSessionWindows.withGap(100);
  const set = new MergingWindowSet(assigner, new StoredPairs());
  const { merges, fn } = recorder();
  const add = () => set.addWindow(assigner.assignWindows("x", undefined, context)[0]!, fn);
  add();
  clock.advance(60);
  assert.deepEqual(add(), w(1_000, 1_160));
  clock.advance(100); // 1160: touches [1000, 1160)
  assert.deepEqual(add(), w(1_000, 1_260));
  clock.advance(101); // 1261: a new session
  assert.deepEqual(add(), w(1_261, 1_361));
  assert.deepEqual(merges.map((m) => m.result), ["1000:1160", "1000:1260"]);
  assert.deepEqual(set.windows().map((x) => [x.namespace, set.getStateWindow(x)!.namespace]), [
    ["1000:1260", "1000:1100"],
    ["1261:1361", "1261:1361"],
  ]);
});
