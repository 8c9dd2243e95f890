/**
 * A small job for cluster-mode tests: the numbers 1..N (`--count`, default
 * 1000, at `--rate` records/s when given) keyed by `n % 3`, with a running
 * sum per key, printed as `sum=<n>` lines by the sink subtasks (on the
 * workers' stdout).
 *
 *     deno run -A tests/jobs/cluster_smoke.ts --nats nats://127.0.0.1:4222 --count 1000
 *
 * Fault options (for tests):
 * - `--fail-once`: the map throws in attempt 0 at record 500 (a subtask's
 *   exception: the worker must survive it and the job restart);
 * - `--fail-always`: the map throws at record 500 in every attempt (the job
 *   fails for good after 3 restarts); `--resume JOB` resumes job JOB from
 *   its latest checkpoint;
 * - `--throw-in-slot`: the module throws while loading on slot threads (an
 *   uncaught error in a slot thread);
 * - `--crash-thread-once`: in attempt 0, the map subtask that sees record
 *   500 throws an uncaught error outside the subtask (from a timer), which
 *   ends its slot thread while the job's other slot threads run on;
 * - `--vary-graph`: the graph differs on slot threads (fingerprint mismatch).
 *
 * `--memory-threshold BYTES` sets the checkpoints' `memoryThresholdBytes`
 * (0: every state blob written to storage, none inline in the metadata).
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  executionRole,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    nats: { type: "string" },
    count: { type: "string", default: "1000" },
    rate: { type: "string" },
    "fail-once": { type: "boolean" },
    "fail-always": { type: "boolean" },
    resume: { type: "string" },
    "throw-in-slot": { type: "boolean" },
    "crash-thread-once": { type: "boolean" },
    "vary-graph": { type: "boolean" },
    "memory-threshold": { type: "string" },
  },
});
const onSlot = executionRole() === "slot";
if (values["throw-in-slot"] && onSlot) throw new Error("boom while loading on a slot thread");
const count = Number(values.count);
const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(values["vary-graph"] && onSlot ? 3 : 2);
env.enableCheckpointing(
  200,
  values["memory-threshold"] === undefined
    ? {}
    : { memoryThresholdBytes: Number(values["memory-threshold"]) },
);
env.setRestartStrategy(RestartStrategies.fixedDelay(3, 100));
const failOnce = values["fail-once"] ?? false;
const failAlways = values["fail-always"] ?? false;
const crashThreadOnce = values["crash-thread-once"] ?? false;
if (values.resume !== undefined) env.resumeFrom({ jobId: values.resume });
let attempt = 0;
env.fromSource(
  new SequenceSource(
    1,
    count,
    values.rate === undefined ? {} : { recordsPerSecond: Number(values.rate) },
  ),
  WatermarkStrategy.noWatermarks(),
  "numbers",
)
  .uid("numbers")
  .map({
    open(ctx: RuntimeContext) {
      attempt = ctx.attempt;
    },
    map(n: number) {
      if ((failAlways || (failOnce && attempt === 0)) && n === 500) {
        throw new Error("planned failure at 500");
      }
      if (crashThreadOnce && attempt === 0 && n === 500) {
        setTimeout(() => {
          throw new Error("planned uncaught error in a slot thread at 500");
        }, 0);
      }
      return n;
    },
  })
  .uid("check")
  .keyBy((n) => n % 3)
  .reduce((a, b) => a + b)
  .uid("sum")
  .map((sum) => `sum=${sum}`)
  .print();
const result = await env.execute("cluster smoke");
console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
