import assert from "node:assert/strict";
import {
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../../mod.ts";
import { CollectingSink, ManualClock } from "../../../testing.ts";
import type { SourceReaderContext } from "../../../runtime/api/source.ts";
import { NexmarkGenerator } from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";
import { NexmarkSource, type NexmarkSplit } from "./source.ts";
import { RecordingReaderOutput } from "../../testing/reader_output.ts";

function readerContext(subtaskIndex: number, parallelism: number, clock = new ManualClock()) {
  return {
    subtaskIndex,
    parallelism,
    attempt: 0,
    operatorName: "nexmark",
    currentProcessingTime: () => clock.now(),
    clock,
  } satisfies SourceReaderContext;
}

/** Reads `splits` with one reader to the end, returning (event, timestamp) pairs. */
function drain(source: NexmarkSource, splits: NexmarkSplit[], limit = Infinity) {
  const reader = source.createReader(readerContext(0, 1));
  reader.addSplits(splits);
  const output = new RecordingReaderOutput<NexmarkEvent>();
  while (output.records.length < limit && reader.pollNext(output) !== "END_OF_INPUT");
  const timestamps = output.timestamps;
  const seen = output.records.map((e, i): [NexmarkEvent, number | undefined] => [e, timestamps[i]]);
  return { seen, state: reader.snapshotState(1) };
}

Deno.test("NexmarkSource splits events over subtasks, each event once, stamped with its dateTime", () => {
  const source = new NexmarkSource({ events: 1_003, batchSize: 7, seed: 3 });
  const generator = new NexmarkGenerator({ seed: 3 });
  const splits = source.enumerateSplits({ parallelism: 3 });
  const all = splits.flatMap((s) => drain(source, [s]).seen);
  assert.equal(all.length, 1_003);
  const bySecond = new Map(all.map(([e, t]) => [JSON.stringify(e), t]));
  for (let n = 0; n < 1_003; n++) {
    const e = generator.event(n);
    assert.ok(bySecond.has(JSON.stringify(e)), `event ${n} missing`);
    assert.equal(bySecond.get(JSON.stringify(e)), generator.timestampOf(n));
  }
  assert.equal(new NexmarkSource({ events: Infinity }).boundedness, "continuous-unbounded");
  assert.deepEqual(
    drain(new NexmarkSource({ events: 0 }), [{ splitId: "nexmark-0", next: 0, step: 1, events: 0 }])
      .seen,
    [],
  );
});

Deno.test("NexmarkSource restored from a snapshot regenerates exactly the rest", () => {
  const source = new NexmarkSource({ events: 500, batchSize: 16 });
  const splits = source.enumerateSplits({ parallelism: 2 });
  const whole = drain(source, splits).seen.map(([e]) => e);
  const first = drain(source, splits, 100);
  const rest = drain(source, first.state).seen.map(([e]) => e);
  assert.deepEqual([...first.seen.map(([e]) => e), ...rest], whole);
});

Deno.test("NexmarkSource with eventsPerSecond paces readers and event time at that rate", () => {
  const clock = new ManualClock();
  const source = new NexmarkSource({ events: 10_000, eventsPerSecond: 1_000 });
  assert.equal(source.config.interEventDelayUs, 1_000);
  const reader = source.createReader(readerContext(0, 2, clock));
  reader.addSplits([source.enumerateSplits({ parallelism: 2 })[0]!]);
  const output = new RecordingReaderOutput<NexmarkEvent>();
  while (reader.pollNext(output) === "MORE_AVAILABLE");
  const burst = output.records.length;
  assert.ok(burst >= 1 && burst <= 50, `burst ${burst}`);
  clock.advance(1_000);
  while (reader.pollNext(output) === "MORE_AVAILABLE");
  const count = output.records.length;
  assert.ok(count - burst <= 500, `${count - burst} events in 1 s at 500/s`);
  reader.close?.();
});

Deno.test("NexmarkSource rejects bad options", () => {
  assert.throws(
    () => new NexmarkSource({ events: -1 }),
    /'events' must be Infinity or a safe integer >= 0/,
  );
  assert.throws(() => new NexmarkSource({ events: 1, eventsPerSecond: 0 }), /eventsPerSecond/);
  assert.throws(() => new NexmarkSource({ events: 1, batchSize: 0 }), /batchSize/);
  assert.throws(() => new NexmarkSource({ events: 1, hotBiddersRatio: 0 }), /hotBiddersRatio/);
  assert.throws(
    () => new NexmarkSource({ events: 1 }).enumerateSplits({ parallelism: 0 }),
    RangeError,
  );
});

const JOB_EVENTS = 6_000;
const JOB_SOURCE = { events: JOB_EVENTS, eventsPerSecond: 20_000, batchSize: 50, seed: 9 } as const;

/** Failures fired, by run id (function objects are copied per subtask: state lives here). */
const fired = new Map<string, number>();

/** A map that throws once, on attempt 0, at the event `failAt` (its JSON). */
class FailOnce {
  private attempt = 0;
  constructor(readonly failAt: string | undefined, readonly runId: string) {}
  open(context: RuntimeContext): void {
    this.attempt = context.attempt;
  }
  map(e: NexmarkEvent): string {
    const json = JSON.stringify(e);
    if (this.attempt === 0 && json === this.failAt) {
      fired.set(this.runId, (fired.get(this.runId) ?? 0) + 1);
      throw new Error("induced failure in the Nexmark job");
    }
    return json;
  }
}

async function runJob(failAt: string | undefined) {
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-" });
  try {
    const runId = crypto.randomUUID();
    const sink = new CollectingSink<string>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(10, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
    env.fromSource(
      new NexmarkSource(JOB_SOURCE),
      WatermarkStrategy.noWatermarks(),
      "nexmark",
    ).uid("nexmark").setParallelism(2)
      .map(new FailOnce(failAt, runId)).uid("json").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const result = await env.execute("nexmark replay");
    return { result, committed: sink.committed(), fired: fired.get(runId) ?? 0 };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a NexmarkSource job that fails and restores commits exactly the events of a clean run", async () => {
  const generator = new NexmarkGenerator(new NexmarkSource(JOB_SOURCE).config);
  const expected = Array.from({ length: JOB_EVENTS }, (_, n) => JSON.stringify(generator.event(n)));
  const clean = await runJob(undefined);
  assert.equal(clean.result.restarts, 0, clean.result.summary);
  const failed = await runJob(expected[4_000]);
  assert.equal(failed.fired, 1);
  assert.equal(failed.result.restarts, 1, failed.result.summary);
  const sorted = (xs: string[]) => [...xs].sort();
  assert.deepEqual(sorted(clean.committed), sorted(expected));
  assert.deepEqual(sorted(failed.committed), sorted(expected));
});
