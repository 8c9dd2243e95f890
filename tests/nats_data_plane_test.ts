/**
 * The data plane over NATS: whole jobs run through `executeLocally` on
 * `NatsTransport`s connected to the shared server at 127.0.0.1:4222.
 *
 * - Credits: a fast source feeding a deliberately slow keyed consumer
 *   across a hash edge delivers every record exactly once, and the source
 *   stays within the credits' bound of the consumer.
 * - Loss: a data buffer dropped through the transport's drop filter (as
 *   NATS drops messages of a slow consumer) is detected by the channel's
 *   sequence numbers and fails the attempt; with checkpoints and a restart
 *   strategy the job recovers and commits exactly once.
 * - Subjects: whatever the job's name and keys hold, every subject published
 *   is one of `messages.ts`'s forms, built from safe ids only.
 *
 * Each run has its own job id (random suffix) and worker id, so runs in
 * parallel on the shared server never see each other's messages.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type JobExecutionResult,
  JobFailedError,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  RestartStrategies,
  type RestartStrategyConfig,
  type RuntimeContext,
  SequenceSource,
  StreamExecutionEnvironment,
  systemClock,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import type { Collector } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import type { DropFilter } from "../runtime/actor/in_process.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import { decodeBufferFrame, isBufferFrame } from "../runtime/task/buffer_frame.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import type { JobGraph } from "../runtime/graph/job_graph.ts";
import type { TaskConfig } from "../runtime/task/stream_task.ts";
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

const SHARED_NATS = "nats://127.0.0.1:4222";

/** Runs `graph` in this process with every transport a NATS connection of its own. */
async function runOnNats(
  graph: JobGraph,
  options: {
    restartStrategy: RestartStrategyConfig;
    taskConfig: TaskConfig;
    checkpointIntervalMs: number;
    dropFilter?: DropFilter;
  },
): Promise<JobExecutionResult> {
  return await withTempDir(async (dir) =>
    await executeLocally(graph, {
      checkpointing: {
        intervalMs: options.checkpointIntervalMs,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      checkpointDirectory: dir,
      restartStrategy: options.restartStrategy,
      taskConfig: options.taskConfig,
      clock: systemClock,
      transports: () =>
        NatsTransport.connect(
          { servers: SHARED_NATS, name: `weir-test ${graph.name}` },
          options.dropFilter === undefined ? {} : { dropFilter: options.dropFilter },
        ),
    })
  );
}

/** Counts every record it sees per key in keyed state and passes the record on. */
class CountPerKey implements KeyedProcessFunction<string, number, number> {
  private count!: ValueState<number>;
  open(context: RuntimeContext): void {
    this.count = context.getState(new ValueStateDescriptor<number>("count"));
  }
  processElement(value: number, _ctx: KeyedProcessContext<string>, out: Collector<number>): void {
    this.count.update((this.count.value() ?? 0) + 1);
    out.collect(value);
  }
}

/**
 * Keys with the characters a subject must never see unescaped: dots (token
 * separators), spaces and the wildcards `*` and `>`.
 */
function hostileKey(n: number): string {
  return `user.${n % 61} *>`;
}

Deno.test("credits over NATS: a fast source and a slow keyed consumer lose nothing", async () => {
  const records = 200_000;
  const taskConfig: TaskConfig = {
    bufferSize: 1024,
    bufferTimeoutMs: 10,
    initialCredits: 8,
    autoWatermarkIntervalMs: 200,
  };
  const batchSize = 1000;
  const counts = { emitted: 0, invoked: 0, maxInFlight: 0 };
  const subjects = new Set<string>();
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
  const sink = new SlowCollectingSink<number>(1, counts); // a macrotask per record
  env.fromSource(
    new SequenceSource(1, records, { batchSize }),
    WatermarkStrategy.noWatermarks(),
    "numbers",
  ).uid("numbers")
    .map((n) => {
      counts.emitted++;
      counts.maxInFlight = Math.max(counts.maxInFlight, counts.emitted - counts.invoked);
      return n;
    }).name("count emitted")
    .keyBy(hostileKey)
    .process(new CountPerKey()).uid("count-per-key")
    .sinkTo(sink).uid("slow");
  const result = await runOnNats(env.getJobGraph("orders.eu west *> >"), {
    restartStrategy: RestartStrategies.noRestart(),
    taskConfig,
    checkpointIntervalMs: 200,
    dropFilter: (subject) => {
      subjects.add(subject);
      return false;
    },
  });

  const committed = sink.committed().slice().sort((a, b) => a - b);
  assert.equal(committed.length, records, "records committed");
  const wrong = committed.findIndex((n, i) => n !== i + 1);
  assert.equal(wrong, -1, `record ${wrong + 1} missing or repeated: got ${committed[wrong]}`);
  assert.equal(counts.invoked, records, "the sink was not given every record once");
  assert.equal(result.restarts, 0);
  // Two sources times two consumers: four channels. In flight per channel:
  // the buffers the consumer has credit for, the sealed buffer waiting for
  // credit and the open buffer; plus one poll's batch per source.
  const bound = 4 * (taskConfig.initialCredits + 2) * taskConfig.bufferSize + 2 * batchSize;
  assert.ok(
    counts.maxInFlight <= bound,
    `the sources ran ${counts.maxInFlight} records ahead of the sink (at most ${bound} expected)`,
  );
  assert.ok(
    counts.maxInFlight >= taskConfig.initialCredits * taskConfig.bufferSize,
    `the sink never fell behind (${counts.maxInFlight} records in flight): no backpressure`,
  );
  // No user text in any subject: only the forms of messages.ts, from safe ids.
  assert.match(result.jobId, /^orders-eu-west-[0-9a-f]{8}$/);
  const safe = "[A-Za-z0-9_-]+";
  const forms = new RegExp(
    `^(weir\\.${safe}\\.coord|weir\\.${safe}\\.\\d+\\.task\\.v\\d+\\.\\d+|weir\\.worker\\.${safe}|_INBOX\\.${safe}\\.${safe})$`,
  );
  const odd = [...subjects].filter((subject) => !forms.test(subject));
  assert.deepEqual(odd, [], "subjects outside the forms of messages.ts");
  assert.ok(
    [...subjects].some((s) => s.startsWith(`weir.${result.jobId}.0.task.`)),
    `no data subject of job ${result.jobId} among ${[...subjects].join(", ")}`,
  );
});

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 4,
  recordsPerKey: 250,
  awaitCheckpointEvery: 300,
};

