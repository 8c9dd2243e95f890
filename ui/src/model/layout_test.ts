import assert from "node:assert/strict";
import { BOX_WIDTH, boxSize, edgePath, layoutGraph } from "./layout.ts";
import type { JobGraphModel } from "./graph.ts";

const chain = (id: string, ops: string[]) => ({ id, name: id, operators: ops, parallelism: 1 });

Deno.test("layoutGraph places a pipeline left to right", () => {
  const g: JobGraphModel = {
    vertices: [chain("v0", ["src"]), chain("v1", ["map", "filter"]), chain("v2", ["sink"])],
    edges: [
      { from: "v0", to: "v1", shipStrategy: "FORWARD" },
      { from: "v1", to: "v2", shipStrategy: "HASH" },
    ],
  };
  const l = layoutGraph(g);
  const [a, b, c] = l.vertices;
  assert.ok(a && b && c);
  assert.ok(a.x + a.width < b.x, "v1 starts right of v0's box");
  assert.ok(b.x + b.width < c.x, "v2 starts right of v1's box");
  assert.equal(b.height, boxSize(2).height);
  assert.equal(a.width, BOX_WIDTH);
  assert.ok(l.width >= c.x + c.width && l.height >= b.height);
  assert.equal(l.edges.length, 2);
  const e = l.edges[1];
  assert.ok(e && e.points.length >= 2);
  assert.equal(e.label, "HASH");
  // The edge runs from v1's right side to v2's left side.
  assert.ok((e.points[0]?.x ?? 0) >= b.x + b.width - 1);
  assert.ok((e.points[e.points.length - 1]?.x ?? 0) <= c.x + 1);
});

Deno.test("layoutGraph stacks two sources of one join in the same rank", () => {
  const l = layoutGraph({
    vertices: [chain("a", ["a"]), chain("b", ["b"]), chain("j", ["join"])],
    edges: [{ from: "a", to: "j", shipStrategy: "HASH" }, {
      from: "b",
      to: "j",
      shipStrategy: "HASH",
    }],
  });
  const [a, b, j] = l.vertices;
  assert.ok(a && b && j);
  assert.equal(a.x, b.x);
  assert.notEqual(a.y, b.y);
  assert.ok(j.x > a.x + a.width);
});

Deno.test("layoutGraph handles a graph without edges and an empty graph", () => {
  const l = layoutGraph({ vertices: [chain("a", ["a"])], edges: [] });
  assert.equal(l.vertices.length, 1);
  assert.equal(layoutGraph({ vertices: [], edges: [] }).vertices.length, 0);
});

Deno.test("boxSize grows with the chain up to five lines", () => {
  assert.ok(boxSize(2).height > boxSize(1).height);
  assert.equal(boxSize(0).height, boxSize(1).height);
  assert.equal(boxSize(9).height, boxSize(5).height);
});

Deno.test("edgePath draws a polyline", () => {
  assert.equal(edgePath([{ x: 0, y: 1.25 }, { x: 10.04, y: 2 }]), "M0 1.3 L10 2");
  assert.equal(edgePath([]), "");
});
