import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { metadata } from "./storage_conformance.ts";
import {
  type RetainedCheckpoint,
  retainedCheckpointOf,
  type SharedStateReference,
  SharedStateRegistry,
} from "./shared_state_registry.ts";

const shared = (name: string): SharedStateReference => ({ path: `shared/${name}`, shared: true });
const own = (id: number, name: string): SharedStateReference => ({
  path: `chk-${id}/${name}`,
  shared: false,
});

Deno.test("SharedStateRegistry returns a shared path once no checkpoint refers to it", () => {
  const r = new SharedStateRegistry();
  r.register(1, [shared("a"), shared("b"), own(1, "x")]);
  r.register(1, [shared("a")]); // a second subtask's ack, same blob: counted once
  r.complete(1);
  r.register(2, [shared("b"), shared("c")]);
  r.complete(2);
  assert.equal(r.referenceCount("shared/a"), 1);
  assert.equal(r.referenceCount("shared/b"), 2);
  assert.deepEqual(r.discard(1), ["shared/a"]);
  assert.deepEqual(r.discard(1), [], "discarding again is harmless");
  assert.deepEqual(r.referencedPaths(), ["shared/b", "shared/c"]);
  assert.deepEqual(r.discard(2), ["shared/b", "shared/c"]);
  assert.deepEqual(r.checkpoints(), []);
});

Deno.test("SharedStateRegistry keeps what a pending checkpoint refers to through retention", () => {
  const r = new SharedStateRegistry();
  r.register(1, [shared("a")]);
  r.complete(1);
  r.register(2, [shared("a"), shared("n2")]); // in flight, built on 1
  assert.deepEqual(r.discard(1), [], "pending checkpoint 2 still refers to shared/a");
  assert.equal(r.statusOf(1), "discarded", "held while 2 is in flight");
  assert.equal(r.statusOf(2), "pending");
  r.abort(2);
  assert.equal(r.statusOf(2), "aborted");
  assert.deepEqual(r.releaseAborted(), ["shared/n2"], "the discarded 1 still holds shared/a");
  assert.equal(r.statusOf(2), undefined);
  assert.deepEqual(r.releaseDiscarded(), ["shared/a"]);
  assert.equal(r.statusOf(1), undefined);
});

Deno.test("SharedStateRegistry holds a discarded checkpoint's blobs while a checkpoint in flight may refer to them before its ack (chaos_incremental_test: the final checkpoint lost the old chain)", () => {
  const r = new SharedStateRegistry();
  // A subtask's chain: materialization 42 and segment 30, registered by 43.
  r.begin(43);
  r.register(43, [shared("mat-42"), shared("seg-30")]);
  r.complete(43);
  // 44 materializes; the final checkpoint 45, taken beside it while the
  // materialization is written, appends to the old chain.
  r.begin(44);
  r.begin(45);
  r.register(44, [shared("mat-44")]);
  r.complete(44);
  // Retention drops 43 before 45's ack arrives: nothing may go yet.
  assert.deepEqual(r.discard(43), []);
  assert.equal(r.statusOf(43), "discarded");
  assert.equal(r.discard(43).length, 0, "a retried discard is harmless");
  r.register(45, [shared("mat-42"), shared("seg-30"), shared("seg-45")]);
  assert.deepEqual(r.complete(45), [], "45 was triggered before the discard: 43 stays held");
  assert.deepEqual(r.discard(44), ["shared/mat-44"], "nothing in flight: released at once");
  // The job ends: the held ones go, except what the retained 45 uses.
  assert.deepEqual(r.releaseDiscarded(), []);
  assert.deepEqual(r.referencedPaths(), ["shared/mat-42", "shared/seg-30", "shared/seg-45"]);
  assert.deepEqual(r.checkpoints(), [45]);
});

Deno.test("SharedStateRegistry releases a held discarded checkpoint when a checkpoint triggered after the discard completes, also after the one in flight was aborted before its ack", () => {
  const r = new SharedStateRegistry();
  r.begin(11);
  r.register(11, [shared("base")]);
  r.complete(11);
  r.begin(12);
  r.begin(13); // appends to the chain on base; never acknowledged
  r.register(12, [shared("mat-12")]);
  r.complete(12);
  assert.deepEqual(r.discard(11), [], "13 is in flight");
  r.abort(13);
  // The subtask's chain is still on base (12's materialization was not
  // adopted), so 14 refers to it; 11 goes only once 14 is registered.
  r.begin(14);
  assert.deepEqual(r.discard(12), [], "held: 13 is aborted and held");
  r.register(14, [shared("base"), shared("seg-14")]);
  assert.deepEqual(r.complete(14), [], "11 and 13 released; 14 refers to base");
  assert.deepEqual(r.checkpoints(), [12, 14], "12 was discarded after 14 was triggered");
  r.begin(15);
  r.register(15, [shared("base"), shared("seg-14"), shared("seg-15")]);
  assert.deepEqual(r.complete(15), ["shared/mat-12"]);
  // Nothing in flight or held: a discard releases at once.
  assert.deepEqual(r.discard(14), []);
  assert.equal(r.statusOf(14), undefined, "released, not held");
  assert.deepEqual(r.discard(15), ["shared/base", "shared/seg-14", "shared/seg-15"]);
});

