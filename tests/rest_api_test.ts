/**
 * The coordinator's REST API, Prometheus endpoint and `weir info` against
 * running jobs: a private NATS server, `cli.ts coordinator --rest-port 0
 * --rest-token T`, one worker process, and `tests/jobs/cluster_smoke.ts`
 * jobs (rate-limited, long enough to be stopped or cancelled by the test).
 *
 * Checks: the bearer token is enforced; every route answers with the shape
 * `runtime/cluster/rest/openapi.yaml` documents; live metrics move
 * (numRecordsIn grows) and checkpoints appear with their per-subtask
 * durations; `/metrics` parses as Prometheus text with Flink's names and
 * labels; `weir info` prints the job; a savepoint through
 * `POST /jobs/:jobid/savepoints` completes and its status route gives the
 * path; `POST /jobs/:jobid/stop` stops a job with a savepoint; `PATCH
 * /jobs/:jobid?mode=cancel` ends a job CANCELED; bad input gets 400/404.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, REPO_ROOT } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";

const CLI = join(REPO_ROOT, "cli.ts");
const JOB = join(REPO_ROOT, "tests/jobs/cluster_smoke.ts");
const TIMEOUT_MS = 120_000;

type Json = Record<string, unknown>;

/** One sample line of the Prometheus text format: name, labels, value. */
interface PromSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/**
 * Parses the Prometheus text exposition format strictly enough to fail on
 * anything malformed: `# HELP`/`# TYPE` comments, and samples
 * `name{label="value",...} number`.
 */
