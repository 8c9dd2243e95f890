/**
 * Internal: the model-based property of `backend_conformance.ts` (fast-check).
 * A random sequence of operations on value, list, map, reducing and
 * aggregating state (keys, namespaces, clears, merges, reads) runs against a
 * backend and against a model `Map` of `"<state> <key> <namespace>"` to
 * value; every read must agree. Snapshots taken at random points are
 * written while the sequence goes on (the sequence yields to the event loop
 * at random points) and must restore to the model as it was when each
 * snapshot was taken.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { VOID_NAMESPACE } from "./internal_state.ts";
import type { Key } from "./key_group.ts";
import type { StateHandle } from "../checkpoint/snapshot_contract.ts";
import { yieldToEventLoop } from "../actor/async.ts";
import { allStates, dump, type RegisterTest, writeSnapshot } from "./_conformance_kit.ts";

const KEYS: readonly Key[] = ["a", "b", 7, ["t", 1], ["t", 2], true];
const NAMESPACES = [VOID_NAMESPACE, "w1", "w2"];

/** One operation of a sequence. */
type Op =
  | { op: "key"; key: number }
  | { op: "ns"; ns: number }
  | { op: "value"; x: number | undefined }
  | { op: "list-add"; x: number }
  | { op: "list-update"; xs: number[] }
  | { op: "map-put"; uk: number; x: number }
  | { op: "map-remove"; uk: number }
  | { op: "reduce"; x: number }
  | { op: "aggregate"; x: number }
  | { op: "clear"; state: StateName }
  | { op: "merge"; state: "list" | "reducing" | "aggregating"; target: number; sources: number[] }
  | { op: "read" }
  | { op: "snapshot" }
  | { op: "yield" };

type StateName = "value" | "list" | "map" | "reducing" | "aggregating";
const STATE_NAMES: readonly StateName[] = ["value", "list", "map", "reducing", "aggregating"];

const small = fc.integer({ min: -50, max: 50 });
const ns = fc.integer({ min: 0, max: NAMESPACES.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant("key" as const), key: fc.nat(KEYS.length - 1) }),
    weight: 4,
  },
  { arbitrary: fc.record({ op: fc.constant("ns" as const), ns }), weight: 2 },
  {
    arbitrary: fc.record({
      op: fc.constant("value" as const),
      x: fc.option(small, { nil: undefined }),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ op: fc.constant("list-add" as const), x: small }), weight: 3 },
  {
    arbitrary: fc.record({
      op: fc.constant("list-update" as const),
      xs: fc.array(small, { maxLength: 3 }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({ op: fc.constant("map-put" as const), uk: fc.nat(3), x: small }),
    weight: 3,
  },
  { arbitrary: fc.record({ op: fc.constant("map-remove" as const), uk: fc.nat(3) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("reduce" as const), x: small }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("aggregate" as const), x: small }), weight: 3 },
  {
    arbitrary: fc.record({
      op: fc.constant("clear" as const),
      state: fc.constantFrom(...STATE_NAMES),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("merge" as const),
      state: fc.constantFrom("list" as const, "reducing" as const, "aggregating" as const),
      target: ns,
      sources: fc.array(ns, { maxLength: 2 }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ op: fc.constant("read" as const) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("snapshot" as const) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("yield" as const) }), weight: 1 },
);

/** The model: `"<state> <key> <namespace>"` → value (lists and maps as in {@linkcode dump}). */
type Model = Map<string, unknown>;

function at(state: StateName, key: Key, namespace: string): string {
  return `${state} ${JSON.stringify(key)} ${JSON.stringify(namespace)}`;
}

function sortedEntries(m: Map<string, number>): [string, number][] {
  return [...m].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
}

/** The model as {@linkcode dump} shows a backend. */
function shown(model: Model): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of model) {
    out[k] = v instanceof Map ? sortedEntries(v) : Array.isArray(v) ? [...v] : v;
  }
  return out;
}

function copyModel(model: Model): Model {
  return new Map(
    [...model].map(([k, v]) => [k, v instanceof Map ? new Map(v) : Array.isArray(v) ? [...v] : v]),
  );
}

