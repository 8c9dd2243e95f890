/**
 * What the cluster client prints while it polls a job's status: once that
 * the coordinator waits for slots, and after a restart the attempt that
 * failed (not the new attempt's own failure, which the status may already
 * carry while it restarts again). A scripted coordinator answers the status
 * requests over an in-process bus.
 *
 * @module
 */

import assert from "node:assert/strict";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { decode, encode } from "../runtime/actor/codec.ts";
import { awaitJob } from "../runtime/cluster/client.ts";
import {
  JOB_STATUS_SUBJECT,
  type JobStatus,
  type JobStatusReply,
} from "../runtime/cluster/cluster_protocol.ts";
import type { JobExecutionResult } from "../runtime/cluster/job_result.ts";

/** Runs `body` while collecting what Weir logs (it logs on `console.error`). */
async function capturingLog<R>(body: () => Promise<R>): Promise<{ value: R; log: string[] }> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  };
  try {
    return { value: await body(), log: lines };
  } finally {
    console.error = original;
  }
}

Deno.test("the cluster client says once that the job waits for slots, and names the failed attempt of a restart", async () => {
  const jobId = "client-status-probe";
  const base: JobStatus = {
    jobId,
    name: "probe",
    status: "RUNNING",
    attempt: 0,
    startedAt: 0,
    moduleUrl: "file:///probe.ts",
  };
  const waiting = "waiting for slots to deploy attempt 0 (2 subtasks) on: 0 registered, " +
    "at least 1 needed; the attempt fails after 60000 ms without one";
  const result = { jobId, jobName: "probe", restarts: 1 } as unknown as JobExecutionResult;
  const script: JobStatusReply[] = [
    { ok: true, status: { ...base, waitingForSlots: waiting } },
    { ok: true, status: { ...base, waitingForSlots: waiting } },
    { ok: true, status: base },
    {
      ok: true,
      status: {
        ...base,
        attempt: 1,
        // Attempt 1 failed too and restarts again: the status already says so.
        lastFailure: "RemoteTaskError: boom (v0#0, attempt 1)",
        restartedAfter: "attempt 0 failed: RemoteTaskError: boom (v0#0, attempt 0)",
      },
    },
    {
      ok: true,
      status: { ...base, status: "FINISHED", attempt: 1 },
      outcome: { t: "result", result },
    },
  ];
  const bus = new InProcessBus();
  const coordinator = bus.connect();
  const client = bus.connect();
  let asked = 0;
  coordinator.subscribe(JOB_STATUS_SUBJECT, (m) => {
    assert.deepEqual(decode(m.data), { jobId });
    const reply = script[Math.min(asked++, script.length - 1)]!;
    if (m.reply !== undefined) coordinator.publish(m.reply, encode(reply));
  });
  try {
    const { value, log } = await capturingLog(() => awaitJob(client, jobId, 1));
    assert.equal(value.jobId, jobId);
    assert.equal(asked, script.length);
    const waits = log.filter((l) => l.includes("waiting for slots"));
    assert.equal(waits.length, 1, log.join("\n"));
    assert.ok(waits[0]!.includes(waiting), waits[0]);
    const restarts = log.filter((l) => l.includes("restarted as attempt"));
    assert.equal(restarts.length, 1, log.join("\n"));
    assert.ok(
      restarts[0]!.endsWith(
        `job ${jobId} restarted as attempt 1 after attempt 0 failed: ` +
          "RemoteTaskError: boom (v0#0, attempt 0)",
      ),
      restarts[0],
    );
  } finally {
    await coordinator.close();
    await client.close();
  }
});

Deno.test("the cluster client says how many restarts happened between two polls, so attempt numbers never jump unexplained", async () => {
  const jobId = "client-restarts-probe";
  const base: JobStatus = {
    jobId,
    name: "probe",
    status: "RUNNING",
    attempt: 0,
    startedAt: 0,
    moduleUrl: "file:///probe.ts",
  };
  const result = { jobId, jobName: "probe", restarts: 3 } as unknown as JobExecutionResult;
  const script: JobStatusReply[] = [
    { ok: true, status: base },
    {
      ok: true,
      status: { ...base, attempt: 3, restartedAfter: "attempt 2 failed: RemoteTaskError: boom" },
    },
    {
      ok: true,
      status: { ...base, status: "FINISHED", attempt: 3 },
      outcome: { t: "result", result },
    },
  ];
  const bus = new InProcessBus();
  const coordinator = bus.connect();
  const client = bus.connect();
  let asked = 0;
  coordinator.subscribe(JOB_STATUS_SUBJECT, (m) => {
    const reply = script[Math.min(asked++, script.length - 1)]!;
    if (m.reply !== undefined) coordinator.publish(m.reply, encode(reply));
  });
  try {
    const { log } = await capturingLog(() => awaitJob(client, jobId, 1));
    const restarts = log.filter((l) => l.includes("restarted"));
    assert.equal(restarts.length, 1, log.join("\n"));
    assert.ok(
      restarts[0]!.endsWith(
        `job ${jobId} restarted 3 times since the last report, now as attempt 3; the last ` +
          "restart followed attempt 2 failed: RemoteTaskError: boom",
      ),
      restarts[0],
    );
  } finally {
    await coordinator.close();
    await client.close();
  }
});
