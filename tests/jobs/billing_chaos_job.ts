/**
 * The billing job of the billing chaos run (`tests/billing_chaos.ts`): the
 * pipeline of `examples/billing.ts` into the MariaDB XA sink, with the fault
 * injector of `audit_chaos_job.ts`: it kills its own worker process with
 * SIGKILL at a fault point the chaos run has *armed*.
 *
 *     deno run -A tests/jobs/billing_chaos_job.ts --nats URL --stream S --table T \
 *       --arm-dir DIR [--mariadb URL] [--rate R] [--checkpoint-interval MS] [--parallelism P]
 *
 * ## Arming
 *
 * As in `audit_chaos_job.ts` (same files, same claim by rename): the run
 * creates `<DIR>/arm-<point>`; the first subtask of the vertex that runs
 * the sink (and the per-account totals chained before it, the vertex with
 * several inputs) to reach that point renames it to
 * `<DIR>/fired-<point>-<pid>-<vertex id>s<subtask>-a<attempt>-c<checkpoint>`
 * and SIGKILLs its own worker:
 *
 * - `alignment`: a barrier arrived on one input; the others are awaited;
 * - `after-snapshot`: the sink prepared its XA transaction (`XA PREPARE`),
 *   before the subtask acknowledges the checkpoint;
 * - `before-commit`: the checkpoint completed, before `XA COMMIT`.
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
import { BILLING_UIDS, billingSinks, buildBillingPipeline } from "../../examples/billing.ts";
import { DEFAULT_MARIADB_URL, parseMariaDbUrl } from "../../examples/billing_tables.ts";
import { type ArmablePoint, armFile, firedPrefix } from "./audit_chaos_job.ts";

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
      stream: text,
      table: text,
      mariadb: text,
      "arm-dir": text,
      rate: text,
      "checkpoint-interval": text,
      parallelism: text,
    },
  });
  const required = (name: keyof typeof values): string => {
    const value = values[name];
    if (value === undefined) throw new Error(`billing_chaos_job.ts needs --${name}`);
    return value;
  };
  const armDir = required("arm-dir");
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(Number(values.parallelism ?? "2"))
    .enableCheckpointing(Number(values["checkpoint-interval"] ?? "300"), { timeoutMs: 10_000 })
    .setRestartStrategy(RestartStrategies.fixedDelay(1_000_000, 200));
  const connection = { servers: required("nats") };
  buildBillingPipeline(
    env,
    {
      connection,
      stream: required("stream"),
      ...(values.rate === undefined ? {} : { recordsPerSecond: Number(values.rate) }),
    },
    billingSinks({
      mariadb: parseMariaDbUrl(values.mariadb ?? DEFAULT_MARIADB_URL),
      table: required("table"),
    }),
  );
  const sinkVertex = env.getJobGraph().vertices.find((v) =>
    v.operators.some((o) => o.uid === BILLING_UIDS.sink)
  )!.id;
  env.setFaultInjector({
    task(point: FaultPoint, site: FaultSite) {
      if (site.vertexId !== sinkVertex || point === "before-snapshot") return;
      if (claim(armDir, point, site)) Deno.kill(Deno.pid, "SIGKILL");
    },
  });
  const result = await env.execute("billing chaos");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
