import assert from "node:assert/strict";
import { runSqlQuery } from "./sql_run.ts";

Deno.test("runSqlQuery refuses a query without a DataStream version, and bad counts", async () => {
  await assert.rejects(runSqlQuery({ query: "q9", events: 1000, log: () => {} }), {
    name: "RangeError",
    message: /q9 has no DataStream version/,
  });
  await assert.rejects(runSqlQuery({ query: "q0", events: 0, log: () => {} }), {
    name: "RangeError",
    message: /'events' must be a positive integer: current value is 0/,
  });
});

Deno.test("runSqlQuery checks the SQL's rows and checksum against the DataStream version's in every round, at parallelism 2", async (t) => {
  for (const query of ["q2", "q4", "q5"] as const) {
    await t.step(query, async () => {
      const lines: string[] = [];
      const r = await runSqlQuery({
        query,
        events: 10_000,
        rounds: 2,
        parallelism: 2,
        check: true,
        log: (l) => lines.push(l),
      });
      assert.equal(lines.length, 4); // sql, datastream, sql, datastream
      assert.match(lines[0]!, / round 1\/2 sql: rows \d+/);
      assert.match(lines[1]!, / round 1\/2 datastream: rows \d+/);
      assert.ok(r.count > 0, `${query}: no rows`);
      assert.ok(r.ratio > 0);
    });
  }
});
