import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "./environment.ts";
import { MapStateDescriptor, ValueStateDescriptor } from "./state.ts";
import { buildJobGraph } from "../graph/job_graph.ts";

const OPTIONS = { parallelism: 2, maxParallelism: 128, chaining: true };

function streams() {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const a = env.fromCollection([1, 2, 3]).setParallelism(1);
  const b = env.fromCollection(["x", "y"]).setParallelism(3);
  return { env, a, b };
}

Deno.test("connect numbers the input edges 1 and 2, keeps each input's key selector, and heads its own vertex", () => {
  const { env, a, b } = streams();
  const k1 = (n: number) => String(n);
  const k2 = (s: string) => s;
  a.connect(b).keyBy(k1, k2).process({
    processElement1() {},
    processElement2() {},
  }).uid("co").map((x) => x);
  const graph = buildJobGraph(env.streamGraph, "t", OPTIONS);
  const co = graph.vertices.find((v) => v.operators[0]!.uid === "co")!;
  assert.equal(co.operators.length, 2, "the map after it chains to it");
  assert.equal(co.operators[0]!.spec.kind, "keyedCoProcess");
  assert.equal(co.operators[0]!.keySelector, k1);
  assert.equal(co.operators[0]!.keySelector2, k2);
  const edges = co.inputs.map((i) => graph.edges[i]!);
  assert.deepEqual(edges.map((e) => [e.typeNumber, e.partitioner]), [[1, "hash"], [2, "hash"]]);
  assert.deepEqual(
    edges.map((e) => graph.vertices[e.source]!.parallelism),
    [1, 3],
    "inputs of different parallelism",
  );
  assert.ok(
    graph.warnings.every((w) => !w.includes("KeyedCoProcess")),
    `the keyed co-process operator has its uid: ${graph.warnings.join("; ")}`,
  );
});

Deno.test("a forward edge into a two-input operator does not chain it", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const a = env.fromCollection([1]);
  const b = env.fromCollection([2]);
  a.connect(b).map({ map1: (n) => n, map2: (n) => n });
  const graph = buildJobGraph(env.streamGraph, "t", { ...OPTIONS, parallelism: 1 });
  assert.equal(graph.vertices.length, 3);
  assert.deepEqual(graph.vertices[2]!.inputs.map((i) => graph.edges[i]!.partitioner), [
    "forward",
    "forward",
  ]);
});

Deno.test("connect refuses inputs keyed on one side only, onTimer without keys, and functions without their methods", () => {
  const { a, b } = streams();
  assert.throws(
    () => a.keyBy((n) => n).connect(b).map({ map1: (n) => n, map2: () => 0 }),
    /'Co-Map': input 1 is keyed and input 2 is not; key both \(connect\(\.\.\.\)\.keyBy\(k1, k2\)\) or neither/,
  );
  assert.throws(
    () =>
      a.connect(b).process({
        processElement1() {},
        processElement2() {},
        onTimer() {},
      }),
    /A CoProcessFunction with onTimer needs keyed inputs/,
  );
  assert.throws(
    () => a.connect(b).map({ map1: (n: number) => n } as never),
    /A CoMapFunction needs a method 'map2': current value is an object with \[map1\]/,
  );
});

Deno.test("broadcast(...descriptors) makes a BroadcastStream; connect picks the keyed or the non-keyed broadcast operator", () => {
  const { env, a, b } = streams();
  const rules = new MapStateDescriptor<string, number>("rules");
  const fn = { processElement() {}, processBroadcastElement() {} };
  a.connect(b.broadcast(rules)).process(fn).uid("plain");
  a.keyBy((n) => n).connect(b.broadcast(rules)).process(fn).uid("keyed");
  const graph = buildJobGraph(env.streamGraph, "t", OPTIONS);
  const kinds = Object.fromEntries(
    graph.vertices.map((v) => [v.operators[0]!.uid, v.operators[0]!.spec.kind]),
  );
  assert.equal(kinds.plain, "broadcastProcess");
  assert.equal(kinds.keyed, "keyedBroadcastProcess");
  const keyed = graph.vertices.find((v) => v.operators[0]!.uid === "keyed")!;
  assert.deepEqual(
    keyed.inputs.map((i) => [graph.edges[i]!.typeNumber, graph.edges[i]!.partitioner]),
    [[1, "hash"], [2, "broadcast"]],
  );
  assert.throws(
    () => b.broadcast(new ValueStateDescriptor("v") as never),
    /descriptor 0 must be a MapStateDescriptor: current kind is "value"/,
  );
  assert.throws(() => b.broadcast(rules, rules), /two descriptors are named 'rules'/);
  assert.throws(
    () => a.connect(b.broadcast(rules)).process({ ...fn, onTimer() {} } as never),
    /onTimer needs a keyed data stream/,
  );
  // Without descriptors broadcast() stays the partitioner.
  assert.equal(b.broadcast().inputs[0]!.partitioner, "broadcast");
});
