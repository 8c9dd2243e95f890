import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { FailoverRegions, type RegionEdge, type RegionVertex } from "./failover_regions.ts";
import type { Partitioner } from "../graph/stream_graph.ts";

const vertex = (index: number, id: string, parallelism: number): RegionVertex => ({
  index,
  id,
  parallelism,
});
const edge = (source: number, target: number, partitioner: Partitioner): RegionEdge => ({
  source,
  target,
  partitioner,
});
const ids = (r: FailoverRegions) =>
  r.regions.map((region) => region.subtasks.map((s) => `${s.vertexId}#${s.subtask}`));

Deno.test("two forward pipelines at parallelism 2 split into one region per subtask index", () => {
  const r = FailoverRegions.of({
    vertices: [vertex(0, "src", 2), vertex(1, "map", 2), vertex(2, "sink", 2)],
    edges: [edge(0, 1, "forward"), edge(1, 2, "forward")],
  });
  assert.deepEqual(ids(r), [["src#0", "map#0", "sink#0"], ["src#1", "map#1", "sink#1"]]);
  assert.equal(r.regionOf("sink", 1).id, 1);
  assert.equal(r.isWholeJob(r.regionOf("src", 0)), false);
  assert.equal(r.describe(r.regionOf("map", 1)), "region 1 (src#1, map#1, sink#1)");
});

Deno.test("every partitioner but forward joins all subtasks of both vertices", async (t) => {
  for (const p of ["hash", "rebalance", "broadcast", "rescale"] as const) {
    await t.step(p, () => {
      const r = FailoverRegions.of({
        vertices: [vertex(0, "src", 2), vertex(1, "map", 3), vertex(2, "sink", 3)],
        edges: [edge(0, 1, p), edge(1, 2, "forward")],
      });
      assert.equal(r.regions.length, 1);
      assert.ok(r.isWholeJob(r.regions[0]!));
      assert.equal(r.regions[0]!.subtasks.length, 8);
    });
  }
});

Deno.test("a keyed pipeline beside a forward one: the keyed one is one region, the other splits", () => {
  const r = FailoverRegions.of({
    vertices: [
      vertex(0, "a", 2),
      vertex(1, "b", 2),
      vertex(2, "keyed", 2),
      vertex(3, "c", 2),
    ],
    // a -> keyed (hash); b -> c (forward), independent of a.
    edges: [edge(0, 2, "hash"), edge(1, 3, "forward")],
  });
  assert.deepEqual(ids(r), [
    ["a#0", "a#1", "keyed#0", "keyed#1"],
    ["b#0", "c#0"],
    ["b#1", "c#1"],
  ]);
});

Deno.test("a forward edge between unequal parallelisms is refused, naming the vertices", () => {
  assert.throws(
    () =>
      FailoverRegions.of({
        vertices: [vertex(0, "src", 2), vertex(1, "sink", 3)],
        edges: [edge(0, 1, "forward")],
      }),
    /forward edge 0 joins 'src' \(parallelism 2\) and 'sink' \(parallelism 3\)/,
  );
  assert.throws(
    () => FailoverRegions.of({ vertices: [vertex(0, "src", 0)], edges: [] }),
    /vertex 'src' must have an integer parallelism >= 1: current value is 0/,
  );
  assert.throws(
    () => FailoverRegions.of({ vertices: [vertex(0, "src", 1)], edges: [edge(0, 4, "hash")] }),
    /edge 0 \(0 -> 4\) names vertex index 4/,
  );
  const r = FailoverRegions.of({ vertices: [vertex(0, "src", 1)], edges: [] });
  assert.throws(() => r.regionOf("src", 1), /no subtask src#1/);
});

/** A random DAG: vertices in order, each edge from a lower to a higher index. */
const graphs = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record({
    parallelism: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: n, maxLength: n }),
    edges: fc.array(
      fc.record({
        a: fc.integer({ min: 0, max: n - 1 }),
        b: fc.integer({ min: 0, max: n - 1 }),
        p: fc.constantFrom<Partitioner>("forward", "hash", "rebalance", "broadcast", "rescale"),
      }),
      { maxLength: 8 },
    ),
  })
).map(({ parallelism, edges }) => {
  const vertices = parallelism.map((p, i) => vertex(i, `v${i}`, p));
  const out: RegionEdge[] = [];
  for (const { a, b, p } of edges) {
    if (a === b) continue;
    const [s, t] = a < b ? [a, b] : [b, a];
    // buildJobGraph turns a forward edge between unequal parallelisms into rebalance.
    const partitioner = p === "forward" && parallelism[s] !== parallelism[t] ? "rebalance" : p;
    out.push(edge(s, t, partitioner));
  }
  return { vertices, edges: out };
});

Deno.test("regions partition the subtasks, no channel crosses two regions, and each is connected", () => {
  fc.assert(
    fc.property(graphs, (g) => {
      const r = FailoverRegions.of(g);
      const all = g.vertices.flatMap((v) =>
        Array.from({ length: v.parallelism }, (_, s) => `${v.id}#${s}`)
      );
      // A partition: every subtask exactly once, ids 0..n-1 in order of first subtask.
      assert.deepEqual(r.regions.flatMap((x) => [...x.keys]).sort(), [...all].sort());
      r.regions.forEach((x, i) => assert.equal(x.id, i));
      const firsts = r.regions.map((x) => all.indexOf([...x.keys][0]!));
      assert.deepEqual(firsts, [...firsts].sort((a, b) => a - b));
      // The channels: forward i -> i, else all-to-all.
      const channels: [string, string][] = [];
      for (const e of g.edges) {
        const up = g.vertices[e.source]!;
        const down = g.vertices[e.target]!;
        for (let i = 0; i < up.parallelism; i++) {
          for (let j = 0; j < down.parallelism; j++) {
            if (e.partitioner === "forward" && i !== j) continue;
            channels.push([`${up.id}#${i}`, `${down.id}#${j}`]);
          }
        }
      }
      const region = (key: string) => {
        const [v, s] = key.split("#");
        return r.regionOf(v!, Number(s)).id;
      };
      for (const [a, b] of channels) assert.equal(region(a), region(b), `${a} -> ${b}`);
      // Minimal: each region is connected through channels (nothing joined without a reason).
      for (const x of r.regions) {
        const keys = [...x.keys];
        const seen = new Set([keys[0]!]);
        for (let grew = true; grew;) {
          grew = false;
          for (const [a, b] of channels) {
            if (seen.has(a) !== seen.has(b)) {
              seen.add(a);
              seen.add(b);
              grew = true;
            }
          }
        }
        assert.deepEqual([...seen].sort(), [...keys].sort());
      }
    }),
    { numRuns: 300 },
  );
});

Deno.test("a job summary without edges is one region; with them, its vertices' positions are their indexes", () => {
  const vertices = [{ id: "src", parallelism: 2 }, { id: "sink", parallelism: 2 }];
  const old = FailoverRegions.ofJob({ vertices });
  assert.equal(old.regions.length, 1);
  assert.ok(old.isWholeJob(old.regionOf("sink", 1)));
  const summary = FailoverRegions.ofJob({
    vertices,
    edges: [{ source: 0, target: 1, partitioner: "forward" }],
  });
  assert.deepEqual(ids(summary), [["src#0", "sink#0"], ["src#1", "sink#1"]]);
});