Deno.test("SharedStateRegistry holds an aborted checkpoint's blobs until a checkpoint triggered after the abort completes", () => {
  const r = new SharedStateRegistry();
  r.register(3, [shared("base")]);
  r.complete(3);
  r.begin(4);
  r.register(4, [shared("base"), shared("delta-4")]);
  r.begin(5);
  r.register(5, [shared("base"), shared("delta-5")]);
  r.abort(4);
  r.abort(5);
  r.begin(6);
  // Checkpoint 6's ack arrives after 4 was aborted, reusing the segment 4 wrote.
  r.register(6, [shared("base"), shared("delta-4"), shared("delta-6")]);
  assert.equal(r.referenceCount("shared/delta-4"), 2, "held by aborted 4, and 6");
  assert.deepEqual(r.complete(6), ["shared/delta-5"], "4 and 5 released; 6 refers to delta-4");
  assert.deepEqual(r.checkpoints(), [3, 6]);
  r.begin(7);
  r.begin(8); // triggered before 7 is aborted: its snapshot may predate 7's writes
  r.register(7, [shared("delta-7")]);
  r.abort(7);
  r.begin(9);
  r.abort(77); // never registered
  assert.deepEqual(r.complete(8), [], "8 was triggered before 7 was aborted: 7 is held");
  assert.equal(r.statusOf(7), "aborted");
  r.register(9, [shared("delta-7")]); // the next snapshot reuses what 7 wrote
  assert.deepEqual(r.complete(9), [], "9 releases 7, and refers to delta-7 itself");
  assert.equal(r.statusOf(7), undefined);
  assert.equal(r.statusOf(77), "aborted", "77 was aborted after 9 was triggered");
  r.begin(10);
  r.register(10, [shared("delta-10")]);
  r.abort(10);
  assert.deepEqual(r.releaseAborted(9), [], "bounded: 10 is not released");
  assert.equal(r.statusOf(10), "aborted");
  assert.deepEqual(r.releaseAborted(), ["shared/delta-10"]);
  assert.deepEqual(r.referencedPaths(), [
    "shared/base",
    "shared/delta-4",
    "shared/delta-6",
    "shared/delta-7",
  ]);
});

Deno.test("SharedStateRegistry completes a checkpoint whose trigger it did not see without releasing anything", () => {
  const r = new SharedStateRegistry();
  r.begin(1);
  r.register(1, [shared("a")]);
  r.abort(1);
  r.register(2, [shared("b")]);
  assert.deepEqual(r.complete(2), [], "2's trigger is unknown: 1 stays held");
  assert.equal(r.statusOf(1), "aborted");
  assert.throws(() => r.begin(2), /Cannot begin checkpoint 2: it is already completed/);
});

Deno.test("SharedStateRegistry refuses state changes out of order", () => {
  const r = new SharedStateRegistry();
  r.register(1, [shared("a")]);
  assert.throws(() => r.discard(1), /checkpoint 1: it is pending, not completed/);
  r.complete(1);
  r.complete(1);
  assert.throws(() => r.abort(1), /Cannot abort checkpoint 1: it is completed/);
  assert.throws(
    () => r.register(1, [shared("b")]),
    /checkpoint 1: it is already completed, so its references are fixed/,
  );
  r.register(2, [shared("c")]);
  r.abort(2);
  r.abort(2);
  assert.throws(() => r.complete(2), /Cannot complete checkpoint 2: it was aborted/);
  assert.throws(() => r.discard(2), /checkpoint 2: it is aborted, not completed/);
  assert.throws(() => r.register(2, [shared("d")]), /checkpoint 2: it is already aborted/);
  assert.equal(r.referenceCount("shared/b"), 0);
  r.complete(9); // no handles at all
  assert.equal(r.statusOf(9), "completed");
  assert.deepEqual(r.discard(9), []);
});

