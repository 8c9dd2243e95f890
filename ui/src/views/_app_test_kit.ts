/**
 * What the dashboard's simulated-browser tests share (`app_test.ts`,
 * `app_connection_test.ts`): a fake REST API of one job (`routes`), the
 * page started on it in Happy DOM (`start`), and DOM helpers.
 * @module
 */
import assert from "node:assert/strict";
import {
  type FakeBrowser,
  type FakeRoutes,
  installFakeBrowser,
  type SeenRequest,
} from "./_fake_browser.ts";

export const JOB = "job-1-abc";
export const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

export interface State {
  state: string;
  token?: string;
  savepointPolls: number;
  jobs: boolean;
}

function job(s: State) {
  return {
    jid: JOB,
    name: "word count",
    state: s.state,
    "start-time": NOW - 60_000,
    "end-time": s.state === "RUNNING" ? -1 : NOW,
    duration: 60_000,
    now: NOW,
    attempt: 1,
    numRestarts: 1,
    vertices: [
      {
        id: "v0",
        name: "Source: lines -> split",
        parallelism: 2,
        status: s.state,
        operators: [{ uid: "lines", name: "Source: lines" }, { uid: "split", name: "split" }],
        metrics: { "read-records": 0, "write-records": 1000 },
      },
      {
        id: "v1",
        name: "count",
        parallelism: 3,
        status: s.state,
        metrics: { "read-records": 1000, "write-records": 900 },
      },
    ],
    plan: {
      jid: JOB,
      name: "word count",
      type: "STREAMING",
      nodes: [
        { id: "v0", parallelism: 2, description: "Source: lines -> split" },
        {
          id: "v1",
          parallelism: 3,
          description: "count",
          inputs: [{ num: 0, id: "v0", ship_strategy: "HASH", exchange: "pipelined_bounded" }],
        },
      ],
    },
  };
}

const checkpoint = (id: number, status: string) => ({
  className: status.toLowerCase(),
  id,
  status,
  is_savepoint: false,
  trigger_timestamp: NOW - 5000 + id,
  latest_ack_timestamp: NOW - 4000 + id,
  checkpointed_size: 2048,
  state_size: 4096,
  end_to_end_duration: 120,
  num_subtasks: 5,
  num_acknowledged_subtasks: status === "COMPLETED" ? 5 : 2,
  tasks: {},
});

