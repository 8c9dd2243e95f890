/**
 * The data plane end to end: a lost buffer is detected by its channel's
 * sequence numbers and fails the attempt (never skipped), and credit-based
 * flow control keeps a fast source within a few buffers of a slow sink
 * without losing anything.
 *
 * The lost buffer is simulated with the in-process bus's drop filter; the
 * job runs through `executeLocally` with a bus the test holds.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type JobExecutionResult,
  JobFailedError,
  RestartStrategies,
  type RestartStrategyConfig,
  StreamExecutionEnvironment,
  systemClock,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { decodeBufferFrame, isBufferFrame } from "../runtime/task/buffer_frame.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  SlowCollectingSink,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 1,
  keysPerSplit: 4,
  recordsPerKey: 250,
  awaitCheckpointEvery: 300,
};

/** What the drop filter saw and dropped. */
interface Dropped {
  subject: string;
  seq: number;
}

/**
 * A drop filter that drops the `nth` data buffer (0-based) published on any
 * task subject of attempt 0, and nothing else.
 */
function dropOneBuffer(nth: number): {
  filter: (subject: string, data: Uint8Array) => boolean;
  dropped: Dropped[];
} {
  const dropped: Dropped[] = [];
  let seen = 0;
  return {
    dropped,
    filter: (subject, data) => {
      if (dropped.length > 0 || !/^weir\.[^.]+\.0\.task\./.test(subject)) return false;
      if (!isBufferFrame(data) || seen++ !== nth) return false;
      const msg = decodeBufferFrame(data);
      dropped.push({ subject, seq: msg.seq });
      return true;
    },
  };
}

/** Runs the keyed job of `_job_kit.ts` (source 1, keyed sums 2, sink 2) on `bus`. */
async function runKeyedJobOn(
  bus: InProcessBus,
  restartStrategy: RestartStrategyConfig,
): Promise<{ result: JobExecutionResult; committed: SumRecord[] }> {
  return await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    const sink = new CollectingSink<SumRecord>();
    env.fromSource(
      TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records")
      .keyBy((r) => r.key)
      .process(new SequenceCheck()).uid("sums").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const result = await executeLocally(env.getJobGraph("lossy bus"), {
      checkpointing: {
        intervalMs: 10,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      checkpointDirectory: dir,
      restartStrategy,
      taskConfig: {
        bufferSize: 16,
        bufferTimeoutMs: 10,
        initialCredits: 4,
        autoWatermarkIntervalMs: 200,
      },
      clock: systemClock,
      bus,
    });
    return { result, committed: sink.committed() };
  });
}

/** Runs `body` while collecting what Weir logs (it logs on `console.error`). */
async function capturingLog<R>(body: () => Promise<R>): Promise<{ value: R; log: string }> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  };
  try {
    return { value: await body(), log: lines.join("\n") };
  } finally {
    console.error = original;
  }
}

/** The messages of `error` and of its `cause` chain, one per line. */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) parts.push(`${e.name}: ${e.message}`);
  return parts.join("\n");
}

Deno.test("a lost data buffer fails the job naming the sequence gap when restarts are off", async () => {
  const bus = new InProcessBus();
  const drop = dropOneBuffer(3);
  bus.setDropFilter(drop.filter);
  let failure: unknown;
  try {
    await capturingLog(() => runKeyedJobOn(bus, RestartStrategies.noRestart()));
  } catch (error) {
    failure = error;
  }
  assert.equal(drop.dropped.length, 1, "the filter dropped no buffer");
  const { seq } = drop.dropped[0]!;
  assert.ok(failure instanceof JobFailedError, `execute did not reject: ${failure}`);
  const text = messages(failure);
  assert.match(text, /ChannelSequenceError/, text);
  assert.match(text, /gap: messages were lost/, text);
  assert.ok(text.includes(`expected ${seq}, got ${seq + 1}`), `the gap at ${seq}: ${text}`);
});

Deno.test("a lost data buffer fails the attempt and the restarted job commits exactly once", async () => {
  const bus = new InProcessBus();
  const drop = dropOneBuffer(30);
  bus.setDropFilter(drop.filter);
  const { value: run, log } = await capturingLog(() =>
    runKeyedJobOn(bus, RestartStrategies.fixedDelay(2, 0))
  );
  assert.equal(drop.dropped.length, 1, "the filter dropped no buffer");
  const { seq } = drop.dropped[0]!;
  assert.equal(run.result.restarts, 1, run.result.summary);
  assert.match(log, /attempt 0 failed: RemoteTaskError[\s\S]*caused by ChannelSequenceError/, log);
  assert.ok(log.includes(`expected ${seq}, got ${seq + 1} (gap: messages were lost)`), log);
  assertSameOutput(
    run.committed,
    [...expectedSums(SPLITS).values()].flat(),
    `after dropping buffer ${seq} on ${drop.dropped[0]!.subject}`,
  );
});

Deno.test("credits keep a fast source within a few buffers of a slow sink and lose nothing", async () => {
  const records = 3000;
  const bufferSize = 16;
  const credits = 2;
  const batchSize = 8;
  await withTempDir(async (dir) => {
    const counts = { emitted: 0, invoked: 0, maxInFlight: 0 };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.noRestart())
      .setNetworkBuffers({ bufferSize, credits });
    const sink = new SlowCollectingSink<number>(1, counts);
    env.fromSource(
      TestSource.of(Array.from({ length: records }, (_, i) => i), { batchSize }),
      WatermarkStrategy.noWatermarks(),
      "numbers",
    ).uid("numbers")
      .map((n) => {
        counts.emitted++;
        counts.maxInFlight = Math.max(counts.maxInFlight, counts.emitted - counts.invoked);
        return n;
      }).name("count emitted")
      .rebalance() // a network channel between the source and the sink
      .sinkTo(sink).uid("slow");
    const result = await env.execute("backpressure");

    assert.deepEqual(sink.committed(), Array.from({ length: records }, (_, i) => i));
    assert.equal(counts.invoked, records, "the sink was not given every record once");
    // In flight: the buffers the consumer has credit for, the sealed buffers
    // waiting for credit, the open buffer, and one poll's batch.
    const bound = (credits + 2) * bufferSize + batchSize;
    assert.ok(
      counts.maxInFlight <= bound,
      `the source ran ${counts.maxInFlight} records ahead of the sink (at most ${bound} expected)`,
    );
    assert.ok(
      counts.maxInFlight >= credits * bufferSize,
      `the sink never fell behind (${counts.maxInFlight} records in flight): no backpressure`,
    );
    assert.equal(result.restarts, 0);
  });
});
