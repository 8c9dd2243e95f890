/**
 * The in-thread path of the data plane (DESIGN.md §15): a RecordWriter on a
 * transport with `publishValue` hands its buffers to the consumer's
 * InputGate as objects, with the same sequence numbers, credits and in-band
 * order as encoded buffers. Driven here without a job: one producer
 * subtask's writer and the consumer subtasks' gates, on one in-process bus.
 *
 * @module
 */

import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { InProcessBus } from "../actor/in_process.ts";
import type { Transport } from "../actor/types.ts";
import { waitUntil } from "../../tests/_wait.ts";
import type { JobEdge, JobGraph } from "../graph/job_graph.ts";
import type { Partitioner } from "../graph/stream_graph.ts";
import { assignToKeyGroup } from "../state/key_group.ts";
import { InputGate } from "./input_gate.ts";
import type { EventMessage, ReceivedBufferMessage } from "./messages.ts";
import { taskSubject } from "./messages.ts";
import { decodeInbound } from "./network_input.ts";
import { RecordWriter } from "./record_writer.ts";

const JOB = "in-thread-test";
const MAX_PARALLELISM = 128;

interface Rec {
  readonly key: string;
  readonly n: number;
}

/** A producer subtask (v0#0) and `consumers` consumer subtasks of v1, wired on one bus. */
function channel(options: {
  partitioner: Partitioner;
  consumers: number;
  bufferSize: number;
  credits: number;
  transport?: (bus: InProcessBus) => Transport;
}) {
  const bus = new InProcessBus();
  const connect = options.transport ?? ((b: InProcessBus) => b.connect());
  const edge: JobEdge = {
    index: 0,
    source: 0,
    sourceOperator: 0,
    target: 1,
    partitioner: options.partitioner,
    keySelector: options.partitioner === "hash" ? (r) => (r as Rec).key : undefined,
    sideOutput: undefined,
  };
  const graph: JobGraph = {
    name: JOB,
    vertices: [
      vertex(0, 1, [], [0], true),
      vertex(1, options.consumers, [0], [], false),
    ],
    edges: [edge],
    warnings: [],
  };
  const producer = connect(bus);
  const writer = new RecordWriter({
    jobId: JOB,
    attempt: 0,
    edge,
    producerIndex: 0,
    producerParallelism: 1,
    consumerVertexId: "v1",
    consumerParallelism: options.consumers,
    consumerMaxParallelism: MAX_PARALLELISM,
    transport: producer,
    bufferSize: options.bufferSize,
    now: () => 0,
  });
  const errors: unknown[] = [];
  producer.subscribe(taskSubject(JOB, 0, "v0", 0), (m) => {
    const msg = decodeInbound(m);
    if (msg.t === "credit") writer.addCredit(msg.dst, msg.n);
  });
  const transports: Transport[] = [producer];
  const gates: InputGate[] = [];
  for (let c = 0; c < options.consumers; c++) {
    const transport = connect(bus);
    transports.push(transport);
    const gate = new InputGate({
      jobId: JOB,
      attempt: 0,
      graph,
      vertex: 1,
      subtask: c,
      transport,
      initialCredits: options.credits,
    });
    transport.subscribe(taskSubject(JOB, 0, "v1", c), (m) => {
      try {
        const msg = decodeInbound(m);
        if (msg.t !== "buf" && msg.t !== "evt") return;
        if (!gate.receive(msg)) errors.push(gate.error);
      } catch (error) {
        errors.push(error);
      }
    });
    gates.push(gate);
  }
  return {
    bus,
    writer,
    gates,
    errors,
    close: () => Promise.all(transports.map((t) => t.close())),
  };
}

function vertex(
  index: number,
  parallelism: number,
  inputs: number[],
  outputs: number[],
  isSource: boolean,
) {
  return {
    index,
    id: `v${index}`,
    name: `vertex ${index}`,
    parallelism,
    maxParallelism: MAX_PARALLELISM,
    operators: [],
    inputs,
    outputs,
    isSource,
  };
}