/** Registers the property. */
export function registerPropertyTests(test: RegisterTest, runs: number): void {
  test("property: random operations read as a model Map; snapshots restore to the model at their point", async (c) => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 80 }), async (ops) => {
        const b = await c.make();
        const s = allStates(b);
        const model: Model = new Map();
        let key: Key = KEYS[0]!;
        let namespace = VOID_NAMESPACE;
        b.setCurrentKey(key);
        const pending: { model: Model; writing: Promise<StateHandle[]> }[] = [];
        const get = <T>(state: StateName, n = namespace) =>
          model.get(at(state, key, n)) as T | undefined;
        const put = (state: StateName, v: unknown, n = namespace) => {
          if (v === undefined) model.delete(at(state, key, n));
          else model.set(at(state, key, n), v);
        };
        for (const op of ops) {
          switch (op.op) {
            case "key":
              key = KEYS[op.key]!;
              b.setCurrentKey(key);
              break;
            case "ns":
              namespace = NAMESPACES[op.ns]!;
              for (const state of Object.values(s)) state.setCurrentNamespace(namespace);
              break;
            case "value":
              s.value.update(op.x);
              put("value", op.x);
              break;
            case "list-add":
              s.list.add(op.x);
              put("list", [...(get<number[]>("list") ?? []), op.x]);
              break;
            case "list-update":
              s.list.update(op.xs);
              put("list", op.xs.length === 0 ? undefined : [...op.xs]);
              break;
            case "map-put": {
              s.map.put(`u${op.uk}`, op.x);
              const m = new Map(get<Map<string, number>>("map") ?? []);
              put("map", m.set(`u${op.uk}`, op.x));
              break;
            }
            case "map-remove": {
              s.map.remove(`u${op.uk}`);
              const m = new Map(get<Map<string, number>>("map") ?? []);
              m.delete(`u${op.uk}`);
              put("map", m.size === 0 ? undefined : m);
              break;
            }
            case "reduce":
              s.reducing.add(op.x);
              put("reducing", (get<number>("reducing") ?? 0) + op.x);
              break;
            case "aggregate":
              s.aggregating.add(op.x);
              put("aggregating", (get<number>("aggregating") ?? 0) + op.x);
              break;
            case "clear":
              s[op.state].clear();
              put(op.state, undefined);
              break;
            case "merge": {
              const target = NAMESPACES[op.target]!;
              const sources = op.sources.map((i) => NAMESPACES[i]!);
              s[op.state].mergeNamespaces(target, sources);
              // Flink's mergeNamespaces: take each source's entry in order, fold, fold into the target.
              let merged: unknown;
              for (const source of sources) {
                const v = get<unknown>(op.state, source);
                if (v === undefined) continue;
                put(op.state, undefined, source);
                merged = merged === undefined
                  ? v
                  : op.state === "list"
                  ? [...(merged as number[]), ...(v as number[])]
                  : (merged as number) + (v as number);
              }
              if (merged === undefined) break;
              const existing = get<unknown>(op.state, target);
              put(
                op.state,
                existing === undefined
                  ? merged
                  : op.state === "list"
                  ? [...(existing as number[]), ...(merged as number[])]
                  : (existing as number) + (merged as number),
                target,
              );
              break;
            }
            case "read": {
              assert.equal(s.value.value(), get("value"));
              assert.deepEqual([...s.list.get()], get<number[]>("list") ?? []);
              const m = get<Map<string, number>>("map");
              assert.deepEqual(
                s.map.entries().sort(([x], [y]) => x < y ? -1 : 1),
                m === undefined ? [] : sortedEntries(m),
              );
              assert.equal(s.reducing.get(), get("reducing"));
              assert.equal(s.aggregating.get(), get("aggregating"));
              break;
            }
            case "snapshot": {
              const id = pending.length + 1;
              const result = b.snapshot(id, "checkpoint", "prop");
              pending.push({
                model: copyModel(model),
                writing: writeSnapshot(c.store, result, id, "checkpoint"),
              });
              break;
            }
            case "yield":
              await yieldToEventLoop();
              break;
          }
        }
        assert.deepEqual(dump(b, KEYS, NAMESPACES), shown(model));
        for (const name of STATE_NAMES) {
          const expected = new Set(
            [...model.keys()]
              .filter((k) => k.startsWith(`${name} `) && k.endsWith(` ${JSON.stringify("")}`))
              .map((k) => k.slice(name.length + 1, k.length - 3)),
          );
          if (b.stateNames().includes(name)) {
            assert.deepEqual(
              new Set(Array.from(b.keys(name), (k) => JSON.stringify(k))),
              expected,
              `keys('${name}')`,
            );
          }
        }
        for (const { model: then, writing } of pending) {
          const r = await c.restored(await writing);
          assert.deepEqual(dump(r, KEYS, NAMESPACES), shown(then));
        }
        for (const state of Object.values(s)) state.setCurrentNamespace(VOID_NAMESPACE);
      }),
      { numRuns: runs },
    );
  });
}
