/**
 * The dashboard's connection to the REST API in a simulated browser (Happy
 * DOM) against a fake REST API: the token prompt (a 401, a wrong token, a
 * late 401 of an older request, no polls while it is open) and an API that
 * stops answering (last known state, one banner, slower polls).
 */
import assert from "node:assert/strict";
import { type FakeBrowser, waitFor } from "./_fake_browser.ts";
import { $, click, JOB, routes, start, text } from "./_app_test_kit.ts";

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
