/**
 * A job for the cluster fault tests of region failover: the numbers 1..N
 * (`--count`, default 3000, at `--rate` records per second, default 1500)
 * at parallelism 3, chaining off, go source -> map -> exactly-once file
 * sink over forward edges only, so the job has three pipelined regions
 * (subtask i of every vertex). The sink writes one number per line into
 * CSV part files under `--out` (an absolute directory every worker can
 * reach); only finished part files are committed output. With
 * `--fail-at K`, the map of subtask 0 throws once, on attempt 0, at number
 * K (a region failover; subtask i reads the numbers n with n % 3 === (i + 1) % 3,
 * so K % 3 must be 1). `--fail-more I@K,…` adds failures of subtask I at
 * number K (K % 3 === (I + 1) % 3), each once in the whole run, whatever
 * the attempt (a marker file in `<out>.faults/`, which every worker sees,
 * says it fired). The client prints `RESULT restarts=<n>`.
 *
 * Each map subtask prints `region-sink-job open subtask=<i> attempt=<a>`
 * when it opens (on the worker's stdout).
 *
 *     deno run -A tests/jobs/region_failover_sink_job.ts --nats nats://127.0.0.1:4222 --out /tmp/out
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";
import { FileSink } from "../../connectors/file/file_sink.ts";
import { csvEncoder } from "../../connectors/file/row_encoders.ts";
import { DefaultRollingPolicy } from "../../connectors/file/rolling_policy.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    nats: { type: "string" },
    out: { type: "string" },
    count: { type: "string", default: "3000" },
    rate: { type: "string", default: "1500" },
    "fail-at": { type: "string", default: "0" },
    "fail-more": { type: "string", default: "" },
  },
});
if (values.out === undefined || !values.out.startsWith("/")) {
  throw new TypeError(`--out must be an absolute directory: current value is ${values.out}`);
}
const FAIL_AT = Number(values["fail-at"]);
/** Number at which subtask `i` fails once in the run (`--fail-more`). */
const FAIL_ONCE = new Map<number, number>();
for (const spec of values["fail-more"].split(",").filter((x) => x !== "")) {
  const m = /^(\d+)@(\d+)$/.exec(spec);
  if (!m) throw new TypeError(`--fail-more takes I@K,…: current value is ${values["fail-more"]}`);
  FAIL_ONCE.set(Number(m[1]), Number(m[2]));
}
const MARKERS = `${values.out}.faults`;

/** True the first time in the run (across attempts, threads and workers) it is asked for `name`. */
function firstTime(name: string): boolean {
  Deno.mkdirSync(MARKERS, { recursive: true });
  try {
    Deno.writeTextFileSync(`${MARKERS}/${name}`, "", { createNew: true });
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) return false;
    throw e;
  }
}

/** Passes numbers on; fails on attempt 0 of subtask 0 at FAIL_AT, and once per `--fail-more` entry. */
class Failing {
  private subtask = -1;
  private attempt = -1;
  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
    this.attempt = context.attempt;
    console.log(`region-sink-job open subtask=${this.subtask} attempt=${this.attempt}`);
  }
  map(n: number): number {
    if (n === FAIL_AT && this.subtask === 0 && this.attempt === 0) {
      throw new Error(`induced failure at ${n} on subtask 0 of attempt 0`);
    }
    if (n === FAIL_ONCE.get(this.subtask) && firstTime(`${this.subtask}@${n}`)) {
      throw new Error(`induced failure at ${n} on subtask ${this.subtask} (once)`);
    }
    return n;
  }
}

const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(3).enableCheckpointing(100).disableOperatorChaining()
  .setRestartStrategy(RestartStrategies.fixedDelay(30, 200));
env.fromSource(
  new SequenceSource(1, Number(values.count), {
    recordsPerSecond: Number(values.rate),
    batchSize: 10,
  }),
  WatermarkStrategy.noWatermarks(),
  "numbers",
).uid("numbers")
  .map(new Failing()).uid("failing")
  .sinkTo(
    new FileSink<number>({
      path: values.out,
      encoder: csvEncoder({ header: ["n"], toFields: (n) => [n] }),
      rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 2048 }),
    }),
  ).uid("numbers-out");
const result = await env.execute("region failover sink");
console.log(`RESULT restarts=${result.restarts}`);
