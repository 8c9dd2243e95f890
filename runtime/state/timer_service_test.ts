import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import {
  assignToKeyGroup,
  computeKeyGroupRangeForOperatorIndex,
  type Key,
  KeyGroupRange,
} from "./key_group.ts";
import {
  type InternalTimer,
  InternalTimerService,
  type TimerServiceSnapshot,
} from "./timer_service.ts";

function service<K extends Key = Key>(): InternalTimerService<K> {
  return new InternalTimerService<K>({ keyGroupOf: (key) => assignToKeyGroup(key, 128) });
}

function plain<K>(timers: InternalTimer<K>[]): [K, number, string][] {
  return timers.map((t) => [t.key, t.timestamp, t.namespace]);
}

Deno.test("event-time timers fire in timestamp order once the watermark passes them", () => {
  const timers = service<string>();
  timers.registerEventTimeTimer("c", 300);
  timers.registerEventTimeTimer("a", 100);
  timers.registerEventTimeTimer("b", 200);
  timers.registerEventTimeTimer("d", 400);
  assert.deepEqual(timers.advanceWatermark(99), []);
  assert.deepEqual(plain(timers.advanceWatermark(300)), [["a", 100, ""], ["b", 200, ""], [
    "c",
    300,
    "",
  ]]);
  assert.equal(timers.currentWatermark, 300);
  assert.equal(timers.numEventTimeTimers, 1);
  assert.equal(timers.nextEventTime(), 400);
});

Deno.test("registering the same (key, timestamp, namespace) twice fires once", () => {
  const timers = service<string>();
  assert.ok(timers.registerEventTimeTimer("k", 100));
  assert.ok(!timers.registerEventTimeTimer("k", 100));
  assert.ok(timers.registerEventTimeTimer("k", 100, "window-1"));
  assert.ok(timers.registerEventTimeTimer("other", 100));
  assert.equal(timers.numEventTimeTimers, 3);
  assert.equal(timers.advanceWatermark(100).length, 3);
  assert.ok(timers.registerEventTimeTimer("k", 100), "a fired timer can be registered again");
});

Deno.test("a timer deleted or fired right after its registration can be registered again", () => {
  const timers = service<string>();
  assert.ok(timers.registerEventTimeTimer("k", 100, "w"));
  assert.ok(timers.deleteEventTimeTimer("k", 100, "w"));
  assert.ok(timers.registerEventTimeTimer("k", 100, "w"), "registered again after its delete");
  assert.equal(timers.pollEventTimeTimer(100)?.key, "k");
  assert.ok(!timers.deleteEventTimeTimer("k", 100, "w"), "a fired timer is gone");
  assert.ok(timers.registerEventTimeTimer("k", 100, "w"), "registered again after it fired");
  assert.ok(timers.deleteEventTimeTimer("k", 100, "w"), "and deleted again");
  assert.ok(timers.registerEventTimeTimer("k", 100, "w"));
  assert.equal(timers.numEventTimeTimers, 1);
  assert.ok(!timers.deleteEventTimeTimer("k", 100, "other namespace"));
  assert.deepEqual(plain(timers.advanceWatermark(100)), [["k", 100, "w"]]);
  assert.ok(!timers.deleteEventTimeTimer("k", 100, "w"), "a fired timer is gone");
});

Deno.test("registerAbsentEventTimeTimer adds a timer without a lookup, but checks restored ones", () => {
  const timers = service<string>();
  timers.registerAbsentEventTimeTimer("a", 100, "w");
  timers.registerAbsentEventTimeTimer("b", 100, "w");
  assert.ok(!timers.registerEventTimeTimer("a", 100, "w"), "the checked registration finds it");
  timers.registerAbsentEventTimeTimer("c", 100, "w"); // into the slot indexed by that lookup
  assert.ok(!timers.registerEventTimeTimer("c", 100, "w"));
  // A restored slot of one timer: no lookup has indexed its bucket.
  const single = service<string>();
  single.registerEventTimeTimer("a", 100, "w");
  single.registerEventTimeTimer("b", 100, "other window");
  const restored = service<string>();
  restored.restore([single.snapshot()], new KeyGroupRange(0, 127));
  restored.registerAbsentEventTimeTimer("a", 100, "w"); // restored: checked, not duplicated
  assert.deepEqual(plain(restored.advanceWatermark(100)).map((t) => t[0]).sort(), ["a", "b"]);
  assert.equal(timers.advanceWatermark(100).length, 3);
});

