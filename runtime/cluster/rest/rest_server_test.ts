import assert from "node:assert/strict";
import { createRestApp } from "./rest_server.ts";
import { newTriggerId, triggerEpoch } from "./savepoint_triggers.ts";
import type { JobFacts, RestBackend, SavepointOrder } from "./job_facts.ts";
import { MetricStore } from "../../metrics/metric_store.ts";
import { CheckpointStatsTracker } from "../../metrics/checkpoint_stats.ts";
import type { JobStatus } from "../cluster_protocol.ts";
import { formatJobInfo } from "./job_info.ts";
import { answerJobInfo } from "./job_info.ts";
import { exceptionsView } from "./job_views.ts";

/**
 * A backend over real metric and checkpoint stores, with one running job
 * `j1` of two vertices (every subtask on attempt 0, no failover unless
 * `over` says otherwise).
 */
function fixture(over: Partial<Pick<JobFacts, "subtaskAttempts" | "failovers">> = {}) {
  const metrics = new MetricStore();
  const checkpoints = new CheckpointStatsTracker();
  const status: JobStatus = {
    jobId: "j1",
    name: "word count",
    status: "RUNNING",
    attempt: 0,
    startedAt: 1000,
    moduleUrl: "file:///job.ts",
  };
  const facts: JobFacts = {
    status,
    graph: {
      name: "word count",
      fingerprint: "f",
      vertices: [
        {
          id: "v0",
          name: "Source: lines",
          parallelism: 2,
          maxParallelism: 128,
          isSource: true,
          operators: [],
        },
        {
          id: "v1",
          name: "counts",
          parallelism: 1,
          maxParallelism: 128,
          isSource: false,
          operators: [],
        },
      ],
    },
    checkpointing: {
      intervalMs: 1000,
      timeoutMs: 60_000,
      minPauseBetweenCheckpointsMs: 0,
      maxConcurrentCheckpoints: 1,
      retainedCheckpoints: 1,
      retainOnFinish: false,
    },
    metrics,
    checkpoints,
    placement: new Map([["v0#0", "w1-0"], ["v0#1", "w1-1"], ["v1#0", "w1-0"]]),
    restarts: 0,
    subtaskAttempts: new Map([["v0#0", 0], ["v0#1", 0], ["v1#0", 0]]),
    failovers: [],
    ...over,
  };
  const sample = (numRecordsIn: number, backPressured: number, wm: number | null) => ({
    numRecordsIn,
    numRecordsOut: numRecordsIn,
    numRecordsInPerSecond: 10,
    numRecordsOutPerSecond: 10,
    busyTimeMsPerSecond: 1000 - backPressured,
    idleTimeMsPerSecond: 0,
    backPressuredTimeMsPerSecond: backPressured,
    currentInputWatermark: wm,
    currentOutputWatermark: wm,
    sampledAt: 2000,
  });
  metrics.update(0, "v0", 0, sample(0, 600, null));
  metrics.update(0, "v0", 1, sample(0, 0, null));
  metrics.update(0, "v1", 0, sample(42, 0, 5000));
  checkpoints.reportPending({
    checkpointId: 1,
    kind: "checkpoint",
    triggeredAt: 1500,
    numSubtasks: 3,
  });
  for (const [vertexId, subtask] of [["v0", 0], ["v0", 1], ["v1", 0]] as const) {
    checkpoints.reportAck({
      vertexId,
      subtask,
      attempt: 0,
      checkpointId: 1,
      handles: [],
      stateUids: [],
      syncDurationMs: 1,
      asyncDurationMs: 2,
      alignmentDurationMs: 3,
      stateBytes: 100,
      startDelayMs: 4,
    }, 1600);
  }
  checkpoints.reportCompleted(1, 1610, "nats-object-store://b/j1/chk-1");
  const orders: SavepointOrder[] = [];
  let cancelled = false;
  let savepointDone: (path: string) => void = () => {};
  const backend: RestBackend = {
    overview: () => ({
      jobs: [status],
      workers: [{ workerId: "w1", host: "h", pid: 1, slots: 4, lastHeartbeatAgoMs: 5 }],
    }),
    jobFacts: (jobId) => jobId === "j1" ? facts : undefined,
    cancelJob: (jobId) => {
      if (cancelled) return { ok: false, error: `job ${jobId} is already CANCELED` };
      cancelled = true;
      return { ok: true };
    },
    savepoint: (order) => {
      orders.push(order);
      return new Promise((resolve) => savepointDone = resolve);
    },
  };
  return { backend, orders, facts, finishSavepoint: (p: string) => savepointDone(p) };
}

