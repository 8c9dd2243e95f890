/**
 * Event-time TTL (beyond Flink) in {@linkcode HeapKeyedStateBackend}: the
 * lifetime runs on the watermark given by `eventTimeClock`, nothing expires
 * before the first watermark, and what was written before counts as written
 * at event time's start. Watermarks are set by hand.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  type StateTtlConfig,
  ValueStateDescriptor,
} from "../api/state.ts";
import { HeapKeyedStateBackend, type KeyedStateSnapshot } from "./heap_keyed_backend.ts";
import { assignToKeyGroup, KeyGroupRange } from "./key_group.ts";
import { MIN_WATERMARK } from "../time/watermark.ts";

/** A backend whose processing time and watermark the test sets. */
function timed() {
  const time = { processing: 1_000_000, watermark: MIN_WATERMARK };
  const backend = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
    clock: () => time.processing,
    eventTimeClock: () => time.watermark,
  });
  return { time, backend };
}

const EVENT_TTL: StateTtlConfig = { ttlMs: 100, timeCharacteristic: "EventTime" };

Deno.test("an event-time TTL entry expires when the watermark passes its last write + ttl", () => {
  const { time, backend } = timed();
  const v = backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  backend.setCurrentKey("k");
  time.watermark = 1_000;
  v.update(1);
  time.processing += 1_000_000;
  assert.equal(v.value(), 1, "processing time does not age event-time state");
  time.watermark = 1_099;
  assert.equal(v.value(), 1);
  time.watermark = 1_100;
  assert.equal(v.value(), undefined);
  assert.equal(backend.numKeys("v"), 0, "reading the expired entry removed it");
});

Deno.test("before the first watermark nothing expires; earlier writes count from the first one", () => {
  const { time, backend } = timed();
  const v = backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  const list = backend.getListState(new ListStateDescriptor<string>("l", { ttl: EVENT_TTL }));
  backend.setCurrentKey("k");
  v.update(1);
  list.add("early");
  assert.equal(v.value(), 1);
  assert.deepEqual(
    backend.snapshotCanonical().states["v"]!.keyGroups[0]!.timestamps,
    [-Infinity],
    "a write before event time started carries -Infinity",
  );
  time.watermark = 5_000; // event time starts here
  assert.equal(v.value(), 1);
  list.add("late");
  time.watermark = 5_099;
  assert.equal(v.value(), 1);
  assert.deepEqual(list.get(), ["early", "late"]);
  time.watermark = 5_100;
  assert.equal(v.value(), undefined);
  assert.deepEqual(list.get(), []);
});

Deno.test("a state registered after event time started stamps restored early entries with the start", () => {
  const before = timed();
  const v = before.backend.getValueState(
    new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }),
  );
  before.backend.setCurrentKey("k");
  v.update(1);
  const snap = before.backend.snapshotCanonical();

  const { time, backend } = timed();
  const other = backend.getValueState(new ValueStateDescriptor<number>("o", { ttl: EVENT_TTL }));
  backend.restoreCanonical([snap]);
  backend.setCurrentKey("k");
  time.watermark = 2_000;
  assert.equal(other.value(), undefined); // reads the clock: event time starts at 2000
  time.watermark = 2_050;
  const v2 = backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  assert.equal(v2.value(), 1);
  time.watermark = 2_100;
  assert.equal(v2.value(), undefined, "its lifetime ran from the start of event time, 2000");
});

Deno.test("OnReadAndWrite restarts an event-time lifetime at the watermark of the read", () => {
  const { time, backend } = timed();
  const m = backend.getMapState(
    new MapStateDescriptor<string, number>("m", {
      ttl: { ...EVENT_TTL, updateType: "OnReadAndWrite" },
    }),
  );
  backend.setCurrentKey("k");
  time.watermark = 0;
  m.put("a", 1);
  time.watermark = 90;
  assert.equal(m.get("a"), 1);
  time.watermark = 189;
  assert.equal(m.get("a"), 1);
  time.watermark = 289;
  assert.equal(m.get("a"), undefined);
});

