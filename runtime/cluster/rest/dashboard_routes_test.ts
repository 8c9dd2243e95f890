/**
 * The REST additions the web dashboard reads: the job `plan`, each vertex's
 * `operators`, `attempt`/`numRestarts` in the job overview, `/taskmanagers`
 * and vertex-wide metric ids.
 */

import assert from "node:assert/strict";
import { createRestApp } from "./rest_server.ts";
import { planView } from "./plan_view.ts";
import { NO_WATERMARK } from "./job_views.ts";
import type { JobFacts, RestBackend } from "./job_facts.ts";
import { MetricStore } from "../../metrics/metric_store.ts";
import { CheckpointStatsTracker } from "../../metrics/checkpoint_stats.ts";
import type { JobStatus } from "../cluster_protocol.ts";
import type { JobGraphSummary } from "../../graph/job_graph_summary.ts";

/** A job `j1` (attempt 2 after 2 restarts): source (2) -hash-> counts (1) -forward-> sink (1), and a broadcast side edge. */
const graph: JobGraphSummary = {
  name: "word count",
  fingerprint: "f",
  vertices: [
    {
      id: "v0",
      name: "Source: lines -> split",
      parallelism: 2,
      maxParallelism: 128,
      isSource: true,
      operators: [{ uid: "lines", name: "Source: lines" }, { uid: "split", name: "split" }],
    },
    {
      id: "v1",
      name: "counts",
      parallelism: 1,
      maxParallelism: 128,
      isSource: false,
      operators: [{ uid: "counts", name: "counts" }],
    },
    {
      id: "v2",
      name: "Sink: print",
      parallelism: 1,
      maxParallelism: 128,
      isSource: false,
      operators: [{ uid: "print", name: "Sink: print" }],
    },
  ],
  edges: [
    { source: 0, target: 1, partitioner: "hash" },
    { source: 1, target: 2, partitioner: "forward" },
    { source: 0, target: 2, partitioner: "broadcast" },
  ],
};

function fixture() {
  const metrics = new MetricStore();
  const status: JobStatus = {
    jobId: "j1",
    name: "word count",
    status: "RUNNING",
    attempt: 2,
    startedAt: 1000,
    moduleUrl: "file:///job.ts",
  };
  const facts: JobFacts = {
    status,
    graph,
    checkpointing: {
      intervalMs: 1000,
      timeoutMs: 60_000,
      minPauseBetweenCheckpointsMs: 0,
      maxConcurrentCheckpoints: 1,
      retainedCheckpoints: 1,
      retainOnFinish: false,
    },
    metrics,
    checkpoints: new CheckpointStatsTracker(),
    placement: new Map([["v0#0", "w1-s0"], ["v0#1", "w2-s0"], ["v1#0", "w1-s0"], [
      "v2#0",
      "w1-s1",
    ]]),
    restarts: 2,
    subtaskAttempts: new Map(),
    failovers: [],
  };
  const sample = (rate: number, backPressured: number, wm: number | null) => ({
    numRecordsIn: rate * 10,
    numRecordsOut: rate * 10,
    numRecordsInPerSecond: rate,
    numRecordsOutPerSecond: rate,
    busyTimeMsPerSecond: 1000 - backPressured,
    idleTimeMsPerSecond: 0,
    backPressuredTimeMsPerSecond: backPressured,
    currentInputWatermark: wm,
    currentOutputWatermark: wm,
    sampledAt: 2000,
  });
  metrics.update(2, "v0", 0, sample(30, 600, 7000));
  metrics.update(2, "v0", 1, sample(12, 100, 5000));
  metrics.update(2, "v1", 0, sample(42, 0, null));
  const backend: RestBackend = {
    overview: () => ({
      jobs: [status],
      workers: [
        {
          workerId: "w1",
          host: "host-a",
          pid: 11,
          slots: 4,
          slotIds: ["w1-s0", "w1-s1", "w1-s2", "w1-s3"],
          lastHeartbeatAgoMs: 5,
        },
        { workerId: "w2", host: "host-b", pid: 22, slots: 2, lastHeartbeatAgoMs: 900 },
      ],
    }),
    jobFacts: (jobId) => jobId === "j1" ? facts : undefined,
    cancelJob: () => ({ ok: true }),
    savepoint: () => Promise.resolve("unused"),
  };
  return createRestApp({ backend });
}

/** A parsed JSON body, walked freely by the assertions. */
// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

async function get(app: ReturnType<typeof fixture>, path: string): Promise<Loose> {
  const res = await app.request(path);
  assert.equal(res.status, 200, path);
  return await res.json();
}

const expectedPlan = {
  jid: "j1",
  name: "word count",
  type: "STREAMING",
  nodes: [
    {
      id: "v0",
      parallelism: 2,
      operator: "Source: lines -> split",
      operator_strategy: "",
      description: "Source: lines -> split",
      optimizer_properties: {},
    },
    {
      id: "v1",
      parallelism: 1,
      operator: "counts",
      operator_strategy: "",
      description: "counts",
      inputs: [{ num: 0, id: "v0", ship_strategy: "HASH", exchange: "pipelined_bounded" }],
      optimizer_properties: {},
    },
    {
      id: "v2",
      parallelism: 1,
      operator: "Sink: print",
      operator_strategy: "",
      description: "Sink: print",
      inputs: [
        { num: 0, id: "v1", ship_strategy: "FORWARD", exchange: "pipelined_bounded" },
        { num: 1, id: "v0", ship_strategy: "BROADCAST", exchange: "pipelined_bounded" },
      ],
      optimizer_properties: {},
    },
  ],
};

