import assert from "node:assert/strict";
import { type NexmarkConfig, NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import { fieldsHash, q4Batch, q6Batch } from "./queries_q4_q6.ts";
import { runUpdatingBaseline, UPDATING_QUERY_NAMES } from "./q4_q6_baseline.ts";

const BATCH = { q4: q4Batch, q6: q6Batch };

Deno.test("the q4 and q6 baseline loops give the batch oracles' tables and their digests", async (t) => {
  const configs: NexmarkConfig[] = [{}, { interEventDelayUs: 100, seed: 3 }];
  for (const config of configs) {
    const events = 30_000;
    const gen = new NexmarkGenerator(config);
    const all = Array.from({ length: events }, (_, n) => gen.event(n));
    for (const query of UPDATING_QUERY_NAMES) {
      await t.step(`${query}, ${JSON.stringify(config)}`, () => {
        const rows: string[] = [];
        const r = runUpdatingBaseline(query, {
          events,
          config,
          row: (f) => rows.push(JSON.stringify(f)),
        });
        const expected = BATCH[query](all);
        assert.ok(expected.length > 4, `${query}: only ${expected.length} rows`);
        assert.deepEqual(rows.sort(), expected.map((f) => JSON.stringify(f)).sort());
        assert.equal(r.count, expected.length);
        assert.equal(r.checksum, expected.reduce((s, f) => (s + fieldsHash(f)) >>> 0, 0));
      });
    }
  }
});

Deno.test("the q4 baseline refuses a negative event count", () => {
  assert.throws(() => runUpdatingBaseline("q4", { events: -1 }), {
    name: "RangeError",
    message: /'events' must be a safe integer >= 0: current value is -1/,
  });
});
