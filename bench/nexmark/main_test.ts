import assert from "node:assert/strict";
import { parseResultFields, resultLine } from "../_result.ts";
import { runBaseline } from "./baseline.ts";
import { runQuery } from "./main.ts";
import { QUERY_NAMES } from "./queries.ts";
import { resultFields } from "./report.ts";

// A smoke run of the harness: tiny sizes, local mode. No figure is asserted
// beyond being positive (no timing in tests); counts and the RESULT line are.
const EVENTS = 5000;
const ROUNDS = 2;

Deno.test("the harness runs every query in rounds and prints a RESULT line that parses", async (t) => {
  for (const query of QUERY_NAMES) {
    await t.step(query, async () => {
      const lines: string[] = [];
      const r = await runQuery({
        query,
        events: EVENTS,
        rounds: ROUNDS,
        log: (l) => lines.push(l),
      });
      assert.equal(lines.length, 2 * ROUNDS); // engine, baseline, engine, baseline
      assert.match(lines[0]!, / round 1\/2 engine: /);
      assert.match(lines[1]!, / round 1\/2 baseline: /);
      const expected = runBaseline(query, { events: EVENTS }).count;
      assert.ok(expected > 0, `${query}: the baseline emitted nothing for ${EVENTS} events`);
      const fields = parseResultFields(resultLine(resultFields(r)));
      assert.equal(fields.query, query);
      assert.equal(Number(fields.events), EVENTS);
      assert.equal(Number(fields.output), expected);
      assert.equal(Number(fields.rounds), ROUNDS);
      for (
        const name of ["eps", "eps_per_core", "baseline_eps", "baseline_eps_per_core", "ratio"]
      ) {
        assert.ok(Number(fields[name]) > 0, `${query}: ${name}=${fields[name]} is not positive`);
      }
    });
  }
});

Deno.test("the harness checks the keyed queries' counts (dedup, the joins q3, q20 and q8, the updating q4 and q6) exactly at parallelism 2", async (t) => {
  for (const query of ["dedup", "q3", "q20", "q8", "q4", "q6"] as const) {
    await t.step(query, async () => {
      const r = await runQuery({ query, events: EVENTS, rounds: 1, parallelism: 2, log: () => {} });
      assert.equal(r.count, runBaseline(query, { events: EVENTS }).count);
    });
  }
});

Deno.test("runQuery rejects a round count that is not a positive integer", async () => {
  await assert.rejects(
    runQuery({ query: "q0", events: EVENTS, rounds: 0, log: () => {} }),
    { name: "RangeError", message: /'rounds' must be a positive integer: current value is 0/ },
  );
});
