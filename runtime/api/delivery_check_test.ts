import assert from "node:assert/strict";
import "../cluster/default_executor.ts"; // registers the executor, as mod.ts does
import {
  checkJobDeliveryGuarantees,
  decideDeliveryGuarantees,
  isExactlyOnceSink,
  type JobSink,
} from "./delivery_check.ts";
import { type DeliveryGuarantee, DeliveryGuaranteeError, type SinkV2 } from "./sink_v2.ts";
import type { SinkFunction, TwoPhaseCommitSink } from "./sink.ts";
import { StreamExecutionEnvironment } from "./environment.ts";
import { WatermarkStrategy } from "../time/watermark.ts";
import { TestSource } from "../../connectors/testing/test_source.ts";
import { CollectingSink } from "../../connectors/testing/collecting_sink.ts";

function v2(deliveryGuarantee: DeliveryGuarantee): SinkV2<unknown> {
  return {
    kind: "v2",
    deliveryGuarantee,
    createWriter: () => ({ write() {}, flush() {}, close() {} }),
  };
}

const twoPhase: TwoPhaseCommitSink<unknown, string> = {
  kind: "two-phase-commit",
  beginTransaction: () => "t",
  invoke() {},
  preCommit() {},
  commit() {},
  abort() {},
};

const simple: SinkFunction<unknown> = { kind: "simple", invoke() {} };

const sink = (name: string, uid: string | undefined, s: JobSink["sink"]): JobSink => ({
  name,
  uid,
  sink: s,
});

Deno.test("isExactlyOnceSink holds for exactly-once SinkV2s and every TwoPhaseCommitSink only", () => {
  assert.equal(isExactlyOnceSink(v2("exactly-once")), true);
  assert.equal(isExactlyOnceSink(twoPhase as TwoPhaseCommitSink<unknown, unknown>), true);
  assert.equal(isExactlyOnceSink(v2("at-least-once")), false);
  assert.equal(isExactlyOnceSink(v2("none")), false);
  assert.equal(isExactlyOnceSink(simple), false);
});

Deno.test("decideDeliveryGuarantees refuses an exactly-once sink when checkpointing is off in an unbounded job", () => {
  const sinks = [
    sink("Sink: bills", "bills", v2("exactly-once")),
    sink("Sink: audit", undefined, twoPhase as TwoPhaseCommitSink<unknown, unknown>),
    sink("Sink: log", "log", v2("at-least-once")),
    sink("Sink: print", "print", simple),
  ];
  const decisions = decideDeliveryGuarantees({ sinks, mode: "none", bounded: false });
  assert.deepEqual(decisions.map((d) => [d.kind, d.sink.name]), [
    ["refuse", "Sink: bills"],
    ["refuse", "Sink: audit"],
  ]);
  assert.match(decisions[0]!.message, /Sink: bills \(uid "bills"\)/);
  assert.match(decisions[0]!.message, /enableCheckpointing/);
  assert.match(decisions[1]!.message, /^Sink: audit has deliveryGuarantee "exactly-once"/);
});

Deno.test("decideDeliveryGuarantees accepts an exactly-once sink without checkpointing when every source is bounded", () => {
  const sinks = [sink("Sink: bills", "bills", v2("exactly-once"))];
  assert.deepEqual(decideDeliveryGuarantees({ sinks, mode: "none", bounded: true }), []);
});

Deno.test("decideDeliveryGuarantees refuses a sink that commits only at checkpoints, whatever its guarantee, when checkpointing is off in an unbounded job only", () => {
  const walLike: SinkV2<unknown> = { ...v2("at-least-once"), commitsOnlyAtCheckpoints: true };
  const sinks = [sink("Sink: wal", "wal", walLike), sink("Sink: log", "log", v2("at-least-once"))];
  const decisions = decideDeliveryGuarantees({ sinks, mode: "none", bounded: false });
  assert.deepEqual(decisions.map((d) => [d.kind, d.sink.name]), [["refuse", "Sink: wal"]]);
  assert.match(
    decisions[0]!.message,
    /^Sink: wal \(uid "wal"\) makes records visible only when a checkpoint completes .*enableCheckpointing/,
  );
  assert.deepEqual(decideDeliveryGuarantees({ sinks, mode: "none", bounded: true }), []);
  assert.deepEqual(decideDeliveryGuarantees({ sinks, mode: "at-least-once", bounded: false }), []);
});

Deno.test("decideDeliveryGuarantees warns that an exactly-once sink is at-least-once end to end in at-least-once mode", () => {
  const decisions = decideDeliveryGuarantees({
    sinks: [sink("Sink: bills", "bills", v2("exactly-once")), sink("Sink: p", "p", simple)],
    mode: "at-least-once",
    bounded: true,
  });
  assert.equal(decisions.length, 1);
  assert.equal(decisions[0]!.kind, "warn");
  assert.match(decisions[0]!.message, /Sink: bills \(uid "bills"\)/);
  assert.match(decisions[0]!.message, /end to end it is at-least-once/);
});