/** A parsed JSON body, walked freely by the assertions. */
// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

async function json(res: Response | Promise<Response>): Promise<[number, unknown]> {
  const r = await res;
  return [r.status, await r.json()];
}

Deno.test("REST app: overview, job and vertex views in Flink's shapes", async () => {
  const app = createRestApp({ backend: fixture().backend });
  const [, overview] = await json(app.request("/overview"));
  assert.deepEqual(
    { ...(overview as Record<string, unknown>), "flink-version": "x" },
    {
      taskmanagers: 1,
      "slots-total": 4,
      "slots-available": 2,
      "jobs-running": 1,
      "jobs-finished": 0,
      "jobs-cancelled": 0,
      "jobs-failed": 0,
      "flink-version": "x",
      "flink-commit": "",
    },
  );
  assert.deepEqual((await json(app.request("/jobs")))[1], {
    jobs: [{ id: "j1", status: "RUNNING" }],
  });
  const [, job] = await json(app.request("/jobs/j1")) as [number, Record<string, unknown>];
  const vertices = job.vertices as Record<string, unknown>[];
  assert.deepEqual(
    vertices.map((v) => [v.id, v.parallelism, (v.tasks as Record<string, number>).RUNNING]),
    [
      ["v0", 2, 2],
      ["v1", 1, 1],
    ],
  );
  assert.equal((vertices[1]!.metrics as Record<string, unknown>)["read-records"], 42);
  const [, bp] = await json(app.request("/jobs/j1/vertices/v0/backpressure")) as [
    number,
    Record<string, unknown>,
  ];
  assert.equal(bp["backpressure-level"], "high");
  assert.deepEqual((bp.subtasks as Record<string, unknown>[]).map((s) => s.ratio), [0.6, 0]);
  const [, wms] = await json(app.request("/jobs/j1/vertices/v1/watermarks"));
  assert.deepEqual(wms, [
    { id: "0.currentInputWatermark", value: "5000" },
    { id: "0.currentOutputWatermark", value: "5000" },
  ]);
  const [, agg] = await json(
    app.request(
      "/jobs/j1/vertices/v0/subtasks/metrics?get=backPressuredTimeMsPerSecond&agg=max,avg",
    ),
  );
  assert.deepEqual(agg, [{ id: "backPressuredTimeMsPerSecond", max: 600, avg: 300 }]);
});

Deno.test("REST app: checkpoint statistics, details and per-subtask acks", async () => {
  const app = createRestApp({ backend: fixture().backend });
  const [, cp] = await json(app.request("/jobs/j1/checkpoints")) as [number, Loose];
  assert.deepEqual(cp.counts, { restored: 0, total: 1, in_progress: 0, completed: 1, failed: 0 });
  assert.equal(cp.latest.completed.end_to_end_duration, 110);
  assert.equal(cp.latest.completed.checkpointed_size, 300);
  assert.equal(cp.latest.failed, null);
  const [, details] = await json(app.request("/jobs/j1/checkpoints/details/1")) as [
    number,
    Loose,
  ];
  assert.equal(details.tasks.v0.num_acknowledged_subtasks, 2);
  const [, sub] = await json(app.request("/jobs/j1/checkpoints/details/1/subtasks/v0")) as [
    number,
    Loose,
  ];
  assert.deepEqual(sub.subtasks[1].checkpoint, { sync: 1, async: 2 });
  assert.equal(sub.subtasks[1].start_delay, 4);
  assert.equal((await app.request("/jobs/j1/checkpoints/details/7")).status, 404);
  const [, config] = await json(app.request("/jobs/j1/checkpoints/config")) as [
    number,
    Loose,
  ];
  assert.equal(config.interval, 1000);
});

