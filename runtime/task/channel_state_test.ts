import assert from "node:assert/strict";
import type { Transport } from "../actor/types.ts";
import type { JobEdge, JobGraph } from "../graph/job_graph.ts";
import type { CheckpointMetadata } from "../checkpoint/types.ts";
import type { StateHandle, StateWriter } from "../checkpoint/snapshot_contract.ts";
import { InputGate } from "./input_gate.ts";
import { RecordWriter } from "./record_writer.ts";
import type { ChannelEvent, EventMessage, ReceivedBufferMessage } from "./messages.ts";
import {
  ChannelStateRescaleError,
  channelStateSnapshot,
  decodeChannelState,
  encodeChannelState,
  readChannelState,
} from "./channel_state.ts";

const JOB = "channel-state-test";

function vertex(index: number, parallelism: number, inputs: number[], outputs: number[]) {
  return {
    index,
    id: `v${index}`,
    name: `vertex ${index}`,
    parallelism,
    maxParallelism: 128,
    operators: [{ uid: `op${index}` }] as unknown as JobGraph["vertices"][number]["operators"],
    inputs,
    outputs,
    isSource: inputs.length === 0,
  };
}

/** v0 (2 subtasks) --rebalance--> v1 (1 subtask): the consumer's gate has 2 channels. */
function graph(producers = 2): JobGraph {
  const edge: JobEdge = {
    index: 0,
    source: 0,
    sourceOperator: 0,
    target: 1,
    partitioner: "rebalance",
    keySelector: undefined,
    sideOutput: undefined,
  };
  return {
    name: JOB,
    vertices: [vertex(0, producers, [], [0]), vertex(1, 1, [0], [])],
    edges: [edge],
    warnings: [],
  };
}

/** A transport that keeps what is published (credits, buffers, events) as values. */
function recordingTransport(): Transport & { sent: unknown[] } {
  const sent: unknown[] = [];
  return {
    sent,
    maxPayload: 1 << 20,
    publish: (_subject: string, data: Uint8Array) => void sent.push(data),
    publishValue: (_subject: string, value: unknown) => (sent.push(value), true),
  } as unknown as Transport & { sent: unknown[] };
}

function gate(priorityBarriers: boolean): InputGate {
  return new InputGate({
    jobId: JOB,
    attempt: 0,
    graph: graph(),
    vertex: 1,
    subtask: 0,
    transport: recordingTransport(),
    initialCredits: 4,
    priorityBarriers,
  });
}

const seqs = [0, 0];
function buf(src: number, v: unknown[]): ReceivedBufferMessage {
  return { t: "buf", job: JOB, att: 0, edge: 0, src, seq: seqs[src]!++, v, ts: undefined };
}
function evt(src: number, e: ChannelEvent): EventMessage {
  return { t: "evt", job: JOB, att: 0, edge: 0, src, seq: seqs[src]!++, e };
}
function barrier(src: number, id: number): EventMessage {
  return evt(src, { k: "barrier", id, ts: 0, type: "checkpoint" });
}

function pollAll(g: InputGate): unknown[] {
  const out: unknown[] = [];
  for (let item = g.poll(); item; item = g.poll()) {
    const m = item.message;
    out.push(
      m.t === "buf" ? m.v : m.e.k === "barrier" ? `barrier ${m.e.id}@${item.channel.index}` : m.e.k,
    );
    if (m.t === "buf") g.consumed(item.channel);
  }
  return out;
}

Deno.test("a priority barrier overtakes the data queued before it, and that data is recorded", async () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(true);
  assert.ok(g.receive(buf(0, ["a"])));
  assert.ok(g.receive(buf(1, ["x"])));
  assert.ok(g.receive(buf(0, ["b"])));
  assert.ok(g.receive(barrier(0, 1)));
  assert.ok(g.receive(buf(0, ["after"])));
  const first = g.poll()!;
  assert.equal(
    first.message.t === "evt" && first.message.e.k,
    "barrier",
    "the barrier comes first",
  );
  // The handler triggers unaligned with channel 1 pending.
  const recorder = g.startChannelStateRecording(1, [1]);
  assert.ok(g.receive(evt(1, { k: "wm", wm: 5 })));
  assert.ok(g.receive(buf(1, ["y"])));
  assert.ok(g.receive(barrier(1, 1)));
  assert.ok(g.receive(buf(1, ["z"])), "after the barrier: not recorded");
  const captures = await recorder.done;
  assert.deepEqual(
    captures?.map((c) => [c.producer, c.items.map((m) => m.t === "buf" ? m.v : m.e.k)]),
    [[0, [["a"], ["b"]]], [1, [["x"], "wm", ["y"]]]],
  );
  // Everything is still processed, the second barrier ahead of the data.
  assert.deepEqual(pollAll(g), ["barrier 1@1", ["a"], ["x"], ["b"], "wm", ["after"], ["y"], ["z"]]);
});