/** Everything the gate holds now, in the order it hands it out, each buffer consumed. */
function drain(gate: InputGate): (ReceivedBufferMessage | EventMessage)[] {
  const out: (ReceivedBufferMessage | EventMessage)[] = [];
  for (let item = gate.poll(); item !== undefined; item = gate.poll()) {
    out.push(item.message);
    if (item.message.t === "buf") gate.consumed(item.channel);
  }
  return out;
}

Deno.test("an in-thread keyBy channel hands the collected objects over, unencoded, with the barrier between them", async () => {
  const ch = channel({ partitioner: "hash", consumers: 2, bufferSize: 4, credits: 8 });
  try {
    for (const gate of ch.gates) gate.grantInitialCredits();
    assert.equal(ch.writer.inThread, true);
    const sent: Rec[] = Array.from({ length: 30 }, (_, n) => ({ key: `k${n % 7}`, n }));
    for (const r of sent.slice(0, 20)) ch.writer.emit(r, r.n * 10);
    ch.writer.broadcastEvent({ k: "barrier", type: "checkpoint", id: 1, ts: 123 });
    for (const r of sent.slice(20)) ch.writer.emit(r, undefined);
    ch.writer.flush();
    const seen = ch.gates.map(() => [] as (ReceivedBufferMessage | EventMessage)[]);
    const received = () => seen.flat().filter((m) => m.t === "buf").flatMap((m) => m.v).length;
    await waitUntil(() => {
      ch.gates.forEach((gate, i) => seen[i]!.push(...drain(gate)));
      return received() === sent.length;
    }, { timeoutMs: 5_000, pollMs: 1, missing: () => `${received()} of 30 records arrived` });
    assert.deepEqual(ch.errors, []);
    for (const [consumer, messages] of seen.entries()) {
      const barrierAt = messages.findIndex((m) => m.t === "evt");
      assert.ok(barrierAt >= 0, `consumer ${consumer} got no barrier`);
      const before = messages.slice(0, barrierAt).flatMap((m) => m.t === "buf" ? m.v : []);
      const after = messages.slice(barrierAt + 1).flatMap((m) => m.t === "buf" ? m.v : []);
      // The records ahead of the barrier are exactly those emitted before it.
      assert.ok(
        before.every((r) => (r as Rec).n < 20),
        `consumer ${consumer}: a later record passed the barrier`,
      );
      assert.ok(
        after.every((r) => (r as Rec).n >= 20),
        `consumer ${consumer}: an earlier record fell behind the barrier`,
      );
      for (const m of messages) {
        if (m.t !== "buf") continue;
        for (let i = 0; i < m.v.length; i++) {
          const r = m.v[i] as Rec;
          assert.equal(r, sent[r.n], "the record was copied, not handed over");
          assert.equal(m.kg![i], assignToKeyGroup(r.key, MAX_PARALLELISM));
          assert.equal(m.ts?.[i] ?? null, r.n < 20 ? r.n * 10 : null);
        }
      }
    }
  } finally {
    await ch.close();
  }
});

