/**
 * `weir info JOB`: a job's status, attempt and restarts, its vertices with
 * their parallelism, their subtasks' attempts and record counts, its latest
 * checkpoints (id, status, type, duration, size), its last failure and its
 * latest failovers (region or full, attempts, failed subtask). It asks the coordinator over
 * NATS (`weir.cluster.info`), which answers with the REST API's bodies of
 * `GET /jobs/:jobid`, `GET /jobs/:jobid/checkpoints` and
 * `GET /jobs/:jobid/exceptions` (`runtime/cluster/rest/job_info.ts`), so the
 * two show the same data. `--json` prints that answer.
 *
 * @module
 */

import { connectNats } from "../runtime/actor/nats_connect.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import type { Transport } from "../runtime/actor/types.ts";
import { askCoordinator } from "../runtime/cluster/client.ts";
import { INFO_SUBJECT } from "../runtime/cluster/cluster_protocol.ts";
import { ClusterRequestError } from "../runtime/cluster/job_result.ts";
import {
  formatJobInfo,
  type JobInfo,
  type JobInfoReply,
} from "../runtime/cluster/rest/job_info.ts";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  NATS_HELP,
  NATS_OPTIONS,
  parseCommandArgs,
  positiveInt,
  requireNats,
  UsageError,
} from "./_args.ts";

/**
 * Asks the coordinator for job `jobId`'s info (`weir info`).
 * @throws {ClusterRequestError} when no coordinator answers or it does not know the job.
 */
export async function requestJobInfo(transport: Transport, jobId: string): Promise<JobInfo> {
  const reply = await askCoordinator<JobInfoReply>(transport, INFO_SUBJECT, { jobId });
  if (!reply.ok) throw new ClusterRequestError(`Cannot show job ${jobId}: ${reply.error}`);
  return reply.info;
}

/** `weir info JOB`. */
export const infoCommand: Command = {
  summary: "info JOB      show a job: status, vertices, latest checkpoints, last failure",
  help: `usage: weir info JOB --nats URL [--checkpoints N] [--json]

Shows job JOB: its status, attempt and restarts, every vertex with its
parallelism, the attempt each subtask runs as (a region failover restarts,
and renumbers, only the failed subtask's region; - while it restarts) and
records in and out (from the subtasks' latest per-second metrics), its
latest N checkpoints (default 5: id, status, type, duration, bytes written
and full state size), its last failure and its latest N failovers (the
region, or full; the attempt that failed and the one it restarted as; the
failed subtask; the failure). It reads the same
data as the coordinator's REST API (GET /jobs/JOB, /jobs/JOB/checkpoints,
/jobs/JOB/exceptions); --json prints those three bodies as one JSON object.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("info", args, {
      ...NATS_OPTIONS,
      json: { type: "boolean" },
      checkpoints: { type: "string" },
    });
    const jobId = positionals[0];
    if (jobId === undefined) throw new UsageError("weir info needs a job id (see weir list)");
    atMostPositionals("info", positionals, 1, "one job id");
    const latest = positiveInt(values.checkpoints, "--checkpoints", 5);
    const nats = requireNats("info", args);
    const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
    try {
      const info = await requestJobInfo(transport, jobId);
      console.log(values.json ? JSON.stringify(info) : formatJobInfo(info, latest));
      return 0;
    } finally {
      await transport.close();
    }
  },
};