export function routes(s: State) {
  return (r: SeenRequest): unknown => {
    if (s.token !== undefined && r.authorization !== `Bearer ${s.token}`) {
      return {
        status: 401,
        body: { errors: ["Unauthorized: send 'Authorization: Bearer <token>'"] },
      };
    }
    const p = r.path;
    if (p === "/overview") {
      return {
        taskmanagers: 1,
        "slots-total": 4,
        "slots-available": 0,
        "jobs-running": s.jobs ? 1 : 0,
        "jobs-finished": 0,
        "jobs-cancelled": 0,
        "jobs-failed": 0,
        "flink-version": "weir-0.1.0",
      };
    }
    if (p === "/jobs/overview") {
      if (!s.jobs) return { jobs: [] };
      const j = job(s);
      return {
        jobs: [{
          jid: JOB,
          name: j.name,
          state: s.state,
          "start-time": j["start-time"],
          "end-time": j["end-time"],
          duration: 60_000,
          tasks: { total: 5, RUNNING: 5 },
          attempt: 1,
          numRestarts: 1,
        }],
      };
    }
    if (p === "/taskmanagers") {
      return {
        taskmanagers: [{
          id: "w-1",
          path: "host:42",
          dataPort: -1,
          timeSinceLastHeartbeat: 250,
          slotsNumber: 4,
          freeSlots: 0,
          hardware: {},
        }],
      };
    }
    if (p === `/jobs/${JOB}` && r.method === "GET") return job(s);
    if (p === `/jobs/${JOB}?mode=cancel` && r.method === "PATCH") {
      s.state = "CANCELED";
      return { status: 202, body: {} };
    }
    const v = /^\/jobs\/[^/]+\/vertices\/(v\d)(\/.*)?$/.exec(p);
    if (v !== null) {
      const [, vid, rest = ""] = v;
      const parallelism = vid === "v0" ? 2 : 3;
      const high = vid === "v0";
      if (rest === "") {
        return {
          id: vid,
          name: vid,
          parallelism,
          now: NOW,
          subtasks: Array.from({ length: parallelism }, (_, i) => ({
            subtask: i,
            status: "RUNNING",
            attempt: 1,
            host: `w-1-s${i}`,
            metrics: { "read-records": 10, "write-records": 10 },
          })),
        };
      }
      if (rest === "/backpressure") {
        return {
          status: "ok",
          "backpressure-level": high ? "high" : "ok",
          "end-timestamp": NOW,
          subtasks: Array.from({ length: parallelism }, (_, i) => ({
            subtask: i,
            "attempt-number": 1,
            "backpressure-level": high ? "high" : "ok",
            ratio: high ? 0.75 : 0.02,
            idleRatio: 0.1,
            busyRatio: 0.2,
          })),
        };
      }
      if (rest.startsWith("/subtasks/metrics")) {
        return [
          { id: "numRecordsInPerSecond", sum: high ? 0 : 1500 },
          { id: "numRecordsOutPerSecond", sum: high ? 1500 : 1200 },
        ];
      }
      if (rest.startsWith("/metrics")) return [{ id: "0.numRecordsInPerSecond", value: "42" }];
      if (rest === "/watermarks") return [{ id: "0.currentInputWatermark", value: "1000" }];
    }
    const base = `/jobs/${JOB}/checkpoints`;
    if (p === base) {
      return {
        counts: { restored: 0, total: 3, in_progress: 1, completed: 1, failed: 1 },
        summary: {},
        latest: {
          completed: checkpoint(1, "COMPLETED"),
          savepoint: null,
          failed: { ...checkpoint(2, "FAILED"), failure_message: "declined" },
          restored: null,
        },
        history: [
          checkpoint(3, "IN_PROGRESS"),
          checkpoint(2, "FAILED"),
          checkpoint(1, "COMPLETED"),
        ],
      };
    }
    if (p === `${base}/config`) return { interval: 500, timeout: 60_000, min_pause: 0 };
    const d = /^\/jobs\/[^/]+\/checkpoints\/details\/(\d+)(?:\/subtasks\/(v\d))?$/.exec(p);
    if (d !== null) {
      const [, cid, vid] = d;
      if (vid === undefined) {
        return { ...checkpoint(Number(cid), "COMPLETED"), tasks: { v0: {}, v1: {} } };
      }
      const n = vid === "v0" ? 2 : 3;
      return {
        ...checkpoint(Number(cid), "COMPLETED"),
        subtasks: Array.from({ length: n }, (_, i) => ({
          index: i,
          status: "completed",
          ack_timestamp: NOW,
          end_to_end_duration: 100,
          checkpointed_size: 512,
          state_size: 1024,
          checkpoint: { sync: 1, async: 5 },
          alignment: { duration: 7 * (i + 1) },
          start_delay: 3,
        })),
      };
    }
    if (p === `/jobs/${JOB}/exceptions`) {
      return {
        "root-exception": "TaskFailedError: planned failure",
        timestamp: NOW,
        "all-exceptions": [],
        truncated: false,
        exceptionHistory: {
          entries: [{
            exceptionName: "TaskFailedError",
            stacktrace: "TaskFailedError: planned failure",
            timestamp: NOW,
            taskName: "v1#0",
            location: "w-1-s0",
            failover: {
              scope: "region",
              region: 0,
              regionDescription: "region 0",
              failedAttempt: 0,
              attempt: 1,
            },
          }],
          truncated: false,
        },
      };
    }
    if (p === `/jobs/${JOB}/savepoints` && r.method === "POST") {
      return { status: 202, body: { "request-id": "0".repeat(32) } };
    }
    if (p === `/jobs/${JOB}/savepoints/${"0".repeat(32)}`) {
      s.savepointPolls++;
      return s.savepointPolls < 2
        ? { status: { id: "IN_PROGRESS" } }
        : { status: { id: "COMPLETED" }, operation: { location: "nats-object-store://b/sp-1" } };
    }
    return undefined;
  };
}

/** Starts the app at `hash` against a fake API in state `s` (its routes changed by `wrap`, if given). */
export async function start(
  s: State,
  hash: string,
  wrap: (api: FakeRoutes) => FakeRoutes = (api) => api,
): Promise<{ b: FakeBrowser; stop: () => Promise<void> }> {
  sessionStorage.clear();
  const b = installFakeBrowser(`http://127.0.0.1:8081/${hash}`, wrap(routes(s)));
  const { h, render } = await import("../deps.ts");
  const { App } = await import("./app.tsx");
  // The token an earlier test entered lives on in the module: forget it.
  (await import("../api.ts")).storeToken("");
  const root = document.createElement("div");
  document.body.appendChild(root);
  render(h(App, {}), root);
  return {
    b,
    stop: async () => {
      render(null, root);
      // Preact runs effects after a frame or 100 ms: let the last ones end.
      await new Promise((r) => setTimeout(r, 150));
      await b.close();
    },
  };
}

export const $ = (selector: string) => document.querySelector(selector);
export const $$ = (selector: string) => [...document.querySelectorAll(selector)];
export const text = (selector: string) => $(selector)?.textContent ?? "";

export function enabled(selector: string): boolean {
  const el = $(selector) as HTMLButtonElement | null;
  return el !== null && !el.disabled;
}

export function click(selector: string): void {
  const el = $(selector) as HTMLElement | null;
  assert.ok(el, `nothing matches ${selector}`);
  el.click();
}
