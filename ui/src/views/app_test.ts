/**
 * The dashboard's views in a simulated browser (Happy DOM) against a fake
 * REST API: the DOM contract the browser test relies on (`data-testid`s,
 * `data-backpressure`, ...), the token prompt, error banners, the actions'
 * requests and progress. The views poll every second, so some steps wait
 * a second or two.
 */
import assert from "node:assert/strict";
import {
  type FakeBrowser,
  type FakeRoutes,
  installFakeBrowser,
  type SeenRequest,
  waitFor,
} from "./_fake_browser.ts";

const JOB = "job-1-abc";
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);

interface State {
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

function routes(s: State) {
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
async function start(
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

const $ = (selector: string) => document.querySelector(selector);
const $$ = (selector: string) => [...document.querySelectorAll(selector)];
const text = (selector: string) => $(selector)?.textContent ?? "";

function enabled(selector: string): boolean {
  const el = $(selector) as HTMLButtonElement | null;
  return el !== null && !el.disabled;
}

function click(selector: string): void {
  const el = $(selector) as HTMLElement | null;
  assert.ok(el, `nothing matches ${selector}`);
  el.click();
}

Deno.test("the overview lists jobs and workers with their ids and status", async () => {
  const { stop } = await start({ state: "RUNNING", savepointPolls: 0, jobs: true }, "#/");
  try {
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
    assert.equal(text(`[data-job-id="${JOB}"] [data-testid="job-status"]`), "RUNNING");
    assert.equal($(`[data-job-id="${JOB}"] a`)?.getAttribute("href"), `#/jobs/${JOB}`);
    await waitFor("the worker row", () => $('[data-testid="worker-row"][data-worker-id="w-1"]'));
    assert.match(text('[data-testid="worker-row"]'), /250 ms ago/);
    assert.match(text("header"), /weir-0\.1\.0/);
  } finally {
    await stop();
  }
});

Deno.test("the overview says there are no jobs", async () => {
  const { stop } = await start({ state: "RUNNING", savepointPolls: 0, jobs: false }, "#/");
  try {
    await waitFor("'No jobs.'", () => /No jobs\./.test(document.body.textContent ?? ""));
    assert.equal($$('[data-testid="job-row"]').length, 0);
  } finally {
    await stop();
  }
});

Deno.test("the job graph shows vertices with back pressure, rates and edges; a click lists subtasks", async () => {
  const { stop } = await start(
    { state: "RUNNING", savepointPolls: 0, jobs: true },
    `#/jobs/${JOB}`,
  );
  try {
    await waitFor("a HIGH vertex v0", () => $('[data-vertex-id="v0"][data-backpressure="HIGH"]'));
    await waitFor("an OK vertex v1", () => $('[data-vertex-id="v1"][data-backpressure="OK"]'));
    assert.equal($$('[data-testid="job-graph"] [data-testid="vertex"]').length, 2);
    const v0 = text('[data-vertex-id="v0"]');
    assert.match(v0, /Source: lines -> split/);
    assert.match(v0, /split/);
    assert.match(v0, /Parallelism: 2/);
    assert.match(v0, /Out 1\.5K\/s/);
    assert.match(v0, /75% back-pressured/);
    assert.match(text('[data-vertex-id="v1"]'), /In 1\.5K\/s/);
    const edges = $$('[data-testid="edge"]');
    assert.equal(edges.length, 1);
    assert.equal(edges[0]?.getAttribute("data-ship-strategy"), "HASH");
    assert.equal(text('[data-testid="job-status"]'), "RUNNING");
    assert.equal(document.title, "word count (RUNNING) · Weir");
    // The throughput chart says it waits until its second sample, then draws.
    assert.ok($('[data-testid="job-throughput"]'), "the throughput chart");
    await waitFor(
      "the throughput chart's second sample",
      () => $('.chart-box[data-waiting="false"] [data-testid="job-throughput"]') !== null,
    );
    assert.equal($(".chart-box .chart-waiting"), null);
    click('[data-vertex-id="v1"]');
    await waitFor(
      "3 subtask rows",
      () => $$('[data-testid="vertex-detail"] [data-testid="subtask-row"]').length === 3,
    );
    await waitFor("the state size", () => /1 KiB/.test(text('[data-testid="vertex-detail"]')));
  } finally {
    await stop();
  }
});

Deno.test("the checkpoints tab shows counts, config, history and a checkpoint's subtasks", async () => {
  const { stop } = await start(
    { state: "RUNNING", savepointPolls: 0, jobs: true },
    `#/jobs/${JOB}/checkpoints`,
  );
  try {
    await waitFor("the history", () => $$('[data-testid="checkpoint-row"]').length === 3);
    assert.ok($('[data-checkpoint-id="1"][data-status="COMPLETED"]'));
    assert.ok($('[data-checkpoint-id="2"][data-status="FAILED"]'));
    assert.ok($('[data-checkpoint-id="3"][data-status="IN_PROGRESS"]'));
    assert.match(text('[data-testid="checkpoint-counts"]'), /Completed\s*1/);
    await waitFor("the config", () => /500 ms/.test(text('[data-testid="checkpoint-config"]')));
    await waitFor("checkpoint 1's alignment", () => /21 ms/.test(text('[data-checkpoint-id="1"]')));
    click('[data-checkpoint-id="1"]');
    await waitFor(
      "5 subtask rows",
      () => $$('[data-testid="checkpoint-subtask-row"]').length === 5,
    );
  } finally {
    await stop();
  }
});

Deno.test("the exceptions tab lists the failure history", async () => {
  const { stop } = await start(
    { state: "RUNNING", savepointPolls: 0, jobs: true },
    `#/jobs/${JOB}/exceptions`,
  );
  try {
    await waitFor("an exception row", () => $('[data-testid="exception-row"]'));
    const row = text('[data-testid="exception-row"]');
    assert.match(row, /planned failure/);
    assert.match(row, /v1#0/);
    assert.match(row, /region 0/);
    assert.match(row, /0 → 1/);
  } finally {
    await stop();
  }
});

Deno.test("a savepoint asks for confirmation, posts, and shows its progress to the path", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true };
  const { b, stop } = await start(s, `#/jobs/${JOB}`);
  try {
    await waitFor(
      "the savepoint button",
      () => enabled('[data-testid="action-savepoint"]'),
    );
    click('[data-testid="action-savepoint"]');
    await waitFor("the confirmation", () => $('[data-testid="confirm-dialog"]'));
    click('[data-testid="confirm-cancel"]');
    await waitFor("no dialog", () => $('[data-testid="confirm-dialog"]') === null);
    assert.equal(b.requests.filter((r) => r.method === "POST").length, 0, "dismissed: no POST");
    click('[data-testid="action-savepoint"]');
    await waitFor("the confirmation", () => $('[data-testid="confirm-dialog"]'));
    click('[data-testid="confirm-ok"]');
    await waitFor(
      "in progress",
      () => /Savepoint in progress/.test(text('[data-testid="action-progress"]')),
    );
    await waitFor(
      "completed",
      () =>
        /Savepoint completed: nats-object-store:\/\/b\/sp-1/.test(
          text('[data-testid="action-progress"]'),
        ),
      6000,
    );
    assert.equal(b.requests.filter((r) => r.method === "POST").length, 1);
  } finally {
    await stop();
  }
});

Deno.test("cancel sends PATCH ?mode=cancel and follows the job to CANCELED", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true };
  const { b, stop } = await start(s, `#/jobs/${JOB}`);
  try {
    await waitFor(
      "the cancel button",
      () => enabled('[data-testid="action-cancel"]'),
    );
    click('[data-testid="action-cancel"]');
    await waitFor("the confirmation", () => $('[data-testid="confirm-dialog"]'));
    assert.match(text('[data-testid="confirm-dialog"]'), /Cancel job "word count"\?/);
    click('[data-testid="confirm-ok"]');
    await waitFor(
      "Job cancelled",
      () => /Job cancelled/.test(text('[data-testid="action-progress"]')),
      6000,
    );
    assert.ok(
      b.requests.some((r) => r.method === "PATCH" && r.path === `/jobs/${JOB}?mode=cancel`),
    );
    await waitFor("CANCELED", () => text('[data-testid="job-status"]') === "CANCELED");
    assert.ok(($('[data-testid="action-cancel"]') as HTMLButtonElement).disabled);
  } finally {
    await stop();
  }
});

