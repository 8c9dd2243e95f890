import assert from "node:assert/strict";
import { parseResultFields, resultLine } from "../_result.ts";
import { runBaseline } from "../nexmark/baseline.ts";
import { runLoop } from "./loop.ts";
import {
  IMPLEMENTATIONS,
  type PeerQueryResult,
  peerResultFields,
  peersTable,
  runPeerQuery,
} from "./main.ts";
import { mix, PEER_QUERY_NAMES } from "./records.ts";

// A smoke run of the side-by-side: tiny sizes. No figure is asserted beyond
// being positive (no timing in tests); every implementation's count and
// checksum are checked against the loop's inside runPeerQuery, which throws.
const EVENTS = 3000;

Deno.test("the side-by-side runs every implementation of every query and prints figures that parse", async (t) => {
  const results: PeerQueryResult[] = [];
  for (const query of PEER_QUERY_NAMES) {
    await t.step(query, async () => {
      const lines: string[] = [];
      const r = await runPeerQuery({ query, events: EVENTS, rounds: 1, log: (l) => lines.push(l) });
      results.push(r);
      assert.equal(lines.length, IMPLEMENTATIONS.length);
      assert.ok(r.output > 0, `${query}: no output for ${EVENTS} events`);
      const fields = parseResultFields(resultLine(peerResultFields(r)));
      assert.equal(fields.query, query);
      assert.equal(Number(fields.output), r.output);
      for (const name of ["weir_ratio", "most_ratio", "rxjs_ratio", "node_stream_ratio"]) {
        assert.ok(Number(fields[name]) > 0, `${query}: ${name}=${fields[name]} is not positive`);
      }
    });
  }
  assert.match(peersTable(results), /^\| query \| loop /);
});

Deno.test("the side-by-side's loops count what the Nexmark baselines count", () => {
  for (const query of ["q1", "q2", "q3", "dedup"] as const) {
    assert.equal(runLoop(query, EVENTS).count, runBaseline(query, { events: EVENTS }).count, query);
  }
  // Every bid gives one row of the keyed count, as q1 converts every bid.
  assert.equal(runLoop("count", EVENTS).count, runLoop("q1", EVENTS).count);
});

Deno.test("the row hash tells apart rows that differ in one field", () => {
  assert.notEqual(mix(1, 2), mix(2, 1));
  assert.notEqual(mix(1000, 1), mix(1000, 2));
});

Deno.test("runPeerQuery rejects an event count that is not a positive integer", async () => {
  await assert.rejects(
    runPeerQuery({ query: "q1", events: 0, log: () => {} }),
    { name: "RangeError", message: /'events' must be a positive integer: current value is 0/ },
  );
});
