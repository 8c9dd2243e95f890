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
