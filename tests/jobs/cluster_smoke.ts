/**
 * A small job for cluster-mode tests: the numbers 1..N (`--count`, default
 * 1000) keyed by `n % 3`, with a running sum per key, printed as
 * `key,sum` lines by the sink subtasks (on the workers' stdout).
 *
 *     deno run -A tests/jobs/cluster_smoke.ts --nats nats://127.0.0.1:4222 --count 1000
 *
 * @module
 */

import { parseArgs } from "node:util";
import { StreamExecutionEnvironment } from "../../mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { nats: { type: "string" }, count: { type: "string", default: "1000" } },
});
const count = Number(values.count);
const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(2);
env.enableCheckpointing(200);
env.fromCollection(Array.from({ length: count }, (_, i) => i + 1))
  .uid("numbers")
  .keyBy((n) => n % 3)
  .reduce((a, b) => a + b)
  .uid("sum")
  .map((sum) => `sum=${sum}`)
  .print();
const result = await env.execute("cluster smoke");
console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
