/**
 * The dashboard's views in a simulated browser (Happy DOM) against a fake
 * REST API: the DOM contract the browser test relies on (`data-testid`s,
 * `data-backpressure`, ...), the token prompt, error banners, the actions'
 * requests and progress. The views poll every second, so some steps wait
 * a second or two.
 */
import assert from "node:assert/strict";
import { waitFor } from "./_fake_browser.ts";
import { $, $$, click, enabled, JOB, routes, start, text } from "./_app_test_kit.ts";

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
