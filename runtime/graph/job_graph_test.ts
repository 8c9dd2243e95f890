import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import { OutputTag } from "../api/output_tag.ts";
import { InvalidJobGraphError } from "./job_graph.ts";

const noop = { kind: "simple" as const, invoke: () => {} };

Deno.test("buildJobGraph chains forward edges of equal parallelism into one vertex", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.fromCollection([1, 2, 3]).uid("src").map((n) => n + 1).filter((n) => n > 1).sinkTo(noop);
  const graph = env.getJobGraph("chain");
  assert.equal(graph.vertices.length, 1);
  assert.deepEqual(graph.vertices[0]!.operators.map((o) => o.spec.kind), [
    "source",
    "map",
    "filter",
    "sink",
  ]);
  assert.equal(graph.edges.length, 0);
  assert.equal(graph.vertices[0]!.name, "Source: Collection -> Map -> Filter -> Sink");
});

Deno.test("buildJobGraph breaks chains at keyBy, rebalance and parallelism changes", async (t) => {
  await t.step("keyBy makes a hash edge", () => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection(["a"]).uid("src").keyBy((s) => s).map((s) => s).sinkTo(noop);
    const graph = env.getJobGraph();
    assert.equal(graph.vertices.length, 2);
    assert.equal(graph.edges[0]!.partitioner, "hash");
    assert.ok(graph.edges[0]!.keySelector);
  });
  await t.step("a parallelism change defaults to rebalance", () => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection([1]).uid("src").map((n) => n).setParallelism(2).sinkTo(noop);
    const graph = env.getJobGraph();
    assert.equal(graph.edges[0]!.partitioner, "rebalance");
    assert.equal(graph.vertices[1]!.parallelism, 2);
    assert.equal(graph.vertices.length, 3, "the sink has the default parallelism 1, as in Flink");
    assert.equal(graph.edges[1]!.partitioner, "rebalance");
  });
  await t.step("disableOperatorChaining gives one vertex per operator", () => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.disableOperatorChaining();
    env.fromCollection([1]).uid("src").map((n) => n).sinkTo(noop);
    assert.equal(env.getJobGraph().vertices.length, 3);
  });
});

Deno.test("buildJobGraph routes side outputs by tag, chained or not", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const low = new OutputTag<number>("low");
  const split = env.fromCollection([1, 50]).uid("src").process<number>({
    processElement(n, ctx, out) {
      if (n < 10) ctx.output(low, n);
      else out.collect(n);
    },
  });
  split.sinkTo(noop);
  split.getSideOutput(low).sinkTo(noop);
  const graph = env.getJobGraph();
  assert.equal(graph.vertices.length, 1);
  const process = graph.vertices[0]!.operators[1]!;
  assert.deepEqual(process.outputs.map((o) => o.sideOutput).sort(), ["low", undefined]);
});

Deno.test("buildJobGraph rejects a forward edge between unequal parallelisms", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.fromCollection([1]).uid("src").forward().map((n) => n).setParallelism(2).sinkTo(noop);
  assert.throws(() => env.getJobGraph(), InvalidJobGraphError);
});

Deno.test("buildJobGraph rejects duplicate uids, naming both operators", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.fromCollection([1]).uid("same").map((n) => n).uid("same").sinkTo(noop);
  assert.throws(
    () => env.getJobGraph(),
    /Duplicate uid 'same' on operators 'Source: Collection' and 'Map'/,
  );
});

Deno.test("buildJobGraph derives the same uid for the same graph and warns for stateful operators", () => {
  const build = () => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection(["a"]).keyBy((s) => s).reduce((a, b) => a + b).sinkTo(noop);
    return env.getJobGraph();
  };
  const a = build();
  const b = build();
  assert.deepEqual(
    a.vertices.flatMap((v) => v.operators.map((o) => o.uid)),
    b.vertices.flatMap((v) => v.operators.map((o) => o.uid)),
  );
  assert.equal(a.warnings.length, 2, "the source and the reduce are stateful and have no uid");
  assert.match(a.warnings[1]!, /Operator 'Reduce' is stateful but has no uid/);
});

Deno.test("buildJobGraph rejects a job without a source and a parallelism above max parallelism", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  assert.throws(() => env.getJobGraph("empty"), /has no source/);
  const env2 = StreamExecutionEnvironment.getExecutionEnvironment().setMaxParallelism(4);
  env2.fromCollection([1]).uid("src").map((n) => n).setParallelism(5).sinkTo(noop);
  assert.throws(
    () => env2.getJobGraph(),
    /parallelism must be an integer in 1..maxParallelism \(4\): current value is 5/,
  );
});

Deno.test("an operator fed by streams keyed by different key selectors is refused", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const a = env.fromCollection([{ k: "x" }]).uid("a").keyBy((r) => r.k);
  const b = env.fromCollection([{ k: "y" }]).uid("b").keyBy((r) => r.k);
  assert.throws(() => a.union(b).map((r) => r), /keyed by different key selectors/);
  const byK = (r: { k: string }) => r.k;
  const c = env.fromCollection([{ k: "x" }]).uid("c").keyBy(byK);
  const d = env.fromCollection([{ k: "y" }]).uid("d").keyBy(byK);
  c.union(d).map((r) => r).uid("keyed-map");
  const graph = env.getJobGraph();
  const map = graph.vertices.flatMap((v) => v.operators).find((o) => o.uid === "keyed-map")!;
  assert.equal(map.keySelector, byK, "one shared key selector keys the operator");
});
