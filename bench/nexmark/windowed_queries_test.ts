import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../../mod.ts";
import { type NexmarkConfig, NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import { windowedBaselineRows } from "./windowed_baseline.ts";
import { nexmarkEventTimeEvents, WINDOWED_JOBS } from "./windowed_queries.ts";
import {
  Q11_GAP_MS,
  WINDOWED_QUERY_NAMES,
  type WindowedQueryName,
  type WindowedRow,
} from "./windowed_rows.ts";

/**
 * One event per ms of event time: 40_000 events span 40 s, so several
 * windows of each query; for q11, one per 4 ms (160 s), so that bidders
 * have several sessions.
 */
const CONFIGS: { readonly [Q in WindowedQueryName]: NexmarkConfig } = {
  q5: { interEventDelayUs: 1000, seed: 5 },
  q7: { interEventDelayUs: 1000, seed: 5 },
  q8: { interEventDelayUs: 1000, seed: 5 },
  q11: { interEventDelayUs: 4000, seed: 2 },
};

/**
 * Whether some bidder bids exactly the session gap after its previous bid:
 * then the engine's sessions depend on watermark timing (see the module
 * docs of windowed_queries.ts), so the test's events must hold none.
 */
function hasTouchingBid(events: number, config: NexmarkConfig): boolean {
  const gen = new NexmarkGenerator(config);
  const last = new Map<number, number>();
  for (let n = 0; n < events; n++) {
    const e = gen.event(n);
    if (e.type !== "bid") continue;
    if (e.bid.dateTime - (last.get(e.bid.bidder) ?? Number.NaN) === Q11_GAP_MS) return true;
    last.set(e.bid.bidder, e.bid.dateTime);
  }
  return false;
}

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
      const options = { events: 40_000, parallelism, config: CONFIGS[query] };
      if (query === "q11") {
        assert.ok(
          !hasTouchingBid(options.events, options.config),
          "a bid exactly 10 s after its bidder's last: pick another seed",
        );
      }
      const expected = windowedBaselineRows(query, options);
      assert.ok(expected.length >= 4, `${query}: only ${expected.length} rows, too few to test`);
      const rows = await engineRows(query, options);
      assert.deepEqual(canonical(rows), canonical(expected));
    });
  }
}
