import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { InProcessBus } from "../actor/in_process.ts";
import type { JobEdge } from "../graph/job_graph.ts";
import { assignToKeyGroup } from "../state/key_group.ts";
import { dispatchBuffer } from "./buffer_dispatch.ts";
import { taskSubject } from "./messages.ts";
import type { ReceivedBufferMessage } from "./messages.ts";
import { decodeInbound } from "./network_input.ts";
import { RecordWriter } from "./record_writer.ts";
import { SequenceSource, StreamExecutionEnvironment, WatermarkStrategy } from "../../mod.ts";

type Call = [value: unknown, ts: number | undefined, keyGroup: number | undefined, key: unknown];

function recorder(): { calls: Call[]; processElement: (...a: Call) => void } {
  const calls: Call[] = [];
  return { calls, processElement: (v, ts, kg, key) => void calls.push([v, ts, kg, key]) };
}

Deno.test("dispatchBuffer() passes key groups and keys only to a head keyed by the edge's selector", () => {
  const buffer = { v: ["a", "b"], ts: [5, null], kg: [3, 4], k: ["A", undefined] };
  const keyed = recorder();
  dispatchBuffer(keyed, buffer, true);
  assert.deepEqual(keyed.calls, [["a", 5, 3, "A"], ["b", undefined, 4, undefined]]);
  const other = recorder();
  dispatchBuffer(other, buffer, false);
  assert.deepEqual(other.calls, [["a", 5, undefined, undefined], [
    "b",
    undefined,
    undefined,
    undefined,
  ]]);
  const decoded = recorder(); // an encoded buffer: key groups, no keys, no timestamps
  dispatchBuffer(decoded, { v: ["a"], ts: undefined, kg: new Uint16Array([9]) }, true);
  assert.deepEqual(decoded.calls, [["a", undefined, 9, undefined]]);
});

Deno.test("dispatchBuffer() stops at the record whose processing throws", () => {
  const seen: unknown[] = [];
  const head = {
    processElement(v: unknown) {
      if (v === "bad") throw new Error("user code failed on 'bad'");
      seen.push(v);
    },
  };
  assert.throws(
    () => dispatchBuffer(head, { v: ["a", "bad", "c"], ts: undefined }, false),
    /user code failed on 'bad'/,
  );
  assert.deepEqual(seen, ["a"]);
});

/** One hash-partitioning writer (key `[r.k, "x"]`) into one consumer subtask, on one bus. */
async function hashChannel(objectReuse: boolean) {
  const bus = new InProcessBus();
  const transport = await bus.connect();
  const edge: JobEdge = {
    index: 0,
    source: 0,
    sourceOperator: 0,
    target: 1,
    partitioner: "hash",
    keySelector: (r) => [(r as { k: string }).k, "x"],
    sideOutput: undefined,
  };
  const buffers: ReceivedBufferMessage[] = [];
  transport.subscribe(taskSubject("job-kd", 0, "v1", 0), (m) => {
    const msg = decodeInbound(m);
    if (msg.t === "buf") buffers.push(msg);
  });
  const writer = new RecordWriter({
    jobId: "job-kd",
    attempt: 0,
    edge,
    producerIndex: 0,
    producerParallelism: 1,
    consumerVertexId: "v1",
    consumerParallelism: 1,
    consumerMaxParallelism: 128,
    transport,
    bufferSize: 100,
    objectReuse,
    now: () => 0,
  });
  writer.addCredit(0, 10);
  return { writer, buffers, close: () => transport.close() };
}

Deno.test("an in-thread hash edge hands each record's key over, but none for a record it copied", async () => {
  const ch = await hashChannel(true);
  try {
    const sent = [{ k: "a" }, { k: "b\uD800" }, { k: "c" }];
    sent.forEach((r, i) => ch.writer.emit(r, i === 1 ? 7 : undefined));
    ch.writer.flush();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ch.buffers.length, 1);
    const [buf] = ch.buffers;
    assert.equal(buf!.v[0], sent[0], "the record was handed over as it is");
    assert.deepEqual(buf!.k, [["a", "x"], undefined, ["c", "x"]]);
    assert.deepEqual(buf!.ts, [null, 7, null]);
    assert.deepEqual(
      [...buf!.kg!],
      [["a", "x"], ["b\uFFFD", "x"], ["c", "x"]].map((k) => assignToKeyGroup(k, 128)),
    );
  } finally {
    await ch.close();
  }
});

Deno.test("an encoded hash edge carries key groups but no keys", async () => {
  const ch = await hashChannel(false);
  try {
    ch.writer.emit({ k: "a" }, undefined);
    ch.writer.flush();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(ch.buffers.length, 1);
    assert.equal(ch.buffers[0]!.k, undefined);
    assert.deepEqual([...ch.buffers[0]!.kg!], [assignToKeyGroup(["a", "x"], 128)]);
  } finally {
    await ch.close();
  }
});

/** A keyed running count over a tuple key; how often the key selector ran. */
async function countByTupleKey(objectReuse: boolean): Promise<{ calls: number; out: string[] }> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  if (!objectReuse) env.disableObjectReuse();
  let calls = 0;
  const last = new Map<string, number>();
  env.fromSource(new SequenceSource(0, 999), WatermarkStrategy.noWatermarks(), "numbers")
    .uid("numbers")
    .map((n: number): [number, string, number] => [n % 7, n % 2 === 0 ? "even" : "odd", 1])
    .keyBy((r) => {
      calls++;
      return [r[0], r[1]];
    })
    .reduce((a, b) => [a[0], a[1], a[2] + b[2]])
    .uid("count")
    .sinkTo({
      kind: "simple",
      invoke: ([m, parity, c]: [number, string, number]) => void last.set(`${m}/${parity}`, c),
    });
  await env.execute("tuple-key-count");
  return { calls, out: [...last].map(([k, c]) => `${k}=${c}`).sort() };
}

Deno.test("a keyed operator behind an in-thread keyBy edge uses the producer's key instead of selecting it again", async () => {
  const expected = new Map<string, number>();
  for (let n = 0; n < 1000; n++) {
    const k = `${n % 7}/${n % 2 === 0 ? "even" : "odd"}`;
    expected.set(k, (expected.get(k) ?? 0) + 1);
  }
  const want = [...expected].map(([k, c]) => `${k}=${c}`).sort();
  const inThread = await countByTupleKey(true);
  assert.deepEqual(inThread.out, want);
  assert.equal(inThread.calls, 1000, "the key selector ran once per record");
  const encoded = await countByTupleKey(false);
  assert.deepEqual(encoded.out, want);
  assert.equal(encoded.calls, 2000, "an encoded edge selects the key on both sides");
});