Deno.test("REST app: savepoint triggers report IN_PROGRESS, then the path", async () => {
  const f = fixture();
  const app = createRestApp({ backend: f.backend });
  const [status, body] = await json(app.request("/jobs/j1/stop", {
    method: "POST",
    body: JSON.stringify({ drain: true }),
  })) as [number, Record<string, string>];
  assert.equal(status, 202);
  const id = body["request-id"]!;
  assert.deepEqual(f.orders, [
    { jobId: "j1", directory: undefined, stop: true, drain: true, triggerId: id },
  ]);
  assert.deepEqual((await json(app.request(`/jobs/j1/savepoints/${id}`)))[1], {
    status: { id: "IN_PROGRESS" },
  });
  f.finishSavepoint("nats-object-store://b/savepoint-j1-2");
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual((await json(app.request(`/jobs/j1/savepoints/${id}`)))[1], {
    status: { id: "COMPLETED" },
    operation: { location: "nats-object-store://b/savepoint-j1-2" },
  });
  assert.equal((await app.request(`/jobs/other/savepoints/${id}`)).status, 404);
});

Deno.test("REST app: bad input gets 400 naming the field and its value", async () => {
  const app = createRestApp({ backend: fixture().backend });
  const cases: [string, RequestInit, RegExp][] = [
    ["/jobs/j1/savepoints", { method: "POST", body: "{" }, /request body is not JSON/],
    ["/jobs/j1/savepoints", { method: "POST", body: "[]" }, /must be a JSON object/],
    [
      "/jobs/j1/savepoints",
      { method: "POST", body: '{"cancel-job":true}' },
      /'cancel-job' is not supported/,
    ],
    [
      "/jobs/j1/savepoints",
      { method: "POST", body: '{"target-directory":3}' },
      /'target-directory' must be a string: current value is 3/,
    ],
    [
      "/jobs/j1/stop",
      { method: "POST", body: '{"drain":"yes"}' },
      /'drain' must be a boolean: current value is "yes"/,
    ],
    [
      "/jobs/j1/stop",
      { method: "POST", body: '{"formatType":"NATIVE"}' },
      /'formatType' must be CANONICAL/,
    ],
    [
      "/jobs/j1/vertices/v0/subtasks/metrics?agg=median",
      {},
      /'agg' takes min, max, avg, sum: current value has 'median'/,
    ],
  ];
  for (const [path, init, message] of cases) {
    const [status, body] = await json(app.request(path, init)) as [number, { errors: string[] }];
    assert.equal(status, 400, `${path} ${init.body}`);
    assert.match(body.errors[0]!, message);
  }
});

Deno.test("REST app: PATCH ?mode=cancel cancels once, then answers 409", async () => {
  const app = createRestApp({ backend: fixture().backend });
  assert.equal((await app.request("/jobs/j1?mode=cancel", { method: "PATCH" })).status, 202);
  const [status, body] = await json(app.request("/jobs/j1?mode=cancel", { method: "PATCH" }));
  assert.equal(status, 409);
  assert.deepEqual(body, { errors: ["job j1 is already CANCELED"] });
});

Deno.test("REST app: a token is required on every route when set", async () => {
  const app = createRestApp({ backend: fixture().backend, token: "s3cret" });
  for (const headers of [{}, { Authorization: "Bearer nope" }]) {
    for (const path of ["/jobs", "/metrics"]) {
      const res = await app.request(path, { headers });
      assert.equal(res.status, 401);
      // Flink's error shape, and the challenge RFC 6750 asks for.
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
      const body = await res.json();
      assert.deepEqual(Object.keys(body), ["errors"]);
      assert.equal(body.errors.length, 1);
      assert.match(body.errors[0], /^Unauthorized: .*Authorization: Bearer <token>.*--rest-token/);
    }
  }
  assert.equal(
    (await app.request("/jobs", { headers: { Authorization: "Bearer s3cret" } })).status,
    200,
  );
  assert.throws(
    () => createRestApp({ backend: fixture().backend, token: "" }),
    /must not be empty/,
  );
});

Deno.test("REST app: /metrics renders Flink's Prometheus names and labels", async () => {
  const app = createRestApp({ backend: fixture().backend });
  const res = await app.request("/metrics");
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  const text = await res.text();
  assert.match(
    text,
    /flink_taskmanager_job_task_numRecordsIn\{job_id="j1",job_name="word count",task_id="v1",task_name="counts",subtask_index="0",task_attempt_num="0",tm_id="w1-0"\} 42/,
  );
  assert.match(
    text,
    /flink_jobmanager_job_numberOfCompletedCheckpoints\{job_id="j1",job_name="word count"\} 1/,
  );
  assert.match(
    text,
    /flink_jobmanager_job_lastCheckpointSize\{job_id="j1",job_name="word count"\} 300/,
  );
  assert.match(text, /flink_jobmanager_taskSlotsAvailable 2/);
});

