/**
 * The data plane over NATS: whole jobs run through `executeLocally` on
 * `NatsTransport`s connected to the shared server (`TEST_NATS_URL` of
 * `_nats_server.ts`).
 *
 * - Credits: a fast source feeding a deliberately slow keyed consumer
 *   across a hash edge delivers every record exactly once, and the source
 *   stays within the credits' bound of the consumer.
 * - Loss, duplicates, reordering: a data buffer lost (as NATS drops
 *   messages of a slow consumer), duplicated or reordered on its way is
 *   detected by the channel's sequence numbers and fails the attempt; with
 *   checkpoints and a restart strategy the job recovers and commits exactly
 *   once (the suite of `_channel_faults.ts`).
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
import type { DropFilter } from "../runtime/actor/in_process.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import type { JobGraph } from "../runtime/graph/job_graph.ts";
import type { TaskConfig } from "../runtime/task/stream_task.ts";
import { SlowCollectingSink, withTempDir } from "./_job_kit.ts";
import { channelFaultSuite } from "./_channel_faults.ts";
import { TEST_NATS_URL } from "./_nats_server.ts";

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
          { servers: TEST_NATS_URL, name: `weir-test ${graph.name}` },
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
    checkpointingMode: "exactly-once",
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

channelFaultSuite(
  "NATS",
  () => () => NatsTransport.connect({ servers: TEST_NATS_URL, name: "weir-test channel faults" }),
  "bytes",
);