Deno.test("a barrier that arrived out of order before the trigger bounds what is recorded of its channel", async () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(true);
  g.receive(buf(0, ["a"]));
  g.receive(barrier(0, 1));
  g.receive(buf(1, ["x"]));
  g.receive(barrier(1, 1));
  g.receive(buf(1, ["after"]));
  g.poll(); // barrier of channel 0: the trigger; channel 1's barrier is already in
  const recorder = g.startChannelStateRecording(1, [1]);
  const captures = await recorder.done;
  assert.deepEqual(captures?.map((c) => c.items.map((m) => m.t === "buf" && m.v)), [[["a"]], [[
    "x",
  ]]]);
});

Deno.test("switching from aligned takes the queued barrier out of order and records up to it", async () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(false);
  g.receive(barrier(0, 2));
  g.receive(buf(1, ["x"]));
  g.receive(barrier(1, 2));
  g.receive(buf(1, ["after"]));
  assert.equal(g.poll()!.channel.index, 0);
  g.channels[0]!.blocked = true; // aligning
  const recorder = g.startChannelStateRecording(2, [1]);
  g.unblockAll();
  const captures = await recorder.done;
  assert.deepEqual(captures?.map((c) => c.items.map((m) => m.t === "buf" && m.v)), [[["x"]]]);
  assert.deepEqual(pollAll(g), ["barrier 2@1", ["x"], ["after"]]);
});

Deno.test("a savepoint barrier and a barrier behind end of data keep their place", () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(true);
  g.receive(buf(0, ["a"]));
  g.receive(evt(0, { k: "barrier", id: 1, ts: 0, type: "savepoint" }));
  g.receive(buf(1, ["x"]));
  g.receive(evt(1, { k: "eod" }));
  g.receive(barrier(1, 2));
  assert.deepEqual(pollAll(g), [["a"], ["x"], "barrier 1@0", "eod", "barrier 2@1"]);
});

Deno.test("a discarded recording resolves without captures", async () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(true);
  const recorder = g.startChannelStateRecording(3, [0, 1]);
  g.receive(buf(0, ["a"]));
  g.discardChannelStateRecording(3);
  assert.equal(await recorder.done, undefined);
  const written: string[] = [];
  const writer = {
    checkpointId: 3,
    type: "checkpoint",
    cancelled: false,
    writePrivate: (name: string) => (written.push(name), Promise.resolve({} as StateHandle)),
    writeShared: () => Promise.reject(new Error("no shared")),
  } as StateWriter;
  assert.deepEqual(await channelStateSnapshot(recorder, []).write(writer), []);
  assert.deepEqual(written, []);
});

Deno.test("recovered input is handed out first and returns no credit", () => {
  seqs[0] = seqs[1] = 0;
  const transport = recordingTransport();
  const g = new InputGate({
    jobId: JOB,
    attempt: 0,
    graph: graph(),
    vertex: 1,
    subtask: 0,
    transport,
    initialCredits: 2,
  });
  g.receive(buf(0, ["new"]));
  g.recover(0, 0, [{ kind: "buf", v: ["old1"], ts: undefined, kg: undefined }, {
    kind: "evt",
    e: { k: "wm", wm: 3 },
  }, { kind: "buf", v: ["old2"], ts: undefined, kg: undefined }]);
  assert.deepEqual(pollAll(g), [["old1"], "wm", ["old2"], ["new"]]);
  // Credit batch 1 (2 initial credits): only the new buffer returns one.
  assert.deepEqual(transport.sent.map((m) => (m as { n: number }).n), [1]);
  assert.throws(() => g.recover(0, 5, []), /input edge 0 from producer 5/);
});

Deno.test("a writer's barrier overtakes its unsent buffers, which it returns as output channel state", () => {
  const transport = recordingTransport();
  const g = graph(1);
  const writer = new RecordWriter({
    jobId: JOB,
    attempt: 0,
    edge: g.edges[0]!,
    producerIndex: 0,
    producerParallelism: 1,
    consumerVertexId: "v1",
    consumerParallelism: 1,
    consumerMaxParallelism: 128,
    transport,
    bufferSize: 2,
    now: () => 0,
  });
  for (const r of ["a", "b", "c"]) writer.emit(r, undefined); // one full buffer, one open; no credit
  const captures = writer.overtakeWithEvent({ k: "barrier", id: 1, ts: 0, type: "checkpoint" });
  assert.deepEqual(
    captures.map((c) => c.items.map((i) => i.kind === "vals" ? i.v : i.kind)),
    [[["a", "b"], ["c"]]],
  );
  const seqOf = (m: unknown) => (m as { seq: number; t: string }).seq;
  assert.deepEqual(
    transport.sent.map((m) => (m as { t: string }).t),
    ["evt"],
    "the barrier left without credit",
  );
  assert.equal(seqOf(transport.sent[0]), 0);
  writer.addCredit(0, 5);
  assert.deepEqual(
    transport.sent.map(seqOf),
    [0, 1, 2],
    "the overtaken buffers follow, numbered after it",
  );
  writer.restoreOutput(0, [{ kind: "evt", e: { k: "wm", wm: 1 } }]);
  assert.throws(() => writer.restoreOutput(3, []), /consumer subtask 3/);
  writer.broadcastEvent({ k: "eod" });
  assert.deepEqual(
    writer.overtakeWithEvent({ k: "barrier", id: 2, ts: 0, type: "checkpoint" }),
    [],
  );
});

