import assert from "node:assert/strict";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import type { Row } from "../runtime/table/row.ts";
import { TEST_NATS_URL } from "../tests/_nats_server.ts";
import { natsResultSink, newResultSubject, receiveResult } from "./_sql_remote_result.ts";

Deno.test({
  name: "a result sink's changes reach the client in order over NATS, then the end",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nc = await connectNats({ servers: TEST_NATS_URL });
    try {
      const subject = newResultSubject();
      assert.match(subject, /^weir\.sql\.result\.[0-9a-f]{32}$/);
      const got: Row[] = [];
      const result = receiveResult(nc, subject, (row) => got.push(row));
      await nc.flush();
      const sink = natsResultSink(subject, { servers: TEST_NATS_URL });
      if (sink.kind !== "simple") throw new Error("a simple sink");
      await sink.open!({} as never);
      const rows: Row[] = Array.from({ length: 50 }, (_, i) => ({
        kind: i % 2 === 0 ? "INSERT" : "UPDATE_AFTER",
        fields: [`k${i}`, i, null],
      }));
      for (const row of rows) sink.invoke(row, {} as never);
      await sink.finish!();
      await sink.close!();
      await result.ended;
      result.stop();
      assert.deepEqual(got, rows);

      const other = newResultSubject();
      const bad = receiveResult(nc, other, () => {});
      await nc.flush();
      nc.publish(other, new TextEncoder().encode('{"neither": 1}'));
      await assert.rejects(bad.ended, /is no result message: \{"neither": 1\}/);
      bad.stop();
    } finally {
      await nc.close();
    }
  },
});
