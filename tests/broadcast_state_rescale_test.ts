/**
 * Broadcast state survives a resume at another parallelism: a keyed
 * broadcast job at parallelism 2 receives three rules on its control
 * stream, takes a checkpoint holding them, and fails for good; the job is
 * resumed from that retained checkpoint (`env.resumeFrom({ jobId })`) at
 * parallelism 3. Each of the three new subtasks must then hold all three
 * rules (Flink's `BroadcastState` redistribution: every subtask gets a
 * copy), which a probe broadcast after the resume makes each subtask print,
 * and every data record, on whichever subtask its key lands, must see them.
 *
 * The data source holds its records behind a long `pause` in the first run
 * (so nothing races the rules there) and the same position carries a zero
 * pause in the resumed run.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type Collector,
  JobFailedError,
  type KeyedBroadcastContext,
  type KeyedBroadcastProcessFunction,
  type KeyedBroadcastReadOnlyContext,
  MapStateDescriptor,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

const RULES = new MapStateDescriptor<string, number>("rules");

/** Data records read the rules; a rule `name=value` is stored; `probe` makes each subtask print its rules. */
class RuleReader implements KeyedBroadcastProcessFunction<string, string, string, string> {
  private subtask = -1;
  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
  }
  processElement(key: string, ctx: KeyedBroadcastReadOnlyContext<string>, out: Collector<string>) {
    const rules = ctx.getBroadcastState(RULES);
    out.collect(`${key}: a=${rules.get("a")} b=${rules.get("b")} c=${rules.get("c")}`);
  }
  processBroadcastElement(
    command: string,
    ctx: KeyedBroadcastContext<string>,
    out: Collector<string>,
  ) {
    const rules = ctx.getBroadcastState(RULES);
    if (command === "probe") {
      const entries = rules.entries().map(([k, v]) => `${k}=${v}`).sort().join(",");
      out.collect(`subtask ${this.subtask} of 3 has ${entries}`);
      return;
    }
    const [name, value] = command.split("=");
    rules.put(name!, Number(value));
  }
}

const KEYS = Array.from({ length: 24 }, (_, i) => `key${i}`);

function build(options: {
  directory: string;
  sink: CollectingSink<string>;
  parallelism: number;
  firstRun: boolean;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(options.parallelism)
    .enableCheckpointing(20, { directory: options.directory })
    .setRestartStrategy(RestartStrategies.noRestart());
  const control: TestItem<string>[] = [
    "a=1",
    "b=2",
    "c=3",
    TestSource.awaitCheckpoint(),
    options.firstRun
      ? TestSource.fail("fail for good after a checkpoint holding the rules")
      : "probe",
  ];
  const data: TestItem<string>[] = [
    TestSource.pause(options.firstRun ? 600_000 : 0),
    ...KEYS,
  ];
  const rules = env.fromSource(TestSource.of(control), WatermarkStrategy.noWatermarks(), "rules")
    .uid("rules").setParallelism(1);
  env.fromSource(TestSource.of(data), WatermarkStrategy.noWatermarks(), "data")
    .uid("data").setParallelism(1)
    .keyBy((k) => k)
    .connect(rules.broadcast(RULES as MapStateDescriptor<unknown, unknown>))
    .process(new RuleReader()).uid("rule-reader")
    .sinkTo(options.sink).uid("out");
  return env;
}

Deno.test("after a resume from parallelism 2 to 3 every subtask has the broadcast state", async () => {
  await withTempDir(async (directory) => {
    const sink = new CollectingSink<string>();
    const error = await build({ directory, sink, parallelism: 2, firstRun: true })
      .execute("broadcast state before the rescale")
      .then(() => assert.fail("the first run should fail for good"), (e: unknown) => e);
    assert.ok(error instanceof JobFailedError, String(error));
    const jobId = /resumeFrom\(\{ jobId: "([^"]+)"/.exec(error.message)?.[1];
    assert.ok(jobId, `the error says how to resume: ${error.message}`);
    assert.deepEqual(sink.committed(), [], "the first run emits nothing");

    const env = build({ directory, sink, parallelism: 3, firstRun: false });
    env.resumeFrom({ jobId });
    const result = await env.execute("broadcast state after the rescale");
    assert.equal(result.restarts, 0, result.summary);
    assert.deepEqual(
      [...sink.committed()].sort(),
      [
        ...KEYS.map((k) => `${k}: a=1 b=2 c=3`),
        "subtask 0 of 3 has a=1,b=2,c=3",
        "subtask 1 of 3 has a=1,b=2,c=3",
        "subtask 2 of 3 has a=1,b=2,c=3",
      ].sort(),
    );
  });
});
