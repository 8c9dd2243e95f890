import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { InProcessBus } from "../actor/in_process.ts";
import { decodeInbound } from "./network_input.ts";
import { taskSubject } from "./messages.ts";
import { assignToKeyGroup, type Key } from "../state/key_group.ts";
import { KEY_GROUP_MEMO_SIZE, RecordWriter } from "./record_writer.ts";

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

Deno.test("a hash-partitioning RecordWriter gives every key the key group assignToKeyGroup gives, also past its key-group memo's size", async () => {
  const maxParallelism = 128;
  const bus = new InProcessBus();
  const transport = await bus.connect();
  const keyGroups: number[] = [];
  transport.subscribe(taskSubject("job-memo", 0, "v1", 0), (m) => {
    const msg = decodeInbound(m);
    if (msg.t === "buf") { for (const kg of msg.kg!) keyGroups.push(kg); }
  });
  const writer = new RecordWriter({
    jobId: "job-memo",
    attempt: 0,
    edge: {
      index: 0,
      source: 0,
      sourceOperator: 0,
      target: 1,
      partitioner: "hash",
      keySelector: (r) => (r as { key: Key }).key,
      sideOutput: undefined,
    },
    producerIndex: 0,
    producerParallelism: 1,
    consumerVertexId: "v1",
    consumerParallelism: 1,
    consumerMaxParallelism: maxParallelism,
    transport,
    bufferSize: 1 << 20,
    now: () => 0,
  });
  writer.addCredit(0, 10);
  const keys: Key[] = [
    0,
    -0,
    1,
    16383,
    16384,
    -1,
    0.5,
    NaN,
    Infinity,
    2 ** 40,
    "a",
    "",
    "\ud800x",
    "\u0000t",
    true,
    false,
    7n,
    ["a", 1],
    [-0],
  ];
  // Distinct number and string keys past the memo's size, twice over, so
  // the second pass reads keys the memo dropped and keys it kept.
  for (let i = 0; i < KEY_GROUP_MEMO_SIZE + 1000; i++) keys.push(`k${i}`, i * 3);
  const all = keys.concat(keys);
  for (const key of all) writer.emit({ key }, undefined);
  writer.flush();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(keyGroups.length, all.length);
  all.forEach((key, i) => {
    const expected = assignToKeyGroup(key, maxParallelism);
    if (keyGroups[i] !== expected) {
      assert.fail(`key ${String(key)} (#${i}) got key group ${keyGroups[i]}, expected ${expected}`);
    }
  });
  await transport.close();
});