Deno.test("a 401 shows the token prompt; the token entered is sent as a bearer token", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true, token: "s3cret" };
  const { b, stop } = await start(s, "#/");
  try {
    await waitFor("the token prompt", () => $('[data-testid="token-input"]'));
    assert.equal($('[data-testid="error-banner"]'), null, "no banner for a 401");
    const input = $('[data-testid="token-input"]') as HTMLInputElement;
    input.value = "s3cret";
    input.dispatchEvent(new b.window.Event("input", { bubbles: true }) as unknown as Event);
    click('[data-testid="token-submit"]');
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
    assert.equal($('[data-testid="token-input"]'), null);
    assert.equal(b.requests.at(-1)?.authorization, "Bearer s3cret");
    assert.equal(sessionStorage.getItem("weir.restToken"), "s3cret");
  } finally {
    await stop();
  }
});

/** Types `token` into the token prompt and submits it. */
function enterToken(b: FakeBrowser, token: string): void {
  const input = $('[data-testid="token-input"]') as HTMLInputElement;
  input.value = token;
  input.dispatchEvent(new b.window.Event("input", { bubbles: true }) as unknown as Event);
  click('[data-testid="token-submit"]');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("a late 401 to a request sent without the token does not re-open the token prompt", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true, token: "s3cret" };
  const started = Date.now();
  // The first /taskmanagers call (no token yet) is slow: its 401 arrives after the token was accepted.
  const { b, stop } = await start(
    s,
    "#/",
    (api) => (r) =>
      r.authorization === null && r.path === "/taskmanagers"
        ? new Promise((answer) => setTimeout(() => answer(api(r)), 1500))
        : api(r),
  );
  try {
    await waitFor("the token prompt", () => $('[data-testid="token-input"]'));
    enterToken(b, "s3cret");
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
    assert.ok(Date.now() - started < 1500, "the token was accepted before the late 401");
    await sleep(1500 - (Date.now() - started) + 500);
    assert.equal($('[data-testid="token-input"]'), null, "the late 401 re-opened the prompt");
    assert.doesNotMatch(document.body.textContent ?? "", /refused the token/);
    assert.ok($(`[data-testid="job-row"][data-job-id="${JOB}"]`));
  } finally {
    await stop();
  }
});