function parsePrometheus(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line === "") continue;
    if (line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`line ${i + 1} is not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2] !== undefined && m[2] !== "") {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
      let at = 0;
      while (at < m[2].length) {
        re.lastIndex = at;
        const l = re.exec(m[2]);
        if (l === null) throw new Error(`line ${i + 1} has malformed labels: ${line}`);
        labels[l[1]!] = l[2]!;
        at = re.lastIndex;
      }
    }
    const value = Number(m[3]);
    if (Number.isNaN(value) && m[3] !== "NaN") {
      throw new Error(`line ${i + 1} has a value that is not a number: ${line}`);
    }
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

Deno.test({
  name: "the coordinator's REST API serves a running job in Flink's shapes, " +
    "and cancels, savepoints and stops it",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const nats = await startNatsServer({ jetstream: true });
    const token = `t-${crypto.randomUUID()}`;
    const bucket = `weir-rest-${crypto.randomUUID().slice(0, 8)}`;
    const procs: Proc[] = [];
    const start = (name: string, args: string[]) => {
      const p = new Proc(name, args);
      procs.push(p);
      return p;
    };
    const logs = () => procs.map((p) => `----- ${p.name}\n${p.output}`).join("\n");
    try {
      const coordinator = start("coordinator", [
        "run",
        "-A",
        CLI,
        "coordinator",
        "--nats",
        nats.url,
        "--checkpoint-bucket",
        bucket,
        "--rest-port",
        "0",
        "--rest-token",
        token,
      ]);
      await coordinator.waitFor(/weir coordinator: REST API on port \d+/, TIMEOUT_MS);
      const port = Number(/REST API on port (\d+)/.exec(coordinator.output)![1]);
      const base = `http://127.0.0.1:${port}`;
      const worker = start("worker", [
        "run",
        "-A",
        CLI,
        "worker",
        "--nats",
        nats.url,
        "--slots",
        "4",
        "--id",
        `rest-w-${crypto.randomUUID().slice(0, 6)}`,
      ]);
      await worker.waitFor(/weir worker .*slots/, TIMEOUT_MS);

      const call = async (path: string, init: RequestInit = {}, auth = `Bearer ${token}`) => {
        const res = await fetch(`${base}${path}`, {
          ...init,
          headers: { ...(auth === "" ? {} : { Authorization: auth }), ...init.headers },
        });
        const text = await res.text();
        return { status: res.status, text, type: res.headers.get("content-type") ?? "" };
      };
      const get = async (path: string): Promise<Json & Json[]> => {
        const r = await call(path);
        assert.equal(r.status, 200, `GET ${path}: ${r.status} ${r.text}`);
        return JSON.parse(r.text);
      };
      const runJob = async (): Promise<{ client: Proc; jobId: string }> => {
        const before = new Set(((await get("/jobs")).jobs as Json[]).map((j) => j.id));
        const client = start("client", [
          "run",
          "-A",
          JOB,
          "--nats",
          nats.url,
          "--count",
          "100000000",
          "--rate",
          "400",
        ]);
        let jobId: string | undefined;
        await waitUntil(async () => {
          const jobs = (await get("/jobs")).jobs as Json[];
          jobId = jobs.map((j) => j.id as string).find((id) => !before.has(id));
          return jobId !== undefined;
        }, { timeoutMs: TIMEOUT_MS, pollMs: 200, missing: () => `no new job in /jobs\n${logs()}` });
        return { client, jobId: jobId! };
      };

      await t.step("every route needs the bearer token", async () => {
        for (const path of ["/overview", "/jobs", "/metrics"]) {
          assert.equal((await call(path, {}, "")).status, 401, `${path} without a token`);
          assert.equal((await call(path, {}, "Bearer wrong")).status, 401, `${path}, wrong token`);
        }
      });

      const { client, jobId } = await runJob();
      const job = await get(`/jobs/${jobId}`);
      const vertices = job.vertices as Json[];
      const source = vertices[0]!.id as string;
      const last = vertices.at(-1)!.id as string;

      await t.step("job and vertex metrics move", async () => {
        const recordsIn = async () =>
          ((await get(`/jobs/${jobId}`)).vertices as Json[])
            .map((v) => (v.metrics as Json)["read-records"] as number)
            .reduce((a, b) => a + b, 0);
        let first = 0;
        await waitUntil(async () => (first = await recordsIn()) > 0, {
          timeoutMs: TIMEOUT_MS,
          pollMs: 250,
          missing: () => `numRecordsIn stays 0\n${logs()}`,
        });
        await waitUntil(async () => (await recordsIn()) > first, {
          timeoutMs: TIMEOUT_MS,
          pollMs: 250,
          missing: () => `numRecordsIn stays at ${first}`,
        });
        const metrics = await get(
          `/jobs/${jobId}/vertices/${last}/metrics?get=0.numRecordsIn,0.busyTimeMsPerSecond,9.nope`,
        );
        assert.deepEqual(metrics.map((m) => (m as Json).id), [
          "0.numRecordsIn",
          "0.busyTimeMsPerSecond",
        ]);
        assert.match((metrics[0] as Json).value as string, /^\d+$/);
      });

      await t.step("checkpoints appear with sizes and durations", async () => {
        let stats: Json = {};
        await waitUntil(async () => {
          stats = await get(`/jobs/${jobId}/checkpoints`);
          return ((stats.counts as Json).completed as number) >= 2;
        }, { timeoutMs: TIMEOUT_MS, pollMs: 250, missing: () => JSON.stringify(stats) });
        const counts = stats.counts as Json;
        for (const k of ["restored", "total", "in_progress", "completed", "failed"]) {
          assert.equal(typeof counts[k], "number", `counts.${k}`);
        }
        const completed = (stats.latest as Json).completed as Json;
        assert.equal(completed.className, "completed");
        assert.equal(completed.status, "COMPLETED");
        assert.equal(completed.checkpoint_type, "CHECKPOINT");
        assert.equal(completed.num_acknowledged_subtasks, completed.num_subtasks);
        assert.ok((completed.state_size as number) > 0, "state_size");
        assert.equal(typeof completed.external_path, "string");
        assert.ok((stats.history as Json[]).length >= 2);
        for (const k of ["checkpointed_size", "state_size", "end_to_end_duration"]) {
          assert.equal(typeof ((stats.summary as Json)[k] as Json).p99, "number", `summary.${k}`);
        }
        const id = completed.id as number;
        const details = await get(`/jobs/${jobId}/checkpoints/details/${id}`);
        assert.equal(details.id, id);
        assert.deepEqual(
          Object.keys(details.tasks as Json).sort(),
          vertices.map((v) => v.id).sort(),
        );
        const sub = await get(`/jobs/${jobId}/checkpoints/details/${id}/subtasks/${last}`);
        const first = (sub.subtasks as Json[])[0]!;
        assert.equal(first.status, "completed");
        assert.equal(typeof (first.checkpoint as Json).sync, "number");
        assert.equal(typeof (first.checkpoint as Json).async, "number");
        assert.equal(typeof (first.alignment as Json).duration, "number");
        assert.equal(typeof first.start_delay, "number");
        const config = await get(`/jobs/${jobId}/checkpoints/config`);
        assert.equal(config.interval, 200);
        assert.equal(config.max_concurrent, 1);
      });

      await t.step("cluster, job and vertex routes answer in their documented shapes", async () => {
        const overview = await get("/overview");
        assert.equal(overview.taskmanagers, 1);
        assert.equal(overview["slots-total"], 4);
        assert.equal(overview["jobs-running"], 1);
        const jobs = await get("/jobs/overview");
        const line = (jobs.jobs as Json[]).find((j) => j.jid === jobId)!;
        assert.equal(line.state, "RUNNING");
        assert.equal(typeof (line.tasks as Json).total, "number");
        const d = await get(`/jobs/${jobId}`);
        assert.equal(d.state, "RUNNING");
        assert.equal(d.name, "cluster smoke");
        assert.equal(d["end-time"], -1);
        assert.equal(d.attempt, 0);
        for (const v of d.vertices as Json[]) {
          assert.equal(v.parallelism, 2);
          assert.equal(typeof v.name, "string");
          assert.equal(typeof (v.tasks as Json).RUNNING, "number");
          assert.deepEqual(v["subtask-attempts"], [0, 0]);
        }
        const vertex = await get(`/jobs/${jobId}/vertices/${source}`);
        assert.equal((vertex.subtasks as Json[]).length, 2);
        assert.equal((vertex.subtasks as Json[])[0]!.status, "RUNNING");
        assert.deepEqual((vertex.subtasks as Json[]).map((s) => s.attempt), [0, 0]);
        assert.equal(typeof (vertex.subtasks as Json[])[0]!["taskmanager-id"], "string");
        const bp = await get(`/jobs/${jobId}/vertices/${source}/backpressure`);
        assert.equal(bp.status, "ok");
        assert.match(bp["backpressure-level"] as string, /^(ok|low|high)$/);
        for (const s of bp.subtasks as Json[]) {
          assert.equal(typeof s.ratio, "number");
          assert.equal(typeof s.busyRatio, "number");
        }
        const wms = await get(`/jobs/${jobId}/vertices/${last}/watermarks`);
        assert.deepEqual(
          wms.map((w) => (w as Json).id).sort(),
          [
            "0.currentInputWatermark",
            "0.currentOutputWatermark",
            "1.currentInputWatermark",
            "1.currentOutputWatermark",
          ],
        );
        // The job has no watermarks: Flink's Long.MIN_VALUE.
        assert.equal((wms[0] as Json).value, "-9223372036854775808");
        const available = await get(`/jobs/${jobId}/vertices/${source}/metrics`);
        assert.ok(available.some((m) => (m as Json).id === "1.backPressuredTimeMsPerSecond"));
        const agg = await get(
          `/jobs/${jobId}/vertices/${source}/subtasks/metrics?get=numRecordsOut&agg=sum,max`,
        );
        assert.equal((agg[0] as Json).id, "numRecordsOut");
        assert.ok(((agg[0] as Json).sum as number) > 0);
        const ex = await get(`/jobs/${jobId}/exceptions`);
        assert.equal(ex["root-exception"], null);
        assert.deepEqual((ex.exceptionHistory as Json).entries, []);
      });

      await t.step("bad input gets 400 or 404 naming what was wrong", async () => {
        const unknown = await call("/jobs/no-such-job");
        assert.equal(unknown.status, 404);
        assert.deepEqual(JSON.parse(unknown.text), { errors: ["Job no-such-job not found"] });
        assert.equal((await call(`/jobs/${jobId}/vertices/v999`)).status, 404);
        const badId = await call(`/jobs/${jobId}/checkpoints/details/abc`);
        assert.equal(badId.status, 400);
        assert.match(
          badId.text,
          /'checkpointid' must be a non-negative integer: current value is 'abc'/,
        );
        const badMode = await call(`/jobs/${jobId}?mode=terminate`, { method: "PATCH" });
        assert.equal(badMode.status, 400);
        assert.match(badMode.text, /'mode' must be 'cancel'.*'terminate'/);
        const badField = await call(`/jobs/${jobId}/savepoints`, {
          method: "POST",
          body: JSON.stringify({ "target-dir": "x" }),
        });
        assert.equal(badField.status, 400);
        assert.match(badField.text, /unknown field\(s\) 'target-dir'/);
        assert.equal((await call(`/jobs/${jobId}/savepoints/0123`)).status, 404);
        assert.equal((await call("/nope")).status, 404);
      });

      await t.step("/metrics is Prometheus text with Flink's names and labels", async () => {
        const r = await call("/metrics");
        assert.equal(r.status, 200);
        assert.match(r.type, /^text\/plain/);
        const samples = parsePrometheus(r.text);
        const of = (name: string) => samples.filter((s) => s.name === name);
        const recordsIn = of("flink_taskmanager_job_task_numRecordsIn")
          .filter((s) => s.labels.job_id === jobId);
        assert.equal(recordsIn.length, 4, r.text);
        for (const s of recordsIn) {
          assert.equal(s.labels.job_name, "cluster smoke");
          assert.match(s.labels.subtask_index!, /^[01]$/);
          assert.ok(vertices.some((v) => v.id === s.labels.task_id));
          assert.equal(typeof s.labels.task_name, "string");
        }
        for (
          const name of [
            "flink_taskmanager_job_task_busyTimeMsPerSecond",
            "flink_taskmanager_job_task_idleTimeMsPerSecond",
            "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
            "flink_taskmanager_job_task_numRecordsOutPerSecond",
            "flink_taskmanager_job_task_currentInputWatermark",
          ]
        ) assert.equal(of(name).length, 4, name);
        const completed = of("flink_jobmanager_job_numberOfCompletedCheckpoints")[0]!;
        assert.equal(completed.labels.job_id, jobId);
        assert.ok(completed.value >= 2);
        assert.equal(of("flink_jobmanager_numRunningJobs")[0]!.value, 1);
        assert.equal(of("flink_jobmanager_taskSlotsTotal")[0]!.value, 4);
      });

      await t.step("weir info prints the job", async () => {
        const info = start("info", ["run", "-A", CLI, "info", jobId, "--nats", nats.url]);
        const status = await info.endWithin(TIMEOUT_MS);
        assert.equal(status.code, 0, info.output);
        assert.match(info.output, new RegExp(`job ${jobId} 'cluster smoke'`));
        assert.match(info.output, /status: RUNNING, attempt 0, restarts 0/);
        for (const v of vertices) {
          // Both subtasks on attempt 0 (the ATTEMPTS column), then records in and out.
          assert.match(info.output, new RegExp(`${v.id}\\t2\\t0,0\\t\\d+\\t\\d+\\t`));
        }
        assert.match(info.output, /checkpoints: \d+ triggered, \d+ completed/);
        assert.match(info.output, /\n\d+\tCOMPLETED\tCHECKPOINT\t(\d+ ms|[\d.]+ s)\t\d+ B\t\d+ B/);
        assert.match(info.output, /last failure: none/);
        const unknown = start("info", [
          "run",
          "-A",
          CLI,
          "info",
          "no-such-job",
          "--nats",
          nats.url,
        ]);
        assert.equal((await unknown.endWithin(TIMEOUT_MS)).code, 1);
        assert.match(unknown.output, /no job no-such-job/);
      });

      await t.step("a savepoint through POST completes and its status gives the path", async () => {
        const r = await call(`/jobs/${jobId}/savepoints`, { method: "POST", body: "{}" });
        assert.equal(r.status, 202, r.text);
        const trigger = JSON.parse(r.text)["request-id"] as string;
        assert.match(trigger, /^[0-9a-f]{32}$/);
        let status: Json = {};
        await waitUntil(async () => {
          status = await get(`/jobs/${jobId}/savepoints/${trigger}`);
          return (status.status as Json).id === "COMPLETED";
        }, { timeoutMs: TIMEOUT_MS, pollMs: 250, missing: () => JSON.stringify(status) });
        const location = (status.operation as Json).location as string;
        assert.match(location, new RegExp(`^nats-object-store://${bucket}/savepoint-`));
        const cp = await get(`/jobs/${jobId}/checkpoints`);
        const savepoint = (cp.latest as Json).savepoint as Json;
        assert.equal(savepoint.is_savepoint, true);
        assert.equal(savepoint.external_path, location);
      });

      await t.step("PATCH ?mode=cancel ends the job CANCELED", async () => {
        const r = await call(`/jobs/${jobId}?mode=cancel`, { method: "PATCH" });
        assert.equal(r.status, 202, r.text);
        await waitUntil(async () => (await get(`/jobs/${jobId}`)).state === "CANCELED", {
          timeoutMs: TIMEOUT_MS,
          pollMs: 250,
          missing: () => `job ${jobId} not CANCELED`,
        });
        await client.endWithin(TIMEOUT_MS);
        const again = await call(`/jobs/${jobId}?mode=cancel`, { method: "PATCH" });
        assert.equal(again.status, 409);
        const metrics = parsePrometheus((await call("/metrics")).text);
        assert.equal(metrics.filter((s) => s.labels.job_id === jobId).length, 0);
      });

      await t.step("POST /stop stops a job with a savepoint; it ends FINISHED", async () => {
        const second = await runJob();
        await waitUntil(
          async () =>
            (((await get(`/jobs/${second.jobId}/checkpoints`)).counts as Json)
              .completed as number) >= 1,
          { timeoutMs: TIMEOUT_MS, pollMs: 250, missing: () => `no checkpoint of ${second.jobId}` },
        );
        const r = await call(`/jobs/${second.jobId}/stop`, {
          method: "POST",
          body: JSON.stringify({ drain: false }),
        });
        assert.equal(r.status, 202, r.text);
        const trigger = JSON.parse(r.text)["request-id"] as string;
        let status: Json = {};
        await waitUntil(async () => {
          status = await get(`/jobs/${second.jobId}/savepoints/${trigger}`);
          return (status.status as Json).id === "COMPLETED";
        }, { timeoutMs: TIMEOUT_MS, pollMs: 250, missing: () => JSON.stringify(status) });
        assert.match((status.operation as Json).location as string, /^nats-object-store:\/\//);
        await waitUntil(async () => (await get(`/jobs/${second.jobId}`)).state === "FINISHED", {
          timeoutMs: TIMEOUT_MS,
          pollMs: 250,
          missing: () => `job ${second.jobId} not FINISHED\n${logs()}`,
        });
        await second.client.endWithin(TIMEOUT_MS);
        const overview = await get("/overview");
        assert.equal(overview["jobs-finished"], 1);
        assert.equal(overview["jobs-cancelled"], 1);
      });
    } catch (error) {
      console.error(logs());
      throw error;
    } finally {
      for (const p of procs.reverse()) {
        try {
          p.child.kill("SIGTERM");
        } catch {
          // ended
        }
        await p.endWithin(15_000).catch(() => {});
      }
      await nats.stop();
    }
  },
});
