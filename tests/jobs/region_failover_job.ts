/**
 * A job for the cluster test of region failover: the numbers 1..N
 * (`--count`, default 2000, at `--rate` records per second, default 2000)
 * at parallelism 2, with chaining off, go source -> map -> sink over forward
 * edges only, so the job has two pipelined regions (subtask 0 of every
 * vertex, and subtask 1). The map keeps its subtask's count and sum in
 * operator state, and on attempt 0 subtask 0 throws once at number
 * `--fail-at` (default 1001).
 *
 * Each map subtask prints `region-job open subtask=<i> attempt=<a>
 * thread=<id>` when it opens and `region-job close subtask=<i> attempt=<a>
 * thread=<id> count=<c> sum=<s>` when it closes (on the worker's stdout),
 * where `<id>` is drawn once per slot thread (each slot thread imports this
 * module). The client prints `RESULT restarts=<n>`.
 *
 *     deno run -A tests/jobs/region_failover_job.ts --nats nats://127.0.0.1:4222
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type CheckpointedFunction,
  type FunctionInitializationContext,
  type ListState,
  ListStateDescriptor,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    nats: { type: "string" },
    count: { type: "string", default: "2000" },
    rate: { type: "string", default: "2000" },
    "fail-at": { type: "string", default: "1001" },
  },
});

/** This slot thread's id (the module is imported once per thread). */
const THREAD = crypto.randomUUID().slice(0, 8);
const FAIL_AT = Number(values["fail-at"]);

/** Counts and sums its subtask's numbers in operator state; fails once on attempt 0 of subtask 0. */
class CountingSum implements CheckpointedFunction {
  private state!: ListState<[number, number]>;
  private count = 0;
  private sum = 0;
  private subtask = -1;
  private attempt = -1;
  initializeState(ctx: FunctionInitializationContext): void {
    this.state = ctx.operatorStateStore.getListState(
      new ListStateDescriptor<[number, number]>("count-and-sum"),
    );
    for (const [count, sum] of this.state.get()) {
      this.count += count;
      this.sum += sum;
    }
  }
  snapshotState(): void {
    this.state.update([[this.count, this.sum]]);
  }
  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
    this.attempt = context.attempt;
    console.log(`region-job open subtask=${this.subtask} attempt=${this.attempt} thread=${THREAD}`);
  }
  map(n: number): number {
    if (n === FAIL_AT && this.subtask === 0 && this.attempt === 0) {
      throw new Error(`induced failure at ${n} on subtask 0 of attempt 0`);
    }
    this.count++;
    this.sum += n;
    return n;
  }
  close(): void {
    console.log(
      `region-job close subtask=${this.subtask} attempt=${this.attempt} thread=${THREAD} ` +
        `count=${this.count} sum=${this.sum}`,
    );
  }
}

const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(2).enableCheckpointing(100).disableOperatorChaining();
env.fromSource(
  new SequenceSource(1, Number(values.count), {
    recordsPerSecond: Number(values.rate),
    batchSize: 10,
  }),
  WatermarkStrategy.noWatermarks(),
  "numbers",
).uid("numbers")
  .map(new CountingSum()).uid("counting-sum")
  .sinkTo({ kind: "simple", invoke() {} }).uid("discard");
const result = await env.execute("region failover");
console.log(`RESULT restarts=${result.restarts}`);