Deno.test("a lost in-thread buffer is detected by the consumer as a gap", async () => {
  const ch = channel({ partitioner: "rebalance", consumers: 1, bufferSize: 2, credits: 8 });
  try {
    ch.bus.setDropFilter((_subject, _data, value) => {
      const m = value as { t?: string; seq?: number } | undefined;
      return m?.t === "buf" && m.seq === 1;
    });
    ch.gates[0]!.grantInitialCredits();
    for (let n = 0; n < 6; n++) ch.writer.emit({ key: "a", n }, undefined);
    await waitUntil(() => ch.errors.length > 0, {
      timeoutMs: 5_000,
      pollMs: 1,
      missing: () => "no sequence error was reported",
    });
    assert.match(
      String(ch.errors[0]),
      /ChannelSequenceError: Sequence error on channel 0 \(edge 0 from v0#0\) into v1#0, attempt 0: expected 1, got 2 \(gap: messages were lost\)/,
    );
  } finally {
    await ch.close();
  }
});

Deno.test("credits bound the buffers in flight on an in-thread channel", async () => {
  const credits = 2;
  const bufferSize = 4;
  const ch = channel({ partitioner: "rebalance", consumers: 1, bufferSize, credits });
  try {
    const gate = ch.gates[0]!;
    gate.grantInitialCredits();
    for (let n = 0; n < 40; n++) ch.writer.emit({ key: "a", n }, undefined);
    await waitUntil(() => gate.queued === credits, {
      timeoutMs: 5_000,
      pollMs: 1,
      missing: () => `${gate.queued} buffers arrived, ${credits} expected`,
    });
    // Nothing consumed: the rest waits at the producer. The bus delivers
    // what is queued within one turn; give it several.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(gate.queued, credits, "the producer sent without credit");
    assert.equal(ch.writer.backlog, 40 / bufferSize - credits);
    assert.equal(
      ch.writer.isAvailable,
      false,
      "a producer with a backlog must report backpressure",
    );
    const got: number[] = [];
    let maxQueued = 0;
    await waitUntil(() => {
      maxQueued = Math.max(maxQueued, gate.queued);
      for (const m of drain(gate)) if (m.t === "buf") got.push(...m.v.map((r) => (r as Rec).n));
      return got.length === 40;
    }, { timeoutMs: 5_000, pollMs: 1, missing: () => `${got.length} of 40 records consumed` });
    assert.ok(maxQueued <= credits, `${maxQueued} buffers were queued at the consumer`);
    assert.deepEqual(got, Array.from({ length: 40 }, (_, n) => n));
    assert.equal(ch.writer.isAvailable, true);
    assert.deepEqual(ch.errors, []);
  } finally {
    await ch.close();
  }
});

Deno.test("on a transport without publishValue the writer encodes, and the consumer gets copies", async () => {
  // Hides publishValue, as a transport that crosses threads (NATS) has none.
  const bytesOnly = (bus: InProcessBus): Transport => {
    const t = bus.connect();
    return {
      maxPayload: t.maxPayload,
      publish: (s, d, o) => t.publish(s, d, o),
      subscribe: (s, h) => t.subscribe(s, h),
      request: (s, d, o) => t.request(s, d, o),
      flush: () => t.flush(),
      close: () => t.close(),
    };
  };
  const ch = channel({
    partitioner: "hash",
    consumers: 1,
    bufferSize: 4,
    credits: 4,
    transport: bytesOnly,
  });
  try {
    assert.equal(ch.writer.inThread, false);
    ch.gates[0]!.grantInitialCredits();
    const sent: Rec[] = Array.from({ length: 8 }, (_, n) => ({ key: `k${n}`, n }));
    for (const r of sent) ch.writer.emit(r, undefined);
    const got: unknown[] = [];
    await waitUntil(() => {
      for (const m of drain(ch.gates[0]!)) if (m.t === "buf") got.push(...m.v);
      return got.length === sent.length;
    }, { timeoutMs: 5_000, pollMs: 1, missing: () => `${got.length} of 8 records arrived` });
    assert.deepEqual(got, sent);
    assert.ok(got.every((r, i) => r !== sent[i]), "an encoded record arrived as the same object");
  } finally {
    await ch.close();
  }
});

Deno.test("an in-thread keyBy channel copies only a record whose key has a lone surrogate, as the codec delivers it", async () => {
  const ch = channel({ partitioner: "hash", consumers: 1, bufferSize: 8, credits: 4 });
  try {
    ch.gates[0]!.grantInitialCredits();
    const sent: Rec[] = [{ key: "y\uD800", n: 0 }, { key: "y", n: 1 }, { key: "y\uDC00", n: 2 }];
    for (const r of sent) ch.writer.emit(r, undefined);
    ch.writer.flush();
    const got: Rec[] = [];
    await waitUntil(() => {
      for (const m of drain(ch.gates[0]!)) if (m.t === "buf") got.push(...(m.v as Rec[]));
      return got.length === sent.length;
    }, { timeoutMs: 5_000, pollMs: 1, missing: () => `${got.length} of 3 records arrived` });
    assert.deepEqual(got, [{ key: "y\uFFFD", n: 0 }, { key: "y", n: 1 }, { key: "y\uFFFD", n: 2 }]);
    assert.equal(got[1], sent[1], "a record with a well-formed key was copied");
    assert.notEqual(got[0], sent[0]);
    assert.equal(sent[0]!.key, "y\uD800", "the producer's record was changed");
  } finally {
    await ch.close();
  }
});