Deno.test("SharedStateRegistry rejects malformed handles and ids, registering nothing", () => {
  const r = new SharedStateRegistry();
  for (
    const bad of [
      { path: "chk-1/x", shared: true },
      { path: "shared/x", shared: false },
      { path: "shared/../x", shared: true },
      { path: "shared/", shared: true },
      { path: "shared/a/b", shared: true },
      { path: "chk-01/x", shared: false },
      { path: "/abs", shared: false },
      { path: "shared/x" },
    ]
  ) {
    assert.throws(
      () => r.register(2, [shared("ok"), bad as SharedStateReference]),
      (e: unknown) =>
        e instanceof RangeError && e.message.includes("checkpoint 2: handles[1]") &&
        e.message.includes(JSON.stringify(bad)),
    );
  }
  assert.equal(r.referenceCount("shared/ok"), 0);
  assert.equal(r.statusOf(2), undefined);
  for (const id of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => r.register(id, []), /'checkpointId' must be a positive integer/);
    assert.throws(() => r.discard(id), /cannot discard: 'checkpointId'/);
  }
});

Deno.test("SharedStateRegistry.rebuild restores retained checkpoints, and never returns what an unowned one refers to", () => {
  const r = SharedStateRegistry.rebuild([
    { checkpointId: 7, handles: [shared("old-a"), shared("old-b")], owned: false },
    { checkpointId: 9, handles: [shared("old-b"), shared("new-9"), own(9, "p")] },
  ]);
  assert.deepEqual(r.checkpoints(), [7, 9]);
  assert.equal(r.statusOf(9), "completed");
  assert.deepEqual(r.discard(7), [], "NO_CLAIM: old-a belongs to the user");
  assert.deepEqual(r.discard(9), ["shared/new-9"], "old-b is pinned");
  assert.deepEqual(
    r.unreferenced(["shared/old-a", "shared/old-b", "shared/orphan", "shared/orphan"]),
    ["shared/orphan"],
  );
  assert.throws(
    () =>
      SharedStateRegistry.rebuild([
        { checkpointId: 3, handles: [] },
        { checkpointId: 3, handles: [] },
      ]),
    /checkpoint 3 is listed twice \(again at index 1\)/,
  );
});

Deno.test("retainedCheckpointOf lists every handle of a checkpoint's metadata", () => {
  const base = metadata(5);
  const v = base.vertices[0]!;
  const keyed = { bytes: 1, kind: "keyed-incremental" as const, uid: "count" };
  const meta = {
    ...base,
    vertices: [{
      ...v,
      parallelism: 2,
      subtasks: [
        { subtask: 0, handles: [{ ...keyed, path: "shared/a", shared: true }], stateUids: [] },
        {
          subtask: 1,
          handles: [
            { ...keyed, path: "shared/b", shared: true },
            { ...keyed, path: "chk-5/p", shared: false },
          ],
          stateUids: [],
        },
      ],
    }],
  };
  const retained = retainedCheckpointOf(meta, false);
  assert.equal(retained.checkpointId, 5);
  assert.equal(retained.owned, false);
  assert.deepEqual(retained.handles.map((h) => h.path), ["shared/a", "shared/b", "chk-5/p"]);
  const r = SharedStateRegistry.rebuild([retainedCheckpointOf(meta)]);
  assert.deepEqual(r.discard(5), ["shared/a", "shared/b"]);
});

// ---------------------------------------------------------------------------
// Properties

/** One step of a random checkpoint history, interpreted against its state (see `run`). */
type Step =
  | { op: "register"; pick: number; fresh: number; reuse: number[] }
  | { op: "complete"; pick: number }
  | { op: "abort"; pick: number }
  | { op: "discard"; pick: number }
  | { op: "trigger" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ op: "trigger" as const }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("register" as const),
      pick: fc.nat(),
      fresh: fc.nat({ max: 3 }),
      reuse: fc.array(fc.nat(), { maxLength: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("complete" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("abort" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("discard" as const), pick: fc.nat() }) },
);

/** The model: which checkpoints are registered, with what status and paths. */
interface Model {
  readonly checkpoints: Map<
    number,
    { status: "pending" | "completed" | "aborted" | "discarded"; paths: Set<string> }
  >;
  /** How many times each path was returned for deletion. */
  readonly returned: Map<string, number>;
  /** Every shared path ever registered. */
  readonly everRegistered: Set<string>;
  nextId: number;
  nextPath: number;
  /** The order of triggers, aborts and held discards. */
  clock: number;
  readonly begunAt: Map<number, number>;
  /** When an aborted or held discarded checkpoint began to be held. */
  readonly heldAt: Map<number, number>;
}

