import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../../mod.ts";
import type { NexmarkConfig } from "../../connectors/datagen/nexmark/mod.ts";
import { windowedBaselineRows } from "./windowed_baseline.ts";
import { nexmarkEventTimeEvents, WINDOWED_JOBS } from "./windowed_queries.ts";
import { WINDOWED_QUERY_NAMES, type WindowedQueryName, type WindowedRow } from "./windowed_rows.ts";

/** One event per ms of event time: 40_000 events span 40 s, so several windows of each query. */
const SPREAD: NexmarkConfig = { interEventDelayUs: 1000, seed: 5 };

/** Runs `query`'s job over `events` events and collects its rows. */
async function engineRows<Q extends WindowedQueryName>(
  query: Q,
  options: { events: number; parallelism: number; config: NexmarkConfig },
): Promise<WindowedRow<Q>[]> {
  const rows: WindowedRow<Q>[] = [];
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-windowed-test-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(options.parallelism);
    env.enableCheckpointing(50, { directory: dir });
    const events = nexmarkEventTimeEvents(env, {
      events: options.events,
      batchSize: 100,
      ...options.config,
    });
    (WINDOWED_JOBS[query] as typeof WINDOWED_JOBS[Q])(events).sinkTo({
      kind: "simple",
      invoke: (row: WindowedRow<Q>) => {
        rows.push(row);
      },
    }).uid("collect");
    const result = await env.execute(`nexmark-${query}-test`);
    const late = Object.values(result.metrics).flatMap((v) =>
      Object.entries(v.operators).map(([uid, m]) => [uid, m.numLateRecordsDropped ?? 0] as const)
    );
    assert.ok(late.length >= 1, `${query}: no window operator reported its late records`);
    for (const [uid, dropped] of late) {
      assert.equal(dropped, 0, `${query}: '${uid}' dropped late records`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return rows;
}

/** Rows as sorted JSON lines: equal multisets give equal arrays. */
const canonical = (rows: readonly unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

for (const query of WINDOWED_QUERY_NAMES) {
  for (const parallelism of [1, 2]) {
    Deno.test(`${query} on the engine emits exactly the baseline's rows at parallelism ${parallelism}`, async () => {
      const options = { events: 40_000, parallelism, config: SPREAD };
      const expected = windowedBaselineRows(query, options);
      assert.ok(expected.length >= 4, `${query}: only ${expected.length} rows, too few to test`);
      const rows = await engineRows(query, options);
      assert.deepEqual(canonical(rows), canonical(expected));
    });
  }
}
