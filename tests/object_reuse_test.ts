/**
 * The object-reuse contract of in-thread exchanges (DESIGN.md §15, README
 * "What is not guaranteed"): in local mode a keyBy or rebalance edge hands
 * the very record a function collected to the next subtask, unencoded, so
 * records must not be changed after `collect`; `disableObjectReuse()` makes
 * every network edge encode, and then each consumer gets a copy.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink } from "../testing.ts";

interface Item {
  readonly key: string;
  readonly n: number;
  readonly at: Date;
}

/** Records collected by the map before the exchange (module scope: local mode shares it). */
const collected = new WeakSet<object>();

/**
 * source -> map (makes and remembers each record) -> `exchange` -> map
 * (whether the record it got is the one collected) -> sink, at parallelism 2.
 */
async function run(
  exchange: "keyBy" | "rebalance",
  objectReuse: boolean,
): Promise<{ same: boolean; item: Item }[]> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setRestartStrategy(RestartStrategies.noRestart())
    .setParallelism(2);
  if (!objectReuse) env.disableObjectReuse();
  const sink = new CollectingSink<{ same: boolean; item: Item }>();
  const made = env.fromCollection(Array.from({ length: 200 }, (_, n) => n)).uid("numbers")
    .map((n: number): Item => {
      const item = { key: `k${n % 7}`, n, at: new Date(n) };
      collected.add(item);
      return item;
    }).uid("make");
  const exchanged = exchange === "keyBy"
    ? made.keyBy((i) => i.key).map((i) => i)
    : made.rebalance();
  exchanged
    .map((item: Item) => ({ same: collected.has(item), item })).uid("check")
    .sinkTo(sink).uid("out");
  await env.execute(`object reuse ${exchange} ${objectReuse}`);
  return sink.committed();
}

for (const exchange of ["keyBy", "rebalance"] as const) {
  Deno.test(`in local mode a ${exchange} edge hands the collected record itself to the next subtask`, async () => {
    const out = await run(exchange, true);
    assert.equal(out.length, 200);
    const copied = out.filter((o) => !o.same).map((o) => o.item.n);
    assert.deepEqual(copied, [], `records ${copied.join(", ")} arrived as copies`);
  });

  Deno.test(`with object reuse disabled a ${exchange} edge gives the next subtask an equal copy`, async () => {
    const out = await run(exchange, false);
    assert.deepEqual(
      out.map((o) => o.item.n).sort((a, b) => a - b),
      Array.from({ length: 200 }, (_, n) => n),
    );
    const shared = out.filter((o) => o.same).map((o) => o.item.n);
    assert.deepEqual(shared, [], `records ${shared.join(", ")} arrived as the collected objects`);
    for (const { item } of out) {
      assert.deepEqual(item, { key: `k${item.n % 7}`, n: item.n, at: new Date(item.n) });
    }
  });
}
