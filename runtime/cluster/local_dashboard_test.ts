import assert from "node:assert/strict";
import { join } from "node:path";
import { startEndlessLocalJob } from "./_local_dashboard_test_kit.ts";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_UI_PORT,
  LocalDashboard,
  localDashboardPort,
  UI_PORT_ENV,
} from "./local_dashboard.ts";
import { localJobEnd } from "./local_rest_backend.ts";
import { JobFailedError } from "./job_result.ts";
import { summarizeJobGraph } from "../graph/job_graph_summary.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const UI_JOB = fileURLToPath(new URL("./testdata/ui_job.ts", import.meta.url));
/** How long a wait lasts: generous, as a cold `deno run` of a job module compiles Weir first. */
const TIMEOUT_MS = 120_000;

/** A parsed JSON body, walked freely by the assertions. */
// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

async function getJson(base: string, path: string): Promise<Loose> {
  const res = await fetch(new URL(path, base));
  const body = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(body)}`);
  return body;
}

/** Polls `probe` every 100 ms until it returns a value other than `undefined`. */
async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  detail: () => string = () => "",
): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `timed out after ${TIMEOUT_MS} ms waiting for ${what} (last error: ${last})\n${detail()}`,
  );
}

Deno.test("localDashboardPort: --ui alone serves on 8081, WEIR_UI_PORT alone on its port, a bad value is a RangeError naming it", () => {
  assert.equal(localDashboardPort([], undefined), undefined);
  assert.equal(localDashboardPort(["--other"], ""), undefined);
  assert.equal(localDashboardPort(["in.csv", "--ui"], undefined), DEFAULT_UI_PORT);
  assert.equal(localDashboardPort([], "0"), 0);
  assert.equal(localDashboardPort(["--ui"], "9099"), 9099);
  assert.equal(localDashboardPort([], " 65535 "), 65535);
  for (const bad of ["abc", "-1", "65536", "80.5", "1e3"]) {
    assert.throws(
      () => localDashboardPort(["--ui"], bad),
      (e: Error) =>
        e instanceof RangeError &&
        e.message === `${UI_PORT_ENV} must be an integer from 0 to 65535 (0 picks a free ` +
            `port): current value is ${JSON.stringify(bad)}`,
      bad,
    );
  }
});

Deno.test("localJobEnd: resolved is FINISHED, a cancellation CANCELED, any other rejection FAILED", () => {
  assert.deepEqual(localJobEnd({ ok: true }), { status: "FINISHED" });
  assert.deepEqual(
    localJobEnd({ ok: false, error: new JobFailedError("Job j-1 was cancelled") }),
    { status: "CANCELED", error: "JobFailedError: Job j-1 was cancelled" },
  );
  assert.deepEqual(
    localJobEnd({ ok: false, error: new JobFailedError("Job j-1 failed: boom") }),
    { status: "FAILED", error: "JobFailedError: Job j-1 failed: boom" },
  );
  assert.deepEqual(localJobEnd({ ok: false, error: "odd" }), { status: "FAILED", error: "odd" });
});

Deno.test("LocalDashboard serves a local run: the dashboard, its job RUNNING with plan and metrics, the worker 'local', a savepoint, then the cancel", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-local-dashboard-" });
  await Deno.mkdir(join(dir, "dist"));
  await Deno.writeTextFile(join(dir, "dist", "index.html"), "<!doctype html><title>weir</title>");
  const dashboard = LocalDashboard.start({ port: 0, dashboardRoot: join(dir, "dist") });
  const base = dashboard.url;
  try {
    // Bound before the job: the worker, no job.
    assert.deepEqual((await getJson(base, "/jobs/overview")).jobs, []);
    const html = await fetch(base);
    assert.equal(html.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(await html.text(), "<!doctype html><title>weir</title>");

    const { job, graph, checkpointing } = await startEndlessLocalJob(dir, "dashboard local run");
    const ended = job.result.then(() => "finished", (e: Error) => e.message);
    dashboard.attach({
      job,
      graph: summarizeJobGraph(graph),
      checkpointing,
      moduleUrl: "file:///dashboard-test.ts",
      args: ["--ui"],
    });

    const overview = (await getJson(base, "/jobs/overview")).jobs;
    assert.equal(overview.length, 1);
    assert.equal(overview[0].jid, job.jobId);
    assert.equal(overview[0].name, "dashboard local run");
    assert.equal(overview[0].state, "RUNNING");
    assert.equal(overview[0].attempt, 0);
    assert.equal(overview[0].numRestarts, 0);

    const details = await getJson(base, `/jobs/${job.jobId}`);
    assert.deepEqual(
      details.plan.nodes.map((n: Loose) => [n.parallelism, n.description, n.inputs?.[0]]),
      [
        [2, "Source: numbers", undefined],
        [1, "inc -> drop", {
          num: 0,
          id: details.vertices[0].id,
          ship_strategy: "HASH",
          exchange: "pipelined_bounded",
        }],
      ],
    );

    const workers = (await getJson(base, "/taskmanagers")).taskmanagers;
    assert.equal(workers.length, 1);
    assert.equal(workers[0].id, "local");
    assert.equal(workers[0].path.endsWith(`:${Deno.pid}`), true);
    assert.deepEqual([workers[0].slotsNumber, workers[0].freeSlots], [1, 0]);

    // The sink's vertex reports its rate once its subtasks sampled a second.
    const sinkVertex = details.vertices[1].id;
    await eventually("a records-in rate of the sink's vertex", async () => {
      const m = await getJson(
        base,
        `/jobs/${job.jobId}/vertices/${sinkVertex}/metrics?get=numRecordsInPerSecond`,
      );
      return m.length === 1 && Number(m[0].value) > 0 ? m : undefined;
    });

    const trigger = await fetch(new URL(`/jobs/${job.jobId}/savepoints`, base), {
      method: "POST",
    });
    assert.equal(trigger.status, 202);
    const requestId = (await trigger.json())["request-id"];
    const done = await eventually("the savepoint", async () => {
      const s = await getJson(base, `/jobs/${job.jobId}/savepoints/${requestId}`);
      return s.status.id === "COMPLETED" ? s : undefined;
    });
    assert.match(done.operation.location, /savepoints/);

    const cancel = await fetch(new URL(`/jobs/${job.jobId}?mode=cancel`, base), {
      method: "PATCH",
    });
    assert.equal(cancel.status, 202);
    await cancel.body?.cancel();
    assert.match(await ended, /was cancelled$/);
    const after = (await getJson(base, "/jobs/overview")).jobs[0];
    assert.equal(after.state, "CANCELED");
    assert.notEqual(after["end-time"], -1);
    const again = await fetch(new URL(`/jobs/${job.jobId}?mode=cancel`, base), {
      method: "PATCH",
    });
    assert.equal(again.status, 409);
    assert.deepEqual(await again.json(), { errors: [`job ${job.jobId} is already CANCELED`] });
    assert.throws(
      () =>
        dashboard.attach({
          job,
          graph: summarizeJobGraph(graph),
          checkpointing,
          moduleUrl: "file:///x.ts",
        }),
      /already serves job/,
    );
  } finally {
    await dashboard.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("LocalDashboard.start on a taken port fails naming the port and WEIR_UI_PORT", () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    assert.throws(
      () => LocalDashboard.start({ port }),
      (e: Error) =>
        e instanceof Deno.errors.AddrInUse &&
        e.message === `Cannot serve the dashboard on 127.0.0.1:${port}: the port is taken; ` +
            `set WEIR_UI_PORT to a free port, or to 0 to pick one`,
    );
  } finally {
    listener.close();
  }
});

/** Runs the job module `ui_job.ts` with `--ui` and the environment `env`. */
function runUiJob(dir: string, env: Record<string, string>) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", UI_JOB, join(dir, "checkpoints"), "--ui"],
    cwd: dir,
    env: { ...env, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("a job module run with --ui and WEIR_UI_PORT=0 serves its dashboard until a PATCH cancel ends it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-ui-job-" });
  const child = runUiJob(dir, { [UI_PORT_ENV]: "0" });
  const stderr: string[] = [];
  const reading = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      stderr.push(chunk);
    }
  })();
  try {
    const match = await eventually("the dashboard line on stderr", () => {
      const m = stderr.join("").match(
        /weir: dashboard at (http:\/\/127\.0\.0\.1:(\d+)\/) \(job (\S+)\)\n/,
      );
      return Promise.resolve(m ?? undefined);
    }, () => stderr.join(""));
    const [, base, , jobId] = match as unknown as [string, string, string, string];
    assert.match(stderr.join(""), new RegExp(`weir: running job ${jobId} 'ui job' locally`));
    const jobs = (await getJson(base, "/jobs/overview")).jobs;
    assert.deepEqual(jobs.map((j: Loose) => [j.jid, j.state]), [[jobId, "RUNNING"]]);
    const page = await fetch(base);
    let built = false;
    try {
      built = (await Deno.stat(join(REPO, "ui/dist/index.html"))).isFile;
    } catch {
      built = false;
    }
    if (built) {
      assert.equal(page.status, 200);
      assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
      assert.match(await page.text(), /<html|<!doctype html/i);
    } else {
      assert.equal(page.status, 404);
      assert.match((await page.json()).errors[0], /index\.html is missing.*deno task ui:build/);
    }
    const cancel = await fetch(new URL(`/jobs/${jobId}?mode=cancel`, base), { method: "PATCH" });
    assert.equal(cancel.status, 202);
    await cancel.body?.cancel();
    const status = await child.status;
    await reading;
    assert.equal(status.code, 1, stderr.join(""));
    assert.match(stderr.join(""), new RegExp(`error: Job ${jobId} was cancelled`));
    // The server closed with the job.
    await assert.rejects(() => fetch(new URL("/jobs/overview", base)));
  } finally {
    try {
      child.kill();
    } catch {
      // already ended
    }
    await child.stdout.cancel().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a job module run with a bad WEIR_UI_PORT fails before it runs, naming the variable and its value", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-ui-job-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", UI_JOB, join(dir, "checkpoints")],
      cwd: dir,
      env: { [UI_PORT_ENV]: "http", NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(out.stderr);
    assert.notEqual(out.code, 0);
    assert.match(
      text,
      /RangeError: WEIR_UI_PORT must be an integer from 0 to 65535 \(0 picks a free port\): current value is "http"/,
    );
    assert.doesNotMatch(text, /running job/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--ui is taken out of Deno.args before the job parses them: a job refusing unknown options runs with it and serves its dashboard", async () => {
  // examples/temperature_alert.ts parses its arguments with node:util's strict parseArgs.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/temperature_alert.ts", "examples/data/sensors.csv", "--ui"],
    cwd: REPO,
    env: { [UI_PORT_ENV]: "0", NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.match(stderr, /weir: dashboard at http:\/\/127\.0\.0\.1:\d+\/ \(job temperature-alert-/);
  assert.doesNotMatch(stderr, /Unknown option/);
  // The role module takes the flag out (and only it), once, on import.
  const probe = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const { uiFlagGiven } = await import(${
        JSON.stringify(new URL("./role.ts", import.meta.url).href)
      });` +
      "console.log(JSON.stringify([Deno.args, uiFlagGiven()]));",
      "a",
      "--ui",
      "--uix",
    ],
    stdin: "null",
  }).output();
  assert.equal(new TextDecoder().decode(probe.stdout).trim(), '[["a","--uix"],true]');
});