Deno.test("tuple keys are deduplicated by content", () => {
  const timers = service<readonly [string, number]>();
  timers.registerProcessingTimeTimer(["a", 1], 5);
  timers.registerProcessingTimeTimer(["a", 1], 5);
  assert.equal(timers.numProcessingTimeTimers, 1);
  assert.ok(timers.deleteProcessingTimeTimer(["a", 1], 5));
});

Deno.test("a deleted timer never fires", () => {
  const timers = service<number>();
  for (let i = 0; i < 20; i++) timers.registerEventTimeTimer(i, 1_000 - i * 10);
  assert.ok(timers.deleteEventTimeTimer(5, 950));
  assert.ok(!timers.deleteEventTimeTimer(5, 950));
  assert.ok(!timers.deleteEventTimeTimer(5, 951));
  assert.ok(timers.deleteEventTimeTimer(0, 1_000));
  assert.ok(timers.deleteEventTimeTimer(19, 810));
  const fired = timers.advanceWatermark(Infinity);
  assert.equal(fired.length, 17);
  assert.ok(!fired.some((t) => t.key === 5 || t.key === 0 || t.key === 19));
  const stamps = fired.map((t) => t.timestamp);
  assert.deepEqual(stamps, [...stamps].sort((a, b) => a - b));
});

Deno.test("timers with equal timestamps fire in registration order", () => {
  const timers = service<string>();
  for (const key of ["x", "a", "m", "b"]) timers.registerEventTimeTimer(key, 7);
  assert.deepEqual(timers.advanceWatermark(7).map((t) => t.key), ["x", "a", "m", "b"]);
});

Deno.test("a heap of random timers with random deletions pops in order", () => {
  let seed = 12345;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const timers = service<number>();
  const live = new Map<string, [number, number]>();
  for (let i = 0; i < 2_000; i++) {
    const key = Math.floor(random() * 200);
    const ts = Math.floor(random() * 1_000);
    timers.registerEventTimeTimer(key, ts);
    live.set(`${key}/${ts}`, [key, ts]);
    if (random() < 0.3) {
      const [k, t] = [...live.values()][Math.floor(random() * live.size)]!;
      assert.ok(timers.deleteEventTimeTimer(k, t));
      live.delete(`${k}/${t}`);
    }
  }
  const fired = timers.advanceWatermark(1_000);
  assert.equal(fired.length, live.size);
  for (let i = 1; i < fired.length; i++) {
    assert.ok(fired[i - 1]!.timestamp <= fired[i]!.timestamp);
  }
  assert.deepEqual(
    new Set(fired.map((t) => `${t.key}/${t.timestamp}`)),
    new Set(live.keys()),
  );
});