/** What the drop filter dropped. */
interface Dropped {
  subject: string;
  seq: number;
}

/**
 * A drop filter that drops the `nth` data buffer (0-based, a frame starting
 * with 0xC1) published on any subtask subject of attempt 0, and nothing else.
 */
function dropOneBuffer(nth: number): { filter: DropFilter; dropped: Dropped[] } {
  const dropped: Dropped[] = [];
  let seen = 0;
  return {
    dropped,
    filter: (subject, data) => {
      if (dropped.length > 0 || !/^weir\.[^.]+\.0\.task\./.test(subject)) return false;
      if (!isBufferFrame(data) || seen++ !== nth) return false;
      dropped.push({ subject, seq: decodeBufferFrame(data).seq });
      return true;
    },
  };
}

/** The keyed job of `_job_kit.ts`: sources 2, keyed sums 2, sink 2, on NATS. */
async function runKeyedJob(
  restartStrategy: RestartStrategyConfig,
  dropFilter: DropFilter,
): Promise<{ result: JobExecutionResult; committed: SumRecord[] }> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const sink = new CollectingSink<SumRecord>();
  env.fromSource(
    TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records").setParallelism(2)
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums").setParallelism(2)
    .sinkTo(sink).uid("committed").setParallelism(2);
  const result = await runOnNats(env.getJobGraph("lossy nats"), {
    restartStrategy,
    taskConfig: {
      bufferSize: 16,
      bufferTimeoutMs: 10,
      initialCredits: 4,
      autoWatermarkIntervalMs: 200,
    },
    checkpointIntervalMs: 10,
    dropFilter,
  });
  return { result, committed: sink.committed() };
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

Deno.test("a buffer lost on NATS fails the job naming the sequence gap when restarts are off", async () => {
  const drop = dropOneBuffer(3);
  let failure: unknown;
  try {
    await capturingLog(() => runKeyedJob(RestartStrategies.noRestart(), drop.filter));
  } catch (error) {
    failure = error;
  }
  assert.equal(drop.dropped.length, 1, "the filter dropped no buffer");
  const { seq, subject } = drop.dropped[0]!;
  assert.ok(failure instanceof JobFailedError, `execute did not reject: ${failure}`);
  const text = messages(failure);
  assert.match(text, /ChannelSequenceError/, text);
  assert.match(text, /gap: messages were lost/, text);
  assert.ok(
    text.includes(`expected ${seq}, got ${seq + 1}`),
    `the gap at ${seq} (dropped on ${subject}): ${text}`,
  );
});

Deno.test("a buffer lost on NATS fails the attempt and the restarted job commits exactly once", async () => {
  const drop = dropOneBuffer(30);
  const { value: run, log } = await capturingLog(() =>
    runKeyedJob(RestartStrategies.fixedDelay(2, 0), drop.filter)
  );
  assert.equal(drop.dropped.length, 1, "the filter dropped no buffer");
  const { seq, subject } = drop.dropped[0]!;
  assert.equal(run.result.restarts, 1, run.result.summary);
  assert.match(log, /attempt 0 failed: RemoteTaskError[\s\S]*caused by ChannelSequenceError/, log);
  assert.ok(log.includes(`expected ${seq}, got ${seq + 1} (gap: messages were lost)`), log);
  assertSameOutput(
    run.committed,
    [...expectedSums(SPLITS).values()].flat(),
    `after dropping buffer ${seq} on ${subject}`,
  );
});
