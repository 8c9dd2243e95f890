import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { InProcessBus } from "../actor/in_process.ts";
import { decodeInbound } from "./network_input.ts";
import { taskSubject } from "./messages.ts";
import { RecordWriter } from "./record_writer.ts";

Deno.test("a RecordWriter sends watermark status changes in order behind the records, and only changes", async () => {
  const bus = new InProcessBus();
  const transport = await bus.connect();
  const seen: string[] = [];
  transport.subscribe(taskSubject("job-1", 0, "v1", 0), (m) => {
    const msg = decodeInbound(m);
    if (msg.t === "buf") seen.push("buf");
    if (msg.t === "evt") seen.push(JSON.stringify(msg.e));
  });
  const writer = new RecordWriter({
    jobId: "job-1",
    attempt: 0,
    edge: {
      index: 0,
      source: 0,
      sourceOperator: 0,
      target: 1,
      partitioner: "forward",
      keySelector: undefined,
      sideOutput: undefined,
    },
    producerIndex: 0,
    producerParallelism: 1,
    consumerVertexId: "v1",
    consumerParallelism: 1,
    consumerMaxParallelism: 128,
    transport,
    bufferSize: 100,
    now: () => 0,
  });
  writer.addCredit(0, 10);
  writer.broadcastEvent({ k: "status", s: "active" }); // already active: not sent
  writer.emit("a", 1);
  writer.broadcastEvent({ k: "status", s: "idle" });
  writer.broadcastEvent({ k: "status", s: "idle" });
  writer.broadcastEvent({ k: "wm", wm: 5 });
  writer.broadcastEvent({ k: "status", s: "active" });
  // The bus delivers in one setImmediate task per round.
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, [
    "buf",
    JSON.stringify({ k: "status", s: "idle" }),
    JSON.stringify({ k: "wm", wm: 5 }),
    JSON.stringify({ k: "status", s: "active" }),
  ]);
  await transport.close();
});
