import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "./environment.ts";
import type { WindowOperatorSpec } from "./windowed_stream.ts";
import { InvalidJobGraphError } from "../graph/job_graph.ts";
import { EventTimeSessionWindows } from "../time/windows/session_windows.ts";
import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
import { CountTrigger, PurgingTrigger } from "../time/windows/triggers.ts";
import { CountEvictor } from "../time/windows/evictors.ts";
import type { Trigger } from "../time/windows/trigger.ts";
import type { TimeWindow } from "../time/windows/window.ts";
import type { AggregateFunction } from "./functions.ts";

type Event = { key: string; n: number };

function keyed() {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  return { env, stream: env.fromCollection<Event>([]).keyBy((e) => e.key) };
}

function windowSpec(env: StreamExecutionEnvironment): WindowOperatorSpec {
  const node = env.streamGraph.nodes.find((n) => n.spec.kind === "window")!;
  return (node.spec as { window: WindowOperatorSpec }).window;
}

Deno.test("WindowedStream.reduce adds one keyed window operator with the assigner's default trigger", () => {
  const { env, stream } = keyed();
  const out = stream.window(TumblingEventTimeWindows.of(1_000)).reduce((a, b) => ({
    ...a,
    n: a.n + b.n,
  }));
  assert.equal(out.node.name, "Window(TumblingEventTimeWindows(1000), EventTimeTrigger(), Reduce)");
  assert.ok(out.node.keySelector, "the window operator is keyed");
  const spec = windowSpec(env);
  assert.equal(spec.allowedLateness, 0);
  assert.equal(spec.evictor, undefined);
  assert.equal(spec.function.kind, "reduce");
  assert.equal(String(spec.trigger), "EventTimeTrigger()");
});

Deno.test("countWindow is a global window with a purging count trigger, or a count trigger and evictor", () => {
  const tumbling = keyed();
  tumbling.stream.countWindow(5).reduce((a) => a);
  const t = windowSpec(tumbling.env);
  assert.ok(t.trigger instanceof PurgingTrigger);
  assert.equal(String(t.trigger), "PurgingTrigger(CountTrigger(5))");
  assert.equal(t.evictor, undefined);

  const sliding = keyed();
  sliding.stream.countWindow(5, 2).reduce((a) => a);
  const s = windowSpec(sliding.env);
  assert.ok(s.trigger instanceof CountTrigger);
  assert.equal((s.trigger as CountTrigger).maxCount, 2);
  assert.equal((s.evictor as CountEvictor).maxCount, 5);
  assert.throws(() => keyed().stream.countWindow(0), /'maxCount'.*current value is 0/);
});

Deno.test("A merging assigner refuses a trigger that cannot merge", () => {
  const cannot: Trigger<Event, TimeWindow> = {
    onElement: () => "FIRE",
    onEventTime: () => "CONTINUE",
    onProcessingTime: () => "CONTINUE",
    clear: () => {},
  };
  const sessions = keyed().stream.window(EventTimeSessionWindows.withGap(10));
  assert.throws(
    () => sessions.trigger(cannot),
    /merging window assigner \(EventTimeSessionWindows\(10\)\) cannot be used with a trigger that does not support merging/,
  );
  sessions.trigger(CountTrigger.of(2)); // can merge
});

Deno.test("allowedLateness and sideOutputLateData reject bad values, naming them", () => {
  const windowed = keyed().stream.window(TumblingEventTimeWindows.of(10));
  assert.throws(() => windowed.allowedLateness(-1), /allowed lateness.*current value is -1/);
  assert.throws(() => windowed.allowedLateness(1.5), RangeError);
  assert.throws(() => windowed.sideOutputLateData(null as never), /needs an OutputTag/);
});

Deno.test("Window reduce and aggregate functions may not have lifecycle hooks, as Flink's rich-function rule", () => {
  const windowed = keyed().stream.window(TumblingEventTimeWindows.of(10));
  assert.throws(
    () => windowed.reduce({ reduce: (a: Event) => a, open: () => {} }),
    /ReduceFunction of a window cannot have lifecycle hooks \(it has open\)/,
  );
  const agg: AggregateFunction<Event, number, number> & { close(): void } = {
    createAccumulator: () => 0,
    add: (_v, a) => a + 1,
    getResult: (a) => a,
    merge: (a, b) => a + b,
    close: () => {},
  };
  assert.throws(
    () => windowed.aggregate(agg),
    /AggregateFunction of a window cannot have lifecycle hooks/,
  );
  assert.throws(
    () => windowed.aggregate({ createAccumulator: () => 0 } as never),
    /add, getResult, merge is missing/,
  );
  assert.throws(() => windowed.process({} as never), /needs an object with process\(\)/);
});

Deno.test("windowAll runs at parallelism 1 and refuses more", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(4);
  const out = env.fromCollection<Event>([]).windowAll(TumblingEventTimeWindows.of(10)).reduce((a) =>
    a
  );
  out.uid("all");
  const vertex = env.getJobGraph().vertices.find((v) => v.operators.some((o) => o.uid === "all"))!;
  assert.equal(vertex.parallelism, 1);
  out.setParallelism(2);
  assert.throws(() => env.getJobGraph(), InvalidJobGraphError);
});