function referencedBy(model: Model): Set<string> {
  const out = new Set<string>();
  for (const c of model.checkpoints.values()) for (const p of c.paths) out.add(p);
  return out;
}

/** Records what the registry returned, asserting no registered checkpoint still refers to it. */
function released(model: Model, paths: string[], what: string): void {
  const live = referencedBy(model);
  for (const p of paths) {
    assert.ok(!live.has(p), `${what} returned ${p} while a checkpoint still refers to it`);
    model.returned.set(p, (model.returned.get(p) ?? 0) + 1);
    assert.equal(model.returned.get(p), 1, `${p} returned twice`);
  }
}

/**
 * Runs a random history: checkpoints are triggered with increasing ids,
 * register fresh blobs (as if written) plus blobs some live checkpoint refers
 * to (as an incremental snapshot reuses them), complete, get aborted or
 * discarded in any order the protocol allows.
 */
function run(
  registry: SharedStateRegistry,
  steps: readonly Step[],
  restored: readonly RetainedCheckpoint[] = [],
): Model {
  const model: Model = {
    checkpoints: new Map(
      restored.map((c) => [c.checkpointId, {
        status: "completed" as const,
        paths: new Set(c.handles.map((h) => h.path)),
      }]),
    ),
    returned: new Map(),
    everRegistered: new Set(),
    nextId: 1,
    nextPath: 0,
    clock: 0,
    begunAt: new Map(),
    heldAt: new Map(),
  };
  const of = (status: "pending" | "completed", pick: number): number | undefined => {
    // (aborted and discarded checkpoints are never picked: they only wait for release)
    const ids = [...model.checkpoints].filter(([, c]) => c.status === status).map(([id]) => id);
    return ids.length === 0 ? undefined : ids[pick % ids.length];
  };
  for (const s of steps) {
    switch (s.op) {
      case "trigger": {
        const id = model.nextId++;
        model.checkpoints.set(id, { status: "pending", paths: new Set() });
        model.begunAt.set(id, ++model.clock);
        registry.begin(id);
        break;
      }
      case "register": {
        const id = of("pending", s.pick);
        if (id === undefined) break;
        const live = [...referencedBy(model)].sort();
        const handles: SharedStateReference[] = [own(id, "private")];
        for (let i = 0; i < s.fresh; i++) handles.push(shared(`b${model.nextPath++}`));
        for (const r of s.reuse) {
          if (live.length > 0) handles.push(shared(live[r % live.length]!.slice(7)));
        }
        registry.register(id, handles);
        for (const h of handles) {
          if (!h.shared) continue;
          model.checkpoints.get(id)!.paths.add(h.path);
          model.everRegistered.add(h.path);
        }
        break;
      }
      case "complete": {
        const id = of("pending", s.pick);
        if (id === undefined) break;
        const paths = registry.complete(id);
        model.checkpoints.get(id)!.status = "completed";
        const begunAt = model.begunAt.get(id)!;
        for (const [other, c] of [...model.checkpoints]) {
          const held = c.status === "aborted" || c.status === "discarded";
          if (held && model.heldAt.get(other)! < begunAt) {
            model.checkpoints.delete(other);
          }
        }
        released(model, paths, `complete(${id})`);
        break;
      }
      case "abort": {
        const id = of("pending", s.pick);
        if (id === undefined) break;
        registry.abort(id);
        model.checkpoints.get(id)!.status = "aborted";
        model.heldAt.set(id, ++model.clock);
        break;
      }
      case "discard": {
        const id = of("completed", s.pick);
        if (id === undefined) break;
        // Held while a checkpoint is pending or an aborted one is held.
        const inFlight = [...model.checkpoints.values()].some((c) =>
          c.status === "pending" || c.status === "aborted"
        );
        const paths = registry.discard(id);
        if (inFlight) {
          model.checkpoints.get(id)!.status = "discarded";
          model.heldAt.set(id, ++model.clock);
          assert.equal(registry.statusOf(id), "discarded");
        } else {
          model.checkpoints.delete(id);
        }
        released(model, paths, `discard(${id})`);
        break;
      }
    }
    for (const p of referencedBy(model)) {
      let n = 0;
      for (const c of model.checkpoints.values()) if (c.paths.has(p)) n++;
      assert.equal(registry.referenceCount(p), n, `reference count of ${p}`);
    }
  }
  return model;
}