Deno.test("reducing and aggregating state expire on event time, namespaces included", () => {
  const { time, backend } = timed();
  const sum = backend.getReducingState(
    new ReducingStateDescriptor<number>("sum", (a, x) => a + x, { ttl: EVENT_TTL }),
  );
  const count = backend.getAggregatingState(
    new AggregatingStateDescriptor("count", {
      createAccumulator: () => 0,
      add: (_: string, acc: number) => acc + 1,
      getResult: (acc) => acc,
      merge: (a, b) => a + b,
    }, { ttl: EVENT_TTL }),
  );
  backend.setCurrentKey("k");
  time.watermark = 10;
  sum.setCurrentNamespace("w");
  sum.add(1);
  count.add("x");
  time.watermark = 60;
  sum.add(2);
  time.watermark = 110;
  assert.equal(sum.get(), 3);
  assert.equal(count.get(), undefined);
  time.watermark = 160;
  assert.equal(sum.get(), undefined);
});

Deno.test("snapshots record the TTL's clock, and restores keep event times", () => {
  const { time, backend } = timed();
  const v = backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  backend.setCurrentKey("k");
  time.watermark = 700;
  v.update(1);
  const snap = backend.snapshotCanonical();
  assert.deepEqual(snap.states["v"], {
    kind: "value",
    ttl: true,
    ttlTimeCharacteristic: "EventTime",
    keyGroups: [{
      keyGroup: assignToKeyGroup("k", 128),
      keys: ["k"],
      values: [1],
      timestamps: [700],
    }],
  });
  const after = timed();
  after.backend.restoreCanonical([snap]);
  const v2 = after.backend.getValueState(
    new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }),
  );
  after.backend.setCurrentKey("k");
  assert.equal(v2.value(), 1, "nothing expires before the first watermark after the restore");
  after.time.watermark = 799;
  assert.equal(v2.value(), 1);
  after.time.watermark = 800;
  assert.equal(v2.value(), undefined, "the restored last access, 700, counts");
});

Deno.test("moving a TTL to the other clock across a restore restarts every lifetime", () => {
  const { time, backend } = timed();
  const v = backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  backend.setCurrentKey("k");
  time.watermark = 5;
  v.update(1);
  const snap: KeyedStateSnapshot = backend.snapshotCanonical();
  const after = timed();
  after.backend.restoreCanonical([snap]);
  const v2 = after.backend.getValueState(
    new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } }),
  );
  after.backend.setCurrentKey("k");
  after.time.processing += 99;
  assert.equal(v2.value(), 1, "a watermark of 5 is not a processing time");
  after.time.processing += 1;
  assert.equal(v2.value(), undefined);
  assert.equal(
    after.backend.snapshotCanonical().states["v"]!.ttlTimeCharacteristic,
    "ProcessingTime",
  );
});

Deno.test("an event-time TTL needs an event-time clock; a TTL's clock is part of its identity", () => {
  const plain = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  assert.throws(
    () => plain.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL })),
    /Keyed state 'v' has an event-time TTL, but this state backend has no event-time clock/,
  );
  const { backend } = timed();
  backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: EVENT_TTL }));
  assert.throws(
    () => backend.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } })),
    /registered with TTL 100 ms OnCreateAndWrite in EventTime: cannot register it with TTL 100 ms OnCreateAndWrite in ProcessingTime/,
  );
  assert.throws(
    () =>
      backend.getValueState(
        new ValueStateDescriptor<number>("w", {
          ttl: { ttlMs: 1, timeCharacteristic: "IngestionTime" as "EventTime" },
        }),
      ),
    /unknown TTL 'timeCharacteristic' \(expected "ProcessingTime" or "EventTime"\): current value is "IngestionTime"/,
  );
});