Deno.test("a wrong token re-opens the prompt saying it was refused; the right one closes it", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true, token: "s3cret" };
  const { b, stop } = await start(s, "#/");
  try {
    await waitFor("the token prompt", () => $('[data-testid="token-input"]'));
    enterToken(b, "wrong");
    await waitFor("'refused the token'", () => /refused the token/.test(text(".modal")));
    enterToken(b, "s3cret");
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
    await sleep(1200);
    assert.equal($('[data-testid="token-input"]'), null);
  } finally {
    await stop();
  }
});

Deno.test("while the token prompt is open the page sends no polls", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true, token: "s3cret" };
  const { b, stop } = await start(s, "#/");
  try {
    await waitFor("the token prompt", () => $('[data-testid="token-input"]'));
    await sleep(200);
    const before = b.requests.length;
    await sleep(2200);
    assert.deepEqual(
      b.requests.slice(before).map((r) => r.path),
      [],
      "requests sent while the token prompt was open",
    );
    enterToken(b, "s3cret");
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
  } finally {
    await stop();
  }
});

Deno.test("an API that stops answering leaves the last known state, one banner and slower polls", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true };
  const { b, stop } = await start(s, "#/");
  try {
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
    await waitFor("the worker row", () => $('[data-testid="worker-row"]'));
    b.setRoutes(() => {
      throw new TypeError("Failed to fetch");
    });
    const banner = await waitFor(
      "the unreachable banner",
      () => $('[data-testid="unreachable-banner"]'),
    );
    assert.match(
      banner.textContent ?? "",
      /^The coordinator stopped answering at \d\d:\d\d:\d\d \(a local job's dashboard ends with the job\)/,
    );
    await sleep(300);
    assert.equal($('[data-testid="error-banner"]'), null, "no 'Failed to fetch' banner");
    assert.equal(text(`[data-job-id="${JOB}"] [data-testid="job-status"]`), "RUNNING");
    assert.match(text(`[data-job-id="${JOB}"] [data-testid="stale-badge"]`), /unreachable/);
    assert.ok($('[data-testid="worker-row"]'), "the workers last known stay");
    const before = b.requests.length;
    await sleep(3000);
    assert.deepEqual(b.requests.slice(before).map((r) => r.path), [], "polls within 3 s");
    b.setRoutes(routes(s));
    await waitFor("the banner gone", () => $('[data-testid="unreachable-banner"]') === null, 7000);
    assert.equal($('[data-testid="stale-badge"]'), null);
    assert.equal(text(`[data-job-id="${JOB}"] [data-testid="job-status"]`), "RUNNING");
  } finally {
    await stop();
  }
});

