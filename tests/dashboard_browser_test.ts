/**
 * The web dashboard (issue 16, Flink's web UI) in a real browser: Debian's
 * Chromium, headless, driven by `playwright-core`, against a real cluster
 * (private NATS server, `cli.ts coordinator --rest-port 0 --rest-token T`,
 * one worker) running `tests/_dashboard_job.ts`, whose sink is slow so the
 * vertex before it is back-pressured HIGH; and against a local-mode job run
 * with `--ui` (`WEIR_UI_PORT=0`).
 *
 * The cluster test walks the pages as a user would, each step waiting on a
 * DOM condition (never a fixed sleep) and taking a screenshot:
 * 1. the page asks for the bearer token, says so when it is refused, and
 *    keeps the right one for a reload;
 * 2. the overview lists the job RUNNING and the worker;
 * 3. the job graph has every vertex of `GET /jobs/:jobid` and the edges of
 *    its plan; the vertex before the sink turns HIGH, the sink does not;
 *    clicking the vertex lists one row per subtask;
 * 4. the checkpoints tab shows a COMPLETED checkpoint the REST history has,
 *    and its per-subtask rows;
 * 5. a savepoint asks for confirmation and shows its path, the one the
 *    REST API gives;
 * 6. the exceptions tab is empty (or lists what the REST API lists, when
 *    a loaded machine made the job fail over by itself), then shows the
 *    failure the test injects, and the job runs again;
 * 7. cancel asks for confirmation and the job ends CANCELED, as the REST
 *    API agrees.
 * The page must raise no uncaught error meanwhile.
 *
 * Screenshots go to `docs/dashboard/` with `WEIR_DASHBOARD_SCREENSHOTS=1`
 * (see `tests/_dashboard_harness.ts`), else to a temporary directory.
 *
 * A missing `/usr/bin/chromium` fails the test, saying `apt-get install
 * chromium`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page } from "npm:playwright-core@1.57.0";
import {
  DASHBOARD_JOB,
  DASHBOARD_TIMEOUT_MS,
  DashboardCluster,
  type Json,
  launchChromium,
  openPage,
  pageText,
  Screenshots,
  waitForSelector,
  waitInPage,
} from "./_dashboard_harness.ts";
import { Proc } from "./_cluster.ts";
import { waitUntil } from "./_wait.ts";

const unique = () => crypto.randomUUID().slice(0, 8);

/** The selector of `[data-testid=<id>]` plus more attribute conditions. */
function testId(id: string, attributes: Record<string, string> = {}): string {
  return `[data-testid="${id}"]` +
    Object.entries(attributes).map(([k, v]) => `[${k}="${v}"]`).join("");
}

/** The rendered text (`innerText`) of the first element `selector` matches, trimmed ("" when none). */
async function textOf(page: Page, selector: string): Promise<string> {
  const located = page.locator(selector).first();
  if (await located.count() === 0) return "";
  return (await located.innerText({ timeout: 5_000 }).catch(() => "")).trim();
}

/** Waits until the job header's status reads `status`. */
async function waitForJobStatus(
  page: Page,
  status: string,
  rest: () => Promise<string> | string,
): Promise<void> {
  await waitInPage(
    page,
    async () => (await textOf(page, testId("job-status"))) === status,
    `job-status ${status}`,
    rest,
  );
}