Deno.test("REST app: /jobs/:jobid carries Flink's plan and each vertex's chained operators; /jobs/:jobid/plan the plan alone", async () => {
  const app = fixture();
  const job = await get(app, "/jobs/j1");
  assert.deepEqual(job.plan, expectedPlan);
  assert.deepEqual(job.vertices[0].operators, [
    { uid: "lines", name: "Source: lines" },
    { uid: "split", name: "split" },
  ]);
  assert.deepEqual(await get(app, "/jobs/j1/plan"), { plan: expectedPlan });
  const missing = await app.request("/jobs/nope/plan");
  assert.equal(missing.status, 404);
  assert.deepEqual(await missing.json(), { errors: ["Job nope not found"] });
});

Deno.test("planView maps every partitioner to Flink's ship strategy, leaves inputs out without edges, and names a bad edge", () => {
  const strategies = (["forward", "hash", "rebalance", "broadcast", "rescale"] as const).map((p) =>
    planView("j", { ...graph, edges: [{ source: 0, target: 1, partitioner: p }] })
      .nodes[1]!.inputs![0]!.ship_strategy
  );
  assert.deepEqual(strategies, ["FORWARD", "HASH", "REBALANCE", "BROADCAST", "RESCALE"]);
  const { edges: _, ...withoutEdges } = graph;
  assert.ok(planView("j", withoutEdges).nodes.every((n) => n.inputs === undefined));
  assert.throws(
    () => planView("j", { ...graph, edges: [{ source: 0, target: 3, partitioner: "hash" }] }),
    /^RangeError: edge 0 of job j's graph joins vertex positions 0 -> 3, but the graph has 3 vertices$/,
  );
});

Deno.test("REST app: /jobs/overview lists each job's attempt and restarts", async () => {
  const { jobs } = await get(fixture(), "/jobs/overview");
  assert.equal(jobs.length, 1);
  assert.equal(jobs[0].attempt, 2);
  assert.equal(jobs[0].numRestarts, 2);
  assert.deepEqual(jobs[0].tasks, { total: 4, RUNNING: 3, DEPLOYING: 1 });
});

Deno.test("REST app: /taskmanagers lists the workers with their free slots and heartbeat age", async () => {
  assert.deepEqual(await get(fixture(), "/taskmanagers"), {
    taskmanagers: [
      {
        id: "w1",
        path: "host-a:11",
        dataPort: -1,
        timeSinceLastHeartbeat: 5,
        slotsNumber: 4,
        freeSlots: 2,
        hardware: {},
      },
      {
        // No slot ids reported (an older coordinator's overview): every slot counts as free.
        id: "w2",
        path: "host-b:22",
        dataPort: -1,
        timeSinceLastHeartbeat: 900,
        slotsNumber: 2,
        freeSlots: 2,
        hardware: {},
      },
    ],
  });
});

Deno.test("REST app: a vertex's metrics answer vertex-wide ids: rates summed, time per second the maximum, watermarks the minimum", async () => {
  const app = fixture();
  const names = [
    "numRecordsInPerSecond",
    "numRecordsOutPerSecond",
    "numRecordsIn",
    "backPressuredTimeMsPerSecond",
    "busyTimeMsPerSecond",
    "currentOutputWatermark",
  ];
  const v0 = await get(app, `/jobs/j1/vertices/v0/metrics?get=${names.join(",")},0.numRecordsIn`);
  assert.deepEqual(v0, [
    { id: "numRecordsInPerSecond", value: "42" },
    { id: "numRecordsOutPerSecond", value: "42" },
    { id: "numRecordsIn", value: "420" },
    { id: "backPressuredTimeMsPerSecond", value: "600" },
    { id: "busyTimeMsPerSecond", value: "900" },
    { id: "currentOutputWatermark", value: "5000" },
    { id: "0.numRecordsIn", value: "300" },
  ]);
  // v1's subtask has no watermark; v2's has not reported: its ids are left out.
  assert.deepEqual(
    await get(app, "/jobs/j1/vertices/v1/metrics?get=currentInputWatermark,numRecordsInPerSecond"),
    [
      { id: "currentInputWatermark", value: NO_WATERMARK },
      { id: "numRecordsInPerSecond", value: "42" },
    ],
  );
  assert.deepEqual(await get(app, "/jobs/j1/vertices/v2/metrics?get=numRecordsInPerSecond"), []);
  const listed = (await get(app, "/jobs/j1/vertices/v1/metrics")).map((m: Loose) => m.id);
  assert.ok(listed.includes("0.numRecordsInPerSecond"));
  assert.ok(listed.includes("numRecordsInPerSecond"));
  assert.ok(listed.includes("backPressuredTimeMsPerSecond"));
  assert.ok(listed.includes("idleTimeMsPerSecond"));
});
