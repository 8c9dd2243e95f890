import assert from "node:assert/strict";
import type { JobDetails, JobVertex, PlanNode } from "./api_types.ts";
import { jobGraph, sourceVertexIds } from "./graph.ts";

function job(vertices: JobVertex[], nodes?: PlanNode[]): JobDetails {
  const base = {
    jid: "j1",
    name: "job",
    state: "RUNNING",
    "start-time": 0,
    "end-time": -1,
    duration: 0,
    now: 0,
    vertices,
  };
  return nodes === undefined ? base : { ...base, plan: { jid: "j1", name: "job", nodes } };
}

const v = (id: string, name: string, parallelism = 1): JobVertex => ({
  id,
  name,
  parallelism,
  status: "RUNNING",
});

Deno.test("jobGraph takes edges and ship strategies from the plan", () => {
  const g = jobGraph(job([v("v0", "Source: s"), v("v1", "KeyedSum", 4)], [
    { id: "v0", parallelism: 1, description: "Source: s -> Map" },
    {
      id: "v1",
      parallelism: 4,
      description: "KeyedSum",
      inputs: [{ num: 0, id: "v0", ship_strategy: "HASH" }],
    },
  ]));
  assert.deepEqual(g.edges, [{ from: "v0", to: "v1", shipStrategy: "HASH" }]);
  assert.deepEqual(g.vertices[0]?.operators, ["Source: s", "Map"]);
  assert.equal(g.vertices[1]?.parallelism, 4);
  assert.deepEqual(sourceVertexIds(g), ["v0"]);
});

Deno.test("jobGraph prefers the vertex's operators for the chain", () => {
  const g = jobGraph(
    job([{ ...v("v0", "a"), operators: [{ uid: "a", name: "A" }, { uid: "b", name: "B" }] }]),
  );
  assert.deepEqual(g.vertices[0]?.operators, ["A", "B"]);
});

Deno.test("jobGraph without a plan draws the vertices without edges", () => {
  const g = jobGraph(job([v("v0", "src"), v("v1", "sink")]));
  assert.deepEqual(g.vertices.map((x) => x.operators), [["src"], ["sink"]]);
  assert.deepEqual(g.edges, []);
  assert.deepEqual(sourceVertexIds(g), ["v0"]);
});

Deno.test("jobGraph keeps plan nodes missing from vertices and drops inputs to unknown ids", () => {
  const g = jobGraph(job([v("v0", "src")], [
    { id: "v0", parallelism: 1, description: "src" },
    {
      id: "v9",
      parallelism: 2,
      description: "late -> sink",
      inputs: [
        { num: 0, id: "v0", ship_strategy: "REBALANCE" },
        { num: 1, id: "nope", ship_strategy: "FORWARD" },
      ],
    },
  ]));
  assert.deepEqual(g.vertices.map((x) => x.id), ["v0", "v9"]);
  assert.deepEqual(g.vertices[1]?.operators, ["late", "sink"]);
  assert.deepEqual(g.edges, [{ from: "v0", to: "v9", shipStrategy: "REBALANCE" }]);
});

Deno.test("sourceVertexIds finds every vertex without inputs", () => {
  const g = {
    vertices: [v("a", "a"), v("b", "b"), v("c", "c")].map((x) => ({ ...x, operators: [x.name] })),
    edges: [{ from: "a", to: "c", shipStrategy: "HASH" }, {
      from: "b",
      to: "c",
      shipStrategy: "HASH",
    }],
  };
  assert.deepEqual(sourceVertexIds(g), ["a", "b"]);
});
