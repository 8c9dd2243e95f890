/**
 * A process for the SIGKILL test (`xa_sink_kill_test.ts`): writes rows
 * 0..9 through the XA sink and prepares them for checkpoint 1, rows 10..19
 * for checkpoint 2, then sends rows 20..29 into an open transaction, prints
 * both committables as one JSON line and waits to be killed.
 *
 * Run: `deno run -A connectors/mariadb/_crash_writer.ts <table> <prefix> <commitLogTable>`.
 *
 * @module
 */

import { TEST_CONNECTION, writerContext } from "./_test_kit.ts";
import { mariaDbXaSink } from "./xa_sink.ts";

const [table, prefix, commitLogTable] = Deno.args;
if (table === undefined || prefix === undefined || commitLogTable === undefined) {
  throw new TypeError(
    `usage: _crash_writer.ts <table> <prefix> <commitLogTable>: got ${Deno.args}`,
  );
}
const sink = mariaDbXaSink<number>({
  connection: TEST_CONNECTION,
  sql: `INSERT INTO \`${table}\` (id) VALUES (?)`,
  parameters: (id) => [id],
  batchSize: 4,
  xidPrefix: prefix,
  commitLogTable,
});
const writer = await sink.createWriter(writerContext({ uid: "kill" }));
const ctx = { timestamp: undefined };
const committables = [];
for (const [checkpoint, from] of [[1, 0], [2, 10]] as const) {
  for (let id = from; id < from + 10; id++) await writer.write(id, ctx);
  committables.push(...await writer.prepareCommit!(checkpoint));
}
for (let id = 20; id < 30; id++) await writer.write(id, ctx);
await writer.flush(false);
console.log(JSON.stringify(committables));
setInterval(() => {}, 1 << 30); // alive until SIGKILL