Deno.test("an unknown job shows the API's error message in a banner", async () => {
  const { stop } = await start({ state: "RUNNING", savepointPolls: 0, jobs: true }, "#/jobs/nope");
  try {
    await waitFor("the banner", () => $('[data-testid="error-banner"]'));
    assert.equal(
      text('[data-testid="error-banner"]'),
      "Not found: /jobs/nope (HTTP 404 on /jobs/nope)",
    );
  } finally {
    await stop();
  }
});

Deno.test("an answer of an unexpected shape shows a banner naming the route and field", async () => {
  const s = { state: "RUNNING", savepointPolls: 0, jobs: true };
  const { b, stop } = await start(s, "#/");
  try {
    const api = routes(s);
    b.setRoutes((r) => r.path === "/taskmanagers" ? { workers: [] } : api(r));
    await waitFor("the banner", () => $('[data-testid="error-banner"]'));
    assert.equal(
      text('[data-testid="error-banner"]'),
      "unexpected answer: field 'taskmanagers' is missing (HTTP 200 on /taskmanagers)",
    );
    await waitFor("the job row", () => $(`[data-testid="job-row"][data-job-id="${JOB}"]`));
  } finally {
    await stop();
  }
});

Deno.test("an ended job's graph polls no live metrics and shows its vertices OK", async () => {
  const s = { state: "FINISHED", savepointPolls: 0, jobs: true };
  const { b, stop } = await start(s, `#/jobs/${JOB}`);
  try {
    await waitFor("the vertices", () => $$('[data-testid="vertex"]').length === 2);
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(b.requests.filter((r) => r.path.endsWith("/backpressure")).length, 0);
    assert.equal($$('[data-testid="vertex"][data-backpressure="OK"]').length, 2);
    assert.match(text('[data-vertex-id="v0"]'), /Out -/);
    assert.match(text('[data-vertex-id="v0"]'), /Back pressure not sampled/);
    assert.doesNotMatch(text('[data-vertex-id="v0"]'), /back-pressured/);
    assert.ok(!enabled('[data-testid="action-savepoint"]'), "no savepoint of an ended job");
    assert.equal(text('[data-testid="job-status"]'), "FINISHED");
  } finally {
    await stop();
  }
});