/** Releases every checkpoint left, then checks every path was returned exactly once. */
function releaseAll(registry: SharedStateRegistry, model: Model): void {
  for (const [id, c] of [...model.checkpoints]) {
    if (c.status === "completed") {
      model.checkpoints.delete(id);
      released(model, registry.discard(id), `discard(${id})`);
    } else if (c.status === "pending") {
      registry.abort(id);
      c.status = "aborted";
    }
  }
  for (const [id, c] of [...model.checkpoints]) {
    if (c.status === "aborted") model.checkpoints.delete(id);
  }
  released(model, registry.releaseAborted(), "releaseAborted()");
  model.checkpoints.clear();
  released(model, registry.releaseDiscarded(), "releaseDiscarded()");
  assert.deepEqual([...model.returned.keys()].sort(), [...model.everRegistered].sort());
  assert.deepEqual(registry.referencedPaths(), []);
  assert.deepEqual(registry.checkpoints(), []);
}

Deno.test("fuzz: SharedStateRegistry never returns a path a registered checkpoint refers to, and returns each exactly once in the end", () => {
  fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      const registry = new SharedStateRegistry();
      const model = run(registry, steps);
      releaseAll(registry, model);
    }),
    { numRuns: fuzzRuns(500) },
  );
});

Deno.test("fuzz: a SharedStateRegistry rebuilt from the completed checkpoints decides as the original for them", () => {
  fc.assert(
    fc.property(
      fc.array(step, { maxLength: 60 }),
      fc.array(fc.nat(), { maxLength: 10 }),
      (steps, order) => {
        const original = new SharedStateRegistry();
        const model = run(original, steps);
        const retained: RetainedCheckpoint[] = [...model.checkpoints]
          .filter(([, c]) => c.status === "completed")
          .map(([checkpointId, c]) => ({
            checkpointId,
            handles: [...c.paths].map((path) => ({ path, shared: true })),
          }));
        // The coordinator restarted: pending checkpoints are gone.
        const rebuilt = SharedStateRegistry.rebuild(retained);
        const kept = new Set(retained.flatMap((c) => c.handles.map((h) => h.path)));
        // What only pending checkpoints (or nothing any more) referred to is
        // what a listing sweep finds.
        assert.deepEqual(
          rebuilt.unreferenced(model.everRegistered),
          [...model.everRegistered].filter((p) => !kept.has(p)).sort(),
        );
        // Discard the retained ones in a random order: each kept path once, never early.
        const remaining = retained.map((c) => c.checkpointId);
        const returned: string[] = [];
        for (let i = 0; remaining.length > 0; i++) {
          const [id] = remaining.splice((order[i] ?? 0) % remaining.length, 1);
          const live = new Set(
            retained.filter((c) => remaining.includes(c.checkpointId))
              .flatMap((c) => c.handles.map((h) => h.path)),
          );
          for (const p of rebuilt.discard(id!)) {
            assert.ok(!live.has(p), `${p} returned while retained`);
            returned.push(p);
          }
        }
        assert.deepEqual(returned.sort(), [...kept].sort());
      },
    ),
    { numRuns: fuzzRuns(300) },
  );
});

Deno.test("fuzz: SharedStateRegistry never returns a path an unowned (NO_CLAIM) checkpoint referred to", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.nat({ max: 20 }), { maxLength: 8 }),
      fc.array(step, { maxLength: 40 }),
      (restoredNames, steps) => {
        const pinned = restoredNames.map((n) => `shared/b${n}`);
        const restored: RetainedCheckpoint[] = [{
          checkpointId: 1_000_000,
          handles: pinned.map((path) => ({ path, shared: true })),
          owned: false,
        }];
        const registry = SharedStateRegistry.rebuild(restored);
        // Fresh blobs are named b0, b1, ...: later checkpoints refer to the
        // restored blobs both by reuse and by name. The restored checkpoint
        // may be discarded along the way (ids only name checkpoints).
        const model = run(registry, steps, restored);
        const paths: string[] = [];
        for (const [id, c] of [...model.checkpoints]) {
          if (c.status === "completed") paths.push(...registry.discard(id));
          if (c.status === "pending") registry.abort(id);
        }
        paths.push(...registry.releaseAborted(), ...registry.releaseDiscarded());
        for (const p of paths) assert.ok(!pinned.includes(p), `pinned ${p} returned`);
        assert.deepEqual(registry.referencedPaths(), []);
        assert.deepEqual(registry.unreferenced(pinned), []);
      },
    ),
    { numRuns: fuzzRuns(300) },
  );
});