Deno.test("weir info's text shows status, vertices, checkpoints and the last failure", () => {
  const f = fixture();
  const reply = answerJobInfo(f.backend, "j1", 5000);
  assert.ok(reply.ok);
  const text = formatJobInfo(reply.info);
  assert.match(
    text,
    /^job j1 'word count'\nstatus: RUNNING, attempt 0, restarts 0, running for 4000 ms/,
  );
  assert.match(text, /\nv1\t1\t0\t42\t42\tcounts\n/);
  assert.match(text, /\n1\tCOMPLETED\tCHECKPOINT\t110 ms\t300 B\t0 B\n/);
  assert.match(text, /last failure: none$/);
  assert.deepEqual(answerJobInfo(f.backend, "nope", 0), { ok: false, error: "no job nope" });
  assert.equal(answerJobInfo(f.backend, 3, 0).ok, false);
});

/** A region failover of region 1 (attempt 0 -> 1), then a full failover (attempt 1 -> 2, v0#1 restarting again). */
const afterFailovers = {
  subtaskAttempts: new Map([["v0#0", 2], ["v1#0", 2]]),
  failovers: [
    {
      timestamp: Date.UTC(2026, 0, 1, 0, 0, 1),
      failure: "RemoteTaskError: Subtask v0#1 failed: boom",
      subtask: "v0#1",
      scope: "region" as const,
      region: { id: 1, description: "region 1 (v0#1)" },
      failedAttempt: 0,
      attempt: 1,
    },
    {
      timestamp: Date.UTC(2026, 0, 1, 0, 0, 2),
      failure: "WorkerLostError: Worker w1 sent no heartbeat for 3000 ms",
      subtask: undefined,
      scope: "full" as const,
      region: undefined,
      failedAttempt: 1,
      attempt: undefined,
    },
  ],
};

Deno.test("REST app: /jobs/:jobid shows each subtask's attempt, /exceptions each failover with its region and attempts", async () => {
  const app = createRestApp({ backend: fixture(afterFailovers).backend });
  const [, job] = await json(app.request("/jobs/j1")) as [number, Loose];
  assert.deepEqual(
    job.vertices.map((v: Loose) => [v.id, v["subtask-attempts"]]),
    [["v0", [2, null]], ["v1", [2]]],
  );
  const [, vertex] = await json(app.request("/jobs/j1/vertices/v0")) as [number, Loose];
  assert.deepEqual(vertex.subtasks.map((s: Loose) => s.attempt), [2, null]);
  const [, exceptions] = await json(app.request("/jobs/j1/exceptions")) as [number, Loose];
  const entries = exceptions.exceptionHistory.entries as Loose[];
  // Newest first, as Flink lists them.
  assert.deepEqual(entries.map((e) => [e.exceptionName, e.taskName, e.location, e.failover]), [
    ["WorkerLostError", null, null, {
      scope: "full",
      region: null,
      regionDescription: null,
      failedAttempt: 1,
      attempt: null,
    }],
    ["RemoteTaskError", "v0#1", "w1-1", {
      scope: "region",
      region: 1,
      regionDescription: "region 1 (v0#1)",
      failedAttempt: 0,
      attempt: 1,
    }],
  ]);
  assert.equal(entries[1]!.timestamp, Date.UTC(2026, 0, 1, 0, 0, 1));
  // A running job's root exception is its latest failure, timed at the latest failover.
  const facts = fixture(afterFailovers).backend.jobFacts("j1")!;
  const latest = exceptionsView({
    ...facts,
    status: { ...facts.status, lastFailure: afterFailovers.failovers[1]!.failure },
  });
  assert.equal(latest["root-exception"], afterFailovers.failovers[1]!.failure);
  assert.equal(latest.timestamp, Date.UTC(2026, 0, 1, 0, 0, 2));
  // A cancellation is not shown as the root exception; an earlier failure still is.
  const cancelled = { ...facts.status, status: "CANCELED" as const, error: "Job j1 was cancelled" };
  assert.equal(
    exceptionsView({ ...facts, failovers: [], status: cancelled })["root-exception"],
    null,
  );
  assert.equal(
    exceptionsView({
      ...facts,
      status: { ...cancelled, lastFailure: "Error: boom" },
    })["root-exception"],
    "Error: boom",
  );
});