Deno.test("channel state round-trips through its blob format and names a damaged blob", () => {
  const bytes = encodeChannelState({
    inputs: [{
      edge: 0,
      producer: 1,
      items: [
        {
          t: "buf",
          job: JOB,
          att: 0,
          edge: 0,
          src: 1,
          seq: 0,
          v: [{ k: 1 }],
          ts: [7],
          kg: new Uint16Array([9]),
        },
        { t: "evt", job: JOB, att: 0, edge: 0, src: 1, seq: 1, e: { k: "status", s: "idle" } },
      ],
    }],
    outputs: [{
      edge: 2,
      consumer: 0,
      items: [{ kind: "vals", v: ["x", "y"], ts: undefined, kg: undefined, k: ["x", "y"] }],
    }],
  });
  const back = decodeChannelState(bytes, "chk-1/x.channel");
  assert.deepEqual(back.inputs, [{
    edge: 0,
    producer: 1,
    items: [
      { kind: "buf", v: [{ k: 1 }], ts: [7], kg: new Uint16Array([9]) },
      { kind: "evt", e: { k: "status", s: "idle" } },
    ],
  }]);
  assert.equal(back.outputs[0]?.items[0]?.kind, "buf");
  assert.throws(
    () =>
      decodeChannelState(
        encodeChannelState({ inputs: [], outputs: [] }).subarray(0, 3),
        "chk-1/y.channel",
      ),
  );
});

Deno.test("channel state is not restored at another parallelism", async () => {
  const handle: StateHandle = {
    path: "chk-4/v1-0-a0.channel",
    bytes: 1,
    kind: "channel",
    shared: false,
    uid: "",
  };
  const meta = {
    version: 2,
    jobId: JOB,
    jobName: JOB,
    checkpointId: 4,
    kind: "checkpoint",
    triggeredAt: 0,
    completedAt: 0,
    attempt: 0,
    vertices: [
      { vertexId: "v0", operatorUids: ["op0"], parallelism: 3, maxParallelism: 128, subtasks: [] },
      {
        vertexId: "v1",
        operatorUids: ["op1"],
        parallelism: 1,
        maxParallelism: 128,
        subtasks: [{ subtask: 0, handles: [handle], stateUids: [] }],
      },
    ],
  } as unknown as CheckpointMetadata;
  const g = graph(2);
  await assert.rejects(
    () =>
      readChannelState({
        meta,
        read: () => Promise.resolve(encodeChannelState({ inputs: [], outputs: [] })),
        graph: g,
        vertex: g.vertices[1]!,
        subtask: 0,
      }),
    (e) =>
      e instanceof ChannelStateRescaleError &&
      /vertex v0 .* parallelism 3 then, 2 now/.test(e.message) &&
      /unalignedCheckpoints: false/.test(e.message),
  );
  const same = graph(3);
  const state = await readChannelState({
    meta,
    read: () =>
      Promise.resolve(
        encodeChannelState({ inputs: [{ edge: 0, producer: 2, items: [] }], outputs: [] }),
      ),
    graph: same,
    vertex: same.vertices[1]!,
    subtask: 0,
  });
  assert.deepEqual(state.inputs, [{ edge: 0, producer: 2, items: [] }]);
});

Deno.test("the data the triggering barrier overtook on its own channel is recorded", async () => {
  seqs[0] = seqs[1] = 0;
  const g = gate(true);
  g.receive(buf(0, ["a"]));
  g.receive(buf(0, ["b"]));
  g.receive(barrier(0, 1));
  g.receive(buf(0, ["after"]));
  g.poll(); // the barrier of channel 0 triggers; channel 1 is pending
  const recorder = g.startChannelStateRecording(1, [1]);
  g.receive(buf(1, ["x"]));
  g.receive(barrier(1, 1));
  const captures = await recorder.done;
  assert.deepEqual(
    captures?.map((c) => [c.producer, c.items.map((m) => m.t === "buf" && m.v)]),
    [[0, [["a"], ["b"]]], [1, [["x"]]]],
  );
});