Deno.test("timers at few timestamps fire as a reference model says, through deletes, polls and re-registrations", () => {
  // Few timestamps and many keys: big buckets with holes, so compaction runs.
  let seed = 777;
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const timers = service<number>();
  /** The reference: live timers with their registration sequence. */
  const model = new Map<string, { key: number; ts: number; ns: string; seq: number }>();
  let seq = 0;
  let watermark = -1;
  const id = (key: number, ts: number, ns: string) => `${key}/${ts}/${ns}`;
  const fireOrder = () => [...model.values()].sort((a, b) => a.ts - b.ts || a.seq - b.seq);
  for (let step = 0; step < 20_000; step++) {
    const r = random();
    const key = Math.floor(random() * 40);
    // Mostly ahead of the watermark; sometimes at it, due at the next poll.
    const ts = watermark + Math.floor(random() * 4);
    const ns = random() < 0.5 ? "w1" : "w2";
    if (r < 0.49) {
      const added = !model.has(id(key, ts, ns));
      // A timer known to be absent may skip the dedup lookup (and leave its bucket unindexed).
      if (added && random() < 0.5) timers.registerAbsentEventTimeTimer(key, ts, ns);
      else assert.equal(timers.registerEventTimeTimer(key, ts, ns), added);
      if (added) model.set(id(key, ts, ns), { key, ts, ns, seq: seq++ });
    } else if (r < 0.975) {
      const existed = model.delete(id(key, ts, ns));
      assert.equal(timers.deleteEventTimeTimer(key, ts, ns), existed);
    } else if (r < 0.985) {
      // One timer at a time, leaving the rest of its timestamp pending.
      const due = fireOrder()[0];
      const polled = timers.pollEventTimeTimer(watermark);
      if (due === undefined || due.ts > watermark) assert.equal(polled, undefined);
      else {
        assert.deepEqual(plain([polled!]), [[due.key, due.ts, due.ns]]);
        model.delete(id(due.key, due.ts, due.ns));
      }
    } else {
      watermark += 1;
      const expected = fireOrder().filter((t) => t.ts <= watermark);
      const fired = timers.advanceWatermark(watermark);
      assert.deepEqual(plain(fired), expected.map((t) => [t.key, t.ts, t.ns]));
      for (const t of expected) model.delete(id(t.key, t.ts, t.ns));
    }
    assert.equal(timers.numEventTimeTimers, model.size);
  }
  // A restore keeps every timer; equal timestamps then fire in snapshot (key-group) order.
  const restored = service<number>();
  restored.restore([timers.snapshot()], new KeyGroupRange(0, 127));
  const byTime = (a: [number, number, string], b: [number, number, string]) =>
    a[1] - b[1] || a[0] - b[0] || a[2].localeCompare(b[2]);
  const fired = plain(restored.advanceWatermark(Infinity));
  assert.deepEqual(fired.map((t) => t[1]), fireOrder().map((t) => t.ts));
  assert.deepEqual(
    fired.sort(byTime),
    fireOrder().map((t): [number, number, string] => [t.key, t.ts, t.ns]).sort(byTime),
  );
});

Deno.test("pollEventTimeTimer() also fires timers registered while firing", () => {
  const timers = service<string>();
  timers.registerEventTimeTimer("k", 10);
  const fired: number[] = [];
  for (let t = timers.pollEventTimeTimer(20); t; t = timers.pollEventTimeTimer(20)) {
    fired.push(t.timestamp);
    if (t.timestamp === 10) timers.registerEventTimeTimer("k", 15);
  }
  assert.deepEqual(fired, [10, 15]);
});

Deno.test("processing-time timers pop up to now and report the next wake-up", () => {
  const timers = service<string>();
  assert.equal(timers.nextProcessingTime(), undefined);
  timers.registerProcessingTimeTimer("a", 10_000);
  timers.registerProcessingTimeTimer("b", 5_000);
  assert.equal(timers.nextProcessingTime(), 5_000);
  assert.deepEqual(timers.popProcessingTimersUpTo(4_999), []);
  assert.deepEqual(plain(timers.popProcessingTimersUpTo(5_000)), [["b", 5_000, ""]]);
  assert.equal(timers.nextProcessingTime(), 10_000);
  assert.ok(timers.deleteProcessingTimeTimer("a", 10_000));
  assert.equal(timers.nextProcessingTime(), undefined);
  timers.registerProcessingTimeTimer("c", 1);
  assert.equal(timers.pollProcessingTimeTimer(0), undefined);
  assert.equal(timers.pollProcessingTimeTimer(1)?.key, "c");
  assert.equal(timers.numEventTimeTimers, 0, "domains are separate");
});

Deno.test("the seed example's rising-temperature timer warns after 10 s of rise only", () => {
  // Seed example 4: register now+10 s on a rise when no timer is set; delete it on a drop.
  const timers = service<string>();
  const pending = new Map<string, number>();
  const last = new Map<string, number>();
  let now = 0;
  const warnings: string[] = [];
  const onRecord = (id: string, temperature: number) => {
    const previous = last.get(id);
    last.set(id, temperature);
    const timer = pending.get(id);
    if (previous !== undefined && temperature > previous && timer === undefined) {
      pending.set(id, now + 10_000);
      timers.registerProcessingTimeTimer(id, now + 10_000);
    } else if (previous !== undefined && temperature < previous && timer !== undefined) {
      timers.deleteProcessingTimeTimer(id, timer);
      pending.delete(id);
    }
  };
  const advance = (to: number) => {
    now = to;
    for (const t of timers.popProcessingTimersUpTo(now)) {
      pending.delete(t.key);
      warnings.push(`sensor ${t.key} temperature rose continuously for 10000 ms`);
    }
  };
  onRecord("sensor_1", 30);
  advance(1_000);
  onRecord("sensor_1", 31); // timer at 11 000
  onRecord("sensor_2", 20);
  advance(2_000);
  onRecord("sensor_2", 25); // timer at 12 000
  advance(5_000);
  onRecord("sensor_2", 10); // drop: deleted
  advance(11_000);
  assert.deepEqual(warnings, ["sensor sensor_1 temperature rose continuously for 10000 ms"]);
  advance(20_000);
  assert.equal(warnings.length, 1);
});