Deno.test("decideDeliveryGuarantees accepts every sink in exactly-once mode", () => {
  const all = [
    sink("a", "a", v2("exactly-once")),
    sink("b", "b", twoPhase as TwoPhaseCommitSink<unknown, unknown>),
    sink("c", "c", v2("at-least-once")),
    sink("d", "d", v2("none")),
    sink("e", "e", simple),
  ];
  for (const bounded of [true, false]) {
    assert.deepEqual(decideDeliveryGuarantees({ sinks: all, mode: "exactly-once", bounded }), []);
    assert.deepEqual(checkJobDeliveryGuarantees({ sinks: all, mode: "exactly-once", bounded }), []);
  }
});

Deno.test("checkJobDeliveryGuarantees throws a DeliveryGuaranteeError naming every refused sink", () => {
  assert.throws(
    () =>
      checkJobDeliveryGuarantees({
        sinks: [
          sink("Sink: one", "one", v2("exactly-once")),
          sink("Sink: two", "two", v2("exactly-once")),
        ],
        mode: "none",
        bounded: false,
      }),
    (error: unknown) =>
      error instanceof DeliveryGuaranteeError && /uid "one"/.test(error.message) &&
      /uid "two"/.test(error.message),
  );
  assert.deepEqual(
    checkJobDeliveryGuarantees({
      sinks: [sink("Sink: one", "one", v2("exactly-once"))],
      mode: "at-least-once",
      bounded: false,
    }).length,
    1,
  );
});

Deno.test("execute() refuses an exactly-once sink without checkpointing in an unbounded job, before it starts", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  let written = 0;
  const eo: SinkV2<number> = {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    createWriter: () => ({
      write() {
        written++;
      },
      flush() {},
      close() {},
    }),
  };
  env.fromSource(
    TestSource.of([1, 2, 3], { bounded: false }),
    WatermarkStrategy.noWatermarks(),
    "unbounded",
  ).sinkTo(eo).uid("eo-out");
  await assert.rejects(
    () => env.execute("no checkpointing"),
    (error: unknown) =>
      error instanceof DeliveryGuaranteeError && /uid "eo-out"/.test(error.message) &&
      /enableCheckpointing/.test(error.message),
  );
  assert.equal(written, 0, "the job ran");
});

Deno.test("execute() refuses an exactly-once sink behind a socket source without checkpointing, even with maxRetry 0", async () => {
  // The peer closes every connection at once: a job allowed to run would
  // finish with no lines (and execute() would resolve), so the test fails
  // unless execute() refuses before anything connects.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  const serving = (async () => {
    for await (const connection of listener) {
      accepted++;
      connection.close();
    }
  })();
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    const eo: SinkV2<string> = {
      kind: "v2",
      deliveryGuarantee: "exactly-once",
      createWriter: () => ({ write() {}, flush() {}, close() {} }),
    };
    env.socketTextStream("127.0.0.1", listener.addr.port).sinkTo(eo).uid("socket-eo-out");
    await assert.rejects(
      () => env.execute("socket without checkpointing"),
      (error: unknown) =>
        error instanceof DeliveryGuaranteeError && /uid "socket-eo-out"/.test(error.message) &&
        /unbounded source/.test(error.message),
    );
    assert.equal(accepted, 0, "the job connected to the socket");
  } finally {
    listener.close();
    await serving.catch(() => {});
  }
});

Deno.test("enableCheckpointing refuses a mode other than exactly-once or at-least-once", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  assert.throws(
    () => env.enableCheckpointing(100, { mode: "at-most-once" as "exactly-once" }),
    (error: unknown) =>
      error instanceof RangeError &&
      error.message ===
        'checkpointing mode must be "exactly-once" or "at-least-once": current value is "at-most-once"',
  );
});

Deno.test("execute() in at-least-once mode runs the job and warns, naming an exactly-once sink", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-delivery-check-" });
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void lines.push(args.map(String).join(" "));
  try {
    const sink = new CollectingSink<number>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(50, { mode: "at-least-once", directory: dir });
    env.fromCollection([1, 2, 3]).sinkTo(sink).uid("alo-out");
    await env.execute("at-least-once warning");
    assert.deepEqual(sink.committed(), [1, 2, 3]);
  } finally {
    console.error = original;
    await Deno.remove(dir, { recursive: true });
  }
  const warnings = lines.filter((l) => / WARN environment .*uid "alo-out"/.test(l));
  assert.equal(warnings.length, 1, lines.join("\n"));
  assert.match(warnings[0]!, /end to end it is at-least-once/);
});