Deno.test("weir info's text shows each subtask's attempt and the latest failovers, region or full", () => {
  const reply = answerJobInfo(fixture(afterFailovers).backend, "j1", 5000);
  assert.ok(reply.ok);
  const text = formatJobInfo(reply.info);
  assert.match(text, /\nVERTEX\tPARALLELISM\tATTEMPTS\t/);
  assert.match(text, /\nv0\t2\t2,-\t0\t0\tSource: lines\n/);
  assert.match(
    text,
    /\nFAILOVER\tTIME\tATTEMPT\tSUBTASK\tFAILURE\nfull\t2026-01-01T00:00:02.000Z\t1 -> -\t-\tWorkerLostError: Worker w1 sent no heartbeat for 3000 ms\nregion 1 \(v0#1\)\t2026-01-01T00:00:01.000Z\t0 -> 1\tv0#1\tRemoteTaskError: Subtask v0#1 failed: boom$/,
  );
});

Deno.test("openapi.yaml documents every route the REST app serves, and no other", async () => {
  const { parse } = await import("npm:yaml@2.9.1");
  const spec = parse(await Deno.readTextFile(new URL("./openapi.yaml", import.meta.url)));
  assert.equal(spec.openapi, "3.0.3");
  const documented = new Set<string>();
  for (const [path, item] of Object.entries(spec.paths as Record<string, object>)) {
    for (const method of Object.keys(item)) {
      if (method === "parameters") continue;
      documented.add(`${method.toUpperCase()} ${path.replaceAll(/\{(\w+)\}/g, ":$1")}`);
    }
  }
  const app = createRestApp({ backend: fixture().backend });
  const served = new Set(
    // A Hono parameter's pattern (`:file{.+}`) is not part of the documented path.
    app.routes.filter((r) => r.method !== "ALL")
      .map((r) => `${r.method} ${r.path.replaceAll(/(:\w+)\{[^}]*\}/g, "$1")}`),
  );
  assert.deepEqual([...served].sort(), [...documented].sort());
});

Deno.test("REST app: a trigger id of an earlier leader is answered from the job store when it completed, else with a 404 naming the earlier leader", async () => {
  const f = fixture();
  const earlier = newTriggerId(2);
  const completed = newTriggerId(2);
  const app = createRestApp({
    backend: {
      ...f.backend,
      leaderEpoch: () => 3,
      savepointLocation: (jobId, triggerId) =>
        jobId === "j1" && triggerId === completed
          ? "nats-object-store://b/savepoint-j1-7"
          : undefined,
    },
  });
  assert.deepEqual(await json(app.request(`/jobs/j1/savepoints/${completed}`)), [200, {
    status: { id: "COMPLETED" },
    operation: { location: "nats-object-store://b/savepoint-j1-7" },
  }]);
  const [status, body] = await json(app.request(`/jobs/j1/savepoints/${earlier}`)) as [
    number,
    { errors: string[] },
  ];
  assert.equal(status, 404);
  assert.match(
    body.errors[0]!,
    /was triggered under a previous leading coordinator \(leader epoch 2; epoch 3 leads now\)/,
  );
  // An id of this leader's epoch that it does not know: a plain 404.
  const [plain, unknown] = await json(app.request(`/jobs/j1/savepoints/${newTriggerId(3)}`)) as [
    number,
    { errors: string[] },
  ];
  assert.equal(plain, 404);
  assert.match(unknown.errors[0]!, /^Savepoint operation [0-9a-f]{32} of job j1 not found$/);
  // Ids issued now carry this leader's epoch.
  const [, posted] = await json(app.request("/jobs/j1/savepoints", { method: "POST" })) as [
    number,
    Record<string, string>,
  ];
  assert.equal(triggerEpoch(posted["request-id"]!), 3);
});

Deno.test("newTriggerId carries the leader epoch in its first 8 hex digits", () => {
  const id = newTriggerId(0x1234);
  assert.match(id, /^00001234[0-9a-f]{24}$/);
  assert.equal(triggerEpoch(id), 0x1234);
  assert.equal(triggerEpoch("not-a-trigger"), undefined);
  assert.throws(
    () => newTriggerId(-1),
    /must be an integer from 0 to 4294967295: current value is -1/,
  );
});
