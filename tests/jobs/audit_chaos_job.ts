/**
 * The audit job of the chaos test (`tests/chaos.ts`): the pipeline of
 * `examples/exactly_once_audit.ts`, with a fault injector that kills its own
 * worker process with SIGKILL at a fault point the chaos run has *armed*.
 *
 *     deno run -A tests/jobs/audit_chaos_job.ts --nats URL --source-stream S --sink-stream T \
 *       --txn-bucket B --arm-dir DIR [--rate R] [--checkpoint-interval MS] [--parallelism P]
 *       [--state-backend heap|sqlite] [--incremental] [--materialization-interval MS]
 *       [--retain-on-finish]
 *
 * `--state-backend` picks the keyed state backend (`setStateBackend`, default
 * heap); `--incremental` turns on incremental checkpoints (the changelog
 * backend, FLIP-158) that materialize at least every
 * `--materialization-interval` ms (default 1000, so that materializations and
 * the retention of shared blobs happen during the faults);
 * `--retain-on-finish` keeps the last checkpoint after the job ended.
 *
 * ## Arming
 *
 * The run arms a point by creating the file `<DIR>/arm-<point>`. The first
 * subtask, on any worker, to reach that point claims the file atomically
 * with a rename to `<DIR>/fired-<point>-<pid>-<vertex id>s<subtask>-a<attempt>-c<checkpoint>`
 * (only one rename of a file can succeed) and then sends SIGKILL to its own
 * process, the worker, as a crash would. Points, all on the vertex of the
 * semantic check and the sink (the one vertex with several inputs):
 *
 * - `alignment`: a barrier arrived on one input and the subtask blocks that
 *   input while waiting for the barrier on the others;
 * - `after-snapshot`: the sink pre-committed its transaction, before the
 *   subtask acknowledges the checkpoint;
 * - `before-commit`: the checkpoint completed, before the sink commits.
 *
 * The job prints `RESULT restarts=<n> checkpoints=<n>` when it ends.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type FaultPoint,
  type FaultSite,
  RestartStrategies,
  StreamExecutionEnvironment,
} from "../../mod.ts";
import { AUDIT_UIDS, buildAuditPipeline } from "../../examples/exactly_once_audit.ts";

/** The fault points the chaos run may arm. */
export const ARMABLE_POINTS = ["alignment", "after-snapshot", "before-commit"] as const;

/** One of {@linkcode ARMABLE_POINTS}. */
export type ArmablePoint = (typeof ARMABLE_POINTS)[number];

/** The file that arms `point` in `dir`. */
export function armFile(dir: string, point: ArmablePoint): string {
  return `${dir}/arm-${point}`;
}

/** The prefix of the file a fired `point` leaves in `dir`. */
export function firedPrefix(point: ArmablePoint): string {
  return `fired-${point}-`;
}

/**
 * Claims the armed `point`, if armed: renames its arm file; only one caller
 * can succeed.
 * @returns true when this caller claimed it.
 */
function claim(dir: string, point: ArmablePoint, site: FaultSite): boolean {
  const where =
    `${Deno.pid}-${site.vertexId}s${site.subtask}-a${site.attempt}-c${site.checkpointId}`;
  try {
    Deno.renameSync(armFile(dir, point), `${dir}/${firedPrefix(point)}${where}`);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

if (import.meta.main) {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      "source-stream": text,
      "sink-stream": text,
      "txn-bucket": text,
      "arm-dir": text,
      rate: text,
      "checkpoint-interval": text,
      parallelism: text,
      "state-backend": text,
      incremental: { type: "boolean" },
      "materialization-interval": text,
      "retain-on-finish": { type: "boolean" },
      unaligned: { type: "boolean" },
      "aligned-checkpoint-timeout": text,
    },
  });
  const required = (name: keyof typeof values): string => {
    const value = values[name];
    if (typeof value !== "string") throw new Error(`audit_chaos_job.ts needs --${name} VALUE`);
    return value;
  };
  const armDir = required("arm-dir");
  const backend = values["state-backend"] ?? "heap";
  if (backend !== "heap" && backend !== "sqlite") {
    throw new Error(`audit_chaos_job.ts: --state-backend must be heap or sqlite, not '${backend}'`);
  }
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(Number(values.parallelism ?? "2"))
    .enableCheckpointing(Number(values["checkpoint-interval"] ?? "300"), {
      // NATS restarts may drop a control message: expire the checkpoint soon, then fail over.
      timeoutMs: 10_000,
      incrementalCheckpoints: values.incremental ?? false,
      materializationIntervalMs: Number(values["materialization-interval"] ?? "1000"),
      retainOnFinish: values["retain-on-finish"] ?? false,
      unalignedCheckpoints: values.unaligned ?? false,
      alignedCheckpointTimeoutMs: Number(values["aligned-checkpoint-timeout"] ?? "0"),
    })
    .setRestartStrategy(RestartStrategies.fixedDelay(1_000_000, 200));
  if (backend === "sqlite") env.setStateBackend("sqlite");
  buildAuditPipeline(env, {
    connection: { servers: required("nats") },
    sourceStream: required("source-stream"),
    sinkStream: required("sink-stream"),
    txnBucket: required("txn-bucket"),
    ...(values.rate === undefined ? {} : { recordsPerSecond: Number(values.rate) }),
  });
  const sinkVertex = env.getJobGraph().vertices.find((v) =>
    v.operators.some((o) => o.uid === AUDIT_UIDS.sink)
  )!.id;
  env.setFaultInjector({
    task(point: FaultPoint, site: FaultSite) {
      if (site.vertexId !== sinkVertex || point === "before-snapshot") return;
      if (claim(armDir, point, site)) Deno.kill(Deno.pid, "SIGKILL");
    },
  });
  const result = await env.execute("audit chaos");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