Deno.test("snapshot() groups pending timers by key group", () => {
  const timers = service<string>();
  timers.registerEventTimeTimer("a", 20);
  timers.registerEventTimeTimer("a", 10, "w");
  timers.registerProcessingTimeTimer("b", 5);
  const snap = timers.snapshot();
  assert.deepEqual(snap, {
    version: 1,
    eventTime: [{
      keyGroup: assignToKeyGroup("a", 128),
      keys: ["a", "a"],
      timestamps: [10, 20],
      namespaces: ["w", ""],
    }],
    processingTime: [{
      keyGroup: assignToKeyGroup("b", 128),
      keys: ["b"],
      timestamps: [5],
      namespaces: [""],
    }],
  });
  timers.advanceWatermark(100);
  assert.equal(snap.eventTime.length, 1, "a snapshot is unaffected by later firing");
  assert.deepEqual(timers.snapshot().eventTime, []);
});

Deno.test("restore() brings back every timer, through MessagePack too", () => {
  const timers = service<Key>();
  timers.registerEventTimeTimer("a", 30);
  timers.registerEventTimeTimer(["t", 1], 10, "ns");
  timers.registerEventTimeTimer(7, 20);
  timers.registerProcessingTimeTimer("p", 1_000);
  const snap = decode(encode(timers.snapshot())) as TimerServiceSnapshot;
  const restored = service<Key>();
  restored.restore([snap], new KeyGroupRange(0, 127));
  assert.deepEqual(
    plain(restored.advanceWatermark(100)),
    [[["t", 1], 10, "ns"], [7, 20, ""], ["a", 30, ""]],
  );
  assert.equal(restored.nextProcessingTime(), 1_000);
  restored.registerProcessingTimeTimer("p", 1_000);
  assert.equal(restored.numProcessingTimeTimers, 1, "restored timers deduplicate");
});

Deno.test("restoring 2 subtasks' timers over 3 subtasks keeps each timer exactly once", () => {
  const old = [service<string>(), service<string>()];
  const all: string[] = [];
  for (let i = 0; i < 300; i++) {
    const key = `key-${i}`;
    const owner = assignToKeyGroup(key, 128) < 64 ? 0 : 1;
    old[owner]!.registerEventTimeTimer(key, i);
    old[owner]!.registerProcessingTimeTimer(key, 10_000 + i);
    all.push(key);
  }
  const snapshots = old.map((s) => s.snapshot());
  const seen = new Map<string, number>();
  for (let i = 0; i < 3; i++) {
    const range = computeKeyGroupRangeForOperatorIndex(128, 3, i);
    const fresh = service<string>();
    fresh.restore(snapshots, range);
    const fired = fresh.advanceWatermark(Infinity);
    assert.equal(fresh.popProcessingTimersUpTo(Infinity).length, fired.length);
    for (const t of fired) {
      assert.ok(range.contains(assignToKeyGroup(t.key, 128)));
      assert.ok(!seen.has(t.key), `${t.key} restored twice`);
      seen.set(t.key, t.timestamp);
    }
  }
  assert.equal(seen.size, all.length);
  all.forEach((key, i) => assert.equal(seen.get(key), i));
});

Deno.test("timers reject a NaN timestamp and a snapshot of another version", () => {
  const timers = service<string>();
  assert.throws(
    () => timers.registerEventTimeTimer("k", NaN),
    /event-time timer's timestamp must be a number of ms: current value is NaN/,
  );
  assert.throws(
    () =>
      timers.restore(
        [{ version: 2, eventTime: [], processingTime: [] } as unknown as TimerServiceSnapshot<
          string
        >],
        new KeyGroupRange(0, 127),
      ),
    /unsupported version, current value is 2/,
  );
});