Deno.test({
  name: "the dashboard shows a running job's graph with back pressure, its checkpoints and " +
    "exceptions, and cancels it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const browser = await launchChromium();
    const token = `t-${crypto.randomUUID()}`;
    const shots = await Screenshots.open();
    const flagDir = await Deno.makeTempDir({ prefix: "weir-dashboard-flag-" });
    const failFlag = join(flagDir, "fail");
    let cluster: DashboardCluster | undefined;
    try {
      cluster = await DashboardCluster.start({ token });
      const c = cluster;
      const name = `dashboard ${unique()}`;
      const jobId = await c.submit(name, ["--fail-flag", failFlag]);
      const job = await c.get(`/jobs/${jobId}`);
      const vertices = job.vertices as Json[];
      const { page, errors } = await openPage(browser);

      await t.step(
        "the page asks for the bearer token, refuses a wrong one and keeps it for a reload",
        async () => {
          await page.goto(`${c.base}/`);
          await waitForSelector(page, testId("token-input"), "the token prompt");
          await shots.take(page, "01-token");
          await page.locator(testId("token-input")).fill(`${token}-wrong`);
          await page.locator(testId("token-submit")).click();
          await waitInPage(
            page,
            async () => /refused the token/.test(await pageText(page)),
            "the prompt saying the token was refused",
          );
          assert.equal(await page.locator(testId("job-row")).count(), 0, "rows without the token");
          await page.locator(testId("token-input")).fill(token);
          await page.locator(testId("token-submit")).click();
          await waitForSelector(page, testId("job-row", { "data-job-id": jobId }), "the job's row");
          await page.reload();
          await waitForSelector(page, testId("job-row", { "data-job-id": jobId }), "the job's row");
          assert.equal(await page.locator(testId("token-input")).count(), 0, "asked again");
        },
      );

      await t.step("the overview lists the job RUNNING and the worker", async () => {
        const row = page.locator(testId("job-row", { "data-job-id": jobId }));
        await waitInPage(
          page,
          async () =>
            (await textOf(
              page,
              `${testId("job-row", { "data-job-id": jobId })} ${testId("job-status")}`,
            )) === "RUNNING",
          "the job's row RUNNING",
        );
        assert.ok((await row.textContent())!.includes(name), "the row names the job");
        await waitForSelector(
          page,
          testId("worker-row", { "data-worker-id": c.workerId }),
          `the worker ${c.workerId}`,
          async () => JSON.stringify(await c.get("/taskmanagers").catch(String)),
        );
        await shots.settle(page, 8_000);
        await shots.take(page, "02-overview");
      });

      const sum = vertices.find((v) => (v.name as string).startsWith("sum"))!;
      const sink = vertices.find((v) => (v.name as string) === "slow sink")!;
      assert.ok(sum !== undefined && sink !== undefined, JSON.stringify(vertices));

      await t.step(
        "the graph shows every vertex and edge; the vertex before the slow sink is HIGH",
        async () => {
          await page.locator(`${testId("job-row", { "data-job-id": jobId })} a`).first().click();
          await waitForSelector(page, testId("job-graph"), "the job graph");
          assert.equal(new URL(page.url()).hash, `#/jobs/${jobId}`);
          for (const v of vertices) {
            const vertex = testId("vertex", { "data-vertex-id": v.id as string });
            await waitForSelector(page, vertex, `vertex ${v.id}`);
            const text = await textOf(page, vertex);
            for (const operator of (v.name as string).replace(/^Source: /, "").split(" -> ")) {
              assert.ok(text.includes(operator), `vertex ${v.id} shows '${operator}': ${text}`);
            }
            assert.match(
              text,
              new RegExp(`\\b${v.parallelism}\\b`),
              `vertex ${v.id} shows its parallelism ${v.parallelism}: ${text}`,
            );
          }
          assert.equal(await page.locator(testId("vertex")).count(), vertices.length);
          const plan = (await c.get(`/jobs/${jobId}/plan`)).plan as Json;
          const edges = (plan.nodes as Json[]).reduce(
            (n, node) => n + ((node.inputs as Json[] | undefined)?.length ?? 0),
            0,
          );
          assert.equal(edges, vertices.length - 1, "a linear job");
          assert.equal(await page.locator(testId("edge")).count(), edges);
          await waitForSelector(
            page,
            testId("vertex", { "data-vertex-id": sum.id as string, "data-backpressure": "HIGH" }),
            `vertex ${sum.id} (${sum.name}) back-pressured HIGH`,
            async () =>
              `REST: ${
                JSON.stringify(await c.get(`/jobs/${jobId}/vertices/${sum.id}/backpressure`))
              }`,
          );
          const sinkLevel = await page.locator(
            testId("vertex", { "data-vertex-id": sink.id as string }),
          )
            .getAttribute("data-backpressure");
          assert.ok(sinkLevel === "OK" || sinkLevel === "LOW", `the sink is ${sinkLevel}`);
          assert.equal(await textOf(page, testId("job-status")), "RUNNING");
          await shots.settle(page, 10_000);
          await shots.take(page, "03-job-graph");
        },
      );

      await t.step("clicking a vertex lists its subtasks", async () => {
        await page.locator(testId("vertex", { "data-vertex-id": sum.id as string })).click();
        await waitForSelector(page, testId("vertex-detail"), "the vertex detail");
        await waitInPage(
          page,
          async () =>
            await page.locator(`${testId("vertex-detail")} ${testId("subtask-row")}`).count() ===
              sum.parallelism,
          `${sum.parallelism} subtask rows`,
        );
        await shots.settle(page, 5_000);
        await shots.take(page, "04-vertex-detail");
      });

      await t.step("the checkpoints tab shows completed checkpoints the REST API has", async () => {
        await page.locator(testId("tab-checkpoints")).click();
        await waitForSelector(page, testId("checkpoint-counts"), "the checkpoint counts");
        assert.equal(new URL(page.url()).hash, `#/jobs/${jobId}/checkpoints`);
        await waitForSelector(page, testId("checkpoint-config"), "the checkpoint configuration");
        const completed = testId("checkpoint-row", { "data-status": "COMPLETED" });
        await waitForSelector(
          page,
          completed,
          "a COMPLETED checkpoint",
          async () => `REST: ${JSON.stringify((await c.get(`/jobs/${jobId}/checkpoints`)).counts)}`,
        );
        const shown = await page.locator(completed).evaluateAll((rows) =>
          rows.map((r) => Number(r.getAttribute("data-checkpoint-id")))
        );
        const history = (await c.get(`/jobs/${jobId}/checkpoints`)).history as Json[];
        const restCompleted = history.filter((h) => h.status === "COMPLETED").map((h) => h.id);
        const both = shown.filter((id) => restCompleted.includes(id));
        assert.ok(both.length > 0, `shown ${shown}, REST history ${restCompleted}`);
        assert.match(await textOf(page, testId("checkpoint-config")), /500\s*ms|0\.5\s*s/);
        await shots.settle(page, 6_000);
        await shots.take(page, "05-checkpoints");
        await page.locator(testId("checkpoint-row", { "data-checkpoint-id": String(both[0]) }))
          .click();
        await waitForSelector(page, testId("checkpoint-subtask-row"), "checkpoint subtask rows");
        await page.locator(testId("checkpoint-subtask-row")).first().scrollIntoViewIfNeeded();
        await shots.take(page, "06-checkpoint-detail");
      });

      await t.step(
        "a savepoint asks for confirmation, shows its progress and its path",
        async () => {
          await page.locator(testId("action-savepoint")).click();
          await waitForSelector(page, testId("confirm-dialog"), "the confirmation dialog");
          await page.locator(testId("confirm-ok")).click();
          await waitInPage(
            page,
            async () =>
              /^Savepoint completed: /.test(await textOf(page, testId("action-progress"))),
            "'Savepoint completed: <path>'",
            async () =>
              `REST: ${JSON.stringify((await c.get(`/jobs/${jobId}/checkpoints`)).latest)}`,
          );
          const path = (await textOf(page, testId("action-progress")))
            .replace(/^Savepoint completed: /, "");
          const latest = (await c.get(`/jobs/${jobId}/checkpoints`)).latest as Json;
          assert.equal((latest.savepoint as Json).external_path, path);
          const savepointRow = testId("checkpoint-row", {
            "data-checkpoint-id": String((latest.savepoint as Json).id),
            "data-status": "COMPLETED",
          });
          await waitForSelector(page, savepointRow, "the savepoint's history row COMPLETED");
          await shots.take(page, "07-savepoint");
        },
      );

      await t.step("the exceptions tab is empty, then shows an injected failure", async () => {
        await page.locator(testId("tab-exceptions")).click();
        await waitInPage(
          page,
          () => new URL(page.url()).hash === `#/jobs/${jobId}/exceptions`,
          "the exceptions route",
        );
        // Under heavy load a worker can miss heartbeats and the job fail over by
        // itself: the page must then list what the REST API lists.
        const before = await c.get(`/jobs/${jobId}/exceptions`);
        const earlier = ((before.exceptionHistory as Json).entries as Json[]).length;
        if (earlier === 0) {
          await waitInPage(
            page,
            async () => /no (exceptions|failures)/i.test(await textOf(page, "main")),
            "the empty exceptions page",
          );
        }
        await waitInPage(
          page,
          async () => await page.locator(testId("exception-row")).count() >= earlier,
          `${earlier} exception rows, as REST has`,
        );
        assert.equal(await page.locator(testId("exception-row")).count(), earlier);
        const attempt = (await c.get(`/jobs/${jobId}`)).attempt as number;
        await Deno.writeTextFile(failFlag, "");
        await waitForSelector(
          page,
          `${testId("exception-row")}:has-text("planned failure")`,
          "the injected failure's row",
          async () =>
            `REST: ${JSON.stringify(await c.get(`/jobs/${jobId}/exceptions`))}\n${c.logs()}`,
        );
        let details: Json = {};
        await waitUntil(async () => {
          details = await c.get(`/jobs/${jobId}`);
          return (details.attempt as number) > attempt && details.state === "RUNNING";
        }, {
          timeoutMs: DASHBOARD_TIMEOUT_MS,
          pollMs: 250,
          missing: () => `the job did not run again after attempt ${attempt}: ${details.state}`,
        });
        await waitForJobStatus(
          page,
          "RUNNING",
          async () => JSON.stringify(await c.get(`/jobs/${jobId}`)),
        );
        await shots.take(page, "08-exceptions");
      });

      await t.step("cancel asks for confirmation and ends the job CANCELED", async () => {
        await page.locator(testId("action-cancel")).click();
        await waitForSelector(page, testId("confirm-dialog"), "the confirmation dialog");
        await shots.take(page, "09-cancel-confirm");
        await page.locator(testId("confirm-cancel")).click();
        await waitInPage(
          page,
          async () => await page.locator(testId("confirm-dialog")).count() === 0,
          "the dialog closed",
        );
        assert.equal((await c.get(`/jobs/${jobId}`)).state, "RUNNING", "dismissed: still running");
        await page.locator(testId("action-cancel")).click();
        await page.locator(testId("confirm-ok")).click();
        await waitForJobStatus(
          page,
          "CANCELED",
          async () => JSON.stringify(await c.get(`/jobs/${jobId}`)),
        );
        assert.equal((await c.get(`/jobs/${jobId}`)).state, "CANCELED");
        await shots.take(page, "10-canceled");
        await page.goto(`${c.base}/#/`);
        await waitInPage(
          page,
          async () =>
            (await textOf(
              page,
              `${testId("job-row", { "data-job-id": jobId })} ${testId("job-status")}`,
            )) === "CANCELED",
          "the overview's row CANCELED",
        );
      });
      assert.deepEqual(errors, [], "uncaught errors in the page");
    } catch (error) {
      if (cluster !== undefined) console.error(cluster.logs());
      throw error;
    } finally {
      await browser.close();
      await shots.close();
      await cluster?.stop();
      await Deno.remove(flagDir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name: "a local job run with --ui serves the dashboard of its graph",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const browser = await launchChromium();
    const directory = await Deno.makeTempDir({ prefix: "weir-dashboard-local-" });
    const job = new Proc("local job", [
      "run",
      "-A",
      DASHBOARD_JOB,
      "--ui",
      "--name",
      `dashboard local ${unique()}`,
      "--checkpoint-dir",
      directory,
    ], { WEIR_UI_PORT: "0" });
    try {
      await job.waitFor(
        /weir: dashboard at http:\/\/127\.0\.0\.1:\d+\/ \(job [^)]+\)/,
        DASHBOARD_TIMEOUT_MS,
      );
      const [, base, jobId] = /weir: dashboard at (http:\/\/127\.0\.0\.1:\d+)\/ \(job ([^)]+)\)/
        .exec(job.output)!;
      const res = await fetch(`${base}/jobs/${jobId}`);
      assert.equal(res.status, 200);
      const vertices = (await res.json()).vertices as Json[];
      const { page, errors } = await openPage(browser);
      await page.goto(`${base}/#/jobs/${jobId}`);
      await waitForSelector(page, testId("job-graph"), "the job graph");
      for (const v of vertices) {
        await waitForSelector(
          page,
          testId("vertex", { "data-vertex-id": v.id as string }),
          `vertex ${v.id}`,
        );
      }
      await waitForJobStatus(page, "RUNNING", () => job.output);
      await page.goto(`${base}/#/`);
      await waitForSelector(
        page,
        testId("worker-row", { "data-worker-id": "local" }),
        "the worker local",
      );
      const cancel = await fetch(`${base}/jobs/${jobId}?mode=cancel`, { method: "PATCH" });
      assert.equal(cancel.status, 202, await cancel.text());
      await job.endWithin(DASHBOARD_TIMEOUT_MS);
      assert.deepEqual(errors, [], "uncaught errors in the page");
    } catch (error) {
      console.error(job.output);
      throw error;
    } finally {
      await browser.close();
      await job.kill("SIGKILL").catch(() => {});
      await Deno.remove(directory, { recursive: true }).catch(() => {});
    }
  },
});
