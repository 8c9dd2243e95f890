/**
 * A job for the cluster test of in-thread exchanges (DESIGN.md §15): the
 * numbers 1..N (`--count`, default 2000) become records `{ n }` in a map
 * that remembers each record it made (in its thread's module scope), then
 * cross a keyBy edge (`n % 5`) at parallelism 2, and a keyed map counts the
 * records it got as the very objects made in its thread (`shared`) and
 * those that arrived as copies (`copied`: decoded from bytes). Each keyed
 * subtask prints `exchange subtask=<i> shared=<s> copied=<c>` when it closes
 * (on the worker's stdout). With every subtask in one slot thread, all are
 * shared.
 *
 *     deno run -A tests/jobs/in_thread_exchange_job.ts --nats nats://127.0.0.1:4222
 *
 * @module
 */

import { parseArgs } from "node:util";
import { type RuntimeContext, StreamExecutionEnvironment, WatermarkStrategy } from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { nats: { type: "string" }, count: { type: "string", default: "2000" } },
});

interface Item {
  readonly n: number;
}

/** Records made by the map, in this thread. */
const made = new WeakSet<object>();

/** Counts the records it gets as the objects made in this thread, or as copies. */
class CheckShared {
  private subtask = 0;
  private shared = 0;
  private copied = 0;
  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
  }
  map(item: Item): number {
    if (made.has(item)) this.shared++;
    else this.copied++;
    return item.n;
  }
  close(): void {
    console.log(`exchange subtask=${this.subtask} shared=${this.shared} copied=${this.copied}`);
  }
}

const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(2);
env.enableCheckpointing(200);
env.fromSource(
  new SequenceSource(1, Number(values.count)),
  WatermarkStrategy.noWatermarks(),
  "numbers",
).uid("numbers")
  .map((n: number): Item => {
    const item = { n };
    made.add(item);
    return item;
  }).uid("make")
  .keyBy((item) => item.n % 5)
  .map(new CheckShared()).uid("check")
  .sinkTo({ kind: "simple", invoke() {} }).uid("discard");
const result = await env.execute("in-thread exchange");
console.log(`RESULT restarts=${result.restarts}`);
