/**
 * The job commands of `weir`, Flink's `flink list|cancel|savepoint|stop|run`:
 * they talk to the cluster's coordinator over NATS (`runtime/cluster/client.ts`),
 * except `run`, which starts a job module with `deno run -A`.
 *
 * @module
 */

import { connectNats } from "../runtime/actor/nats_connect.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import type { Transport } from "../runtime/actor/types.ts";
import {
  cancelJob,
  listJobs,
  stopWithSavepointOnCluster,
  triggerSavepointOnCluster,
} from "../runtime/cluster/client.ts";
import { SAVEPOINT_ENV } from "../runtime/cluster/default_executor.ts";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  NATS_HELP,
  NATS_OPTIONS,
  natsArgsOf,
  parseCommandArgs,
  requireNats,
  UsageError,
} from "./_args.ts";

/** Connects with the command's NATS options, runs `body`, and disconnects. */
async function withCoordinator<T>(
  command: string,
  args: readonly string[],
  body: (transport: Transport) => Promise<T>,
): Promise<T> {
  const nats = requireNats(command, args);
  const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
  try {
    return await body(transport);
  } finally {
    await transport.close();
  }
}

/** The job id, the first positional. */
function jobIdOf(command: string, positionals: readonly string[]): string {
  const jobId = positionals[0];
  if (jobId === undefined) throw new UsageError(`weir ${command} needs a job id (see weir list)`);
  return jobId;
}

/** The command that restores savepoint `path`. */
function runHint(path: string): string {
  return `weir run <job.ts> -s ${path} --nats <url>`;
}

/** `weir list`: the cluster's jobs and workers. */
export const listCommand: Command = {
  summary: "list          list jobs and workers [--json]",
  help: `usage: weir list --nats URL [--json]

Lists the cluster's jobs (id, status, attempt, name; running jobs first) and
live workers (id, host, pid, slots, last heartbeat). --json prints the
coordinator's answer as one JSON object instead.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("list", args, {
      ...NATS_OPTIONS,
      json: { type: "boolean" },
    });
    atMostPositionals("list", positionals, 0, "no positional arguments");
    const overview = await withCoordinator("list", args, listJobs);
    if (values.json) {
      console.log(JSON.stringify(overview));
      return 0;
    }
    console.log("JOB ID\tSTATUS\tATTEMPT\tNAME");
    for (const j of overview.jobs) console.log(`${j.jobId}\t${j.status}\t${j.attempt}\t${j.name}`);
    console.log(`\nWORKER\tHOST\tPID\tSLOTS\tLAST HEARTBEAT`);
    for (const w of overview.workers) {
      console.log(`${w.workerId}\t${w.host}\t${w.pid}\t${w.slots}\t${w.lastHeartbeatAgoMs} ms ago`);
    }
    return 0;
  },
};

/** `weir cancel JOB`. */
export const cancelCommand: Command = {
  summary: "cancel JOB    cancel a running job",
  help: `usage: weir cancel JOB --nats URL

Cancels running job JOB (Flink's 'flink cancel'): it ends CANCELED. Its
retained checkpoints stay in the checkpoint bucket; to keep the job's state
in a savepoint instead, use 'weir stop JOB --savepoint'.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { positionals } = parseCommandArgs("cancel", args, NATS_OPTIONS);
    const jobId = jobIdOf("cancel", positionals);
    atMostPositionals("cancel", positionals, 1, "one job id");
    await withCoordinator("cancel", args, (t) => cancelJob(t, jobId));
    console.log(`cancelled ${jobId}`);
    console.error(
      `weir: its retained checkpoints stay in the checkpoint bucket; resume from the latest ` +
        `with resumeFrom({ jobId: "${jobId}" }) in the job module`,
    );
    return 0;
  },
};

/** `weir savepoint JOB [DIR]`. */
export const savepointCommand: Command = {
  summary: "savepoint JOB [DIR]\n                trigger a savepoint; prints its path",
  help: `usage: weir savepoint JOB [DIR] --nats URL

Triggers a savepoint of running job JOB (Flink's 'flink savepoint') and prints
its path once it is stored. A savepoint is a self-contained snapshot in the
canonical format; retention never deletes it. DIR is the savepoint directory:
a cluster stores savepoints in its checkpoint bucket (give no DIR, or
nats-object-store://<bucket>). Restore it with: weir run job.ts -s <path> --nats URL

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { positionals } = parseCommandArgs("savepoint", args, NATS_OPTIONS);
    const jobId = jobIdOf("savepoint", positionals);
    atMostPositionals("savepoint", positionals, 2, "a job id and at most one DIR");
    const path = await withCoordinator(
      "savepoint",
      args,
      (t) => triggerSavepointOnCluster(t, jobId, positionals[1]),
    );
    console.log(path);
    console.error(`weir: savepoint of ${jobId} stored; restore it with: ${runHint(path)}`);
    return 0;
  },
};

/** `weir stop JOB --savepoint [DIR] [--drain]`. */
export const stopCommand: Command = {
  summary: "stop JOB --savepoint [DIR] [--drain]\n" +
    "                stop the job with a final savepoint (it ends FINISHED); prints the path",
  help: `usage: weir stop JOB --savepoint [DIR] [--drain] --nats URL

Stops running job JOB with a final savepoint (Flink's 'flink stop', FLIP-34):
the sources stop, the savepoint is taken, the sinks commit it, and the job
ends FINISHED. Prints the savepoint's path. With --drain the sources first
emit the maximum watermark, so event-time windows and timers fire; without,
they keep their state in the savepoint. DIR as for 'weir savepoint'.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("stop", args, {
      ...NATS_OPTIONS,
      savepoint: { type: "boolean" },
      drain: { type: "boolean" },
    });
    const jobId = jobIdOf("stop", positionals);
    if (!values.savepoint) {
      throw new UsageError(
        "weir stop needs --savepoint (stop without a savepoint is 'weir cancel JOB')",
      );
    }
    atMostPositionals("stop", positionals, 2, "a job id and at most one DIR");
    const path = await withCoordinator("stop", args, (t) =>
      stopWithSavepointOnCluster(t, jobId, {
        directory: positionals[1],
        drain: values.drain ?? false,
      }));
    console.log(path);
    console.error(`weir: job ${jobId} stopped with a savepoint; resume it with: ${runHint(path)}`);
    return 0;
  },
};

/** `weir run job.ts`: starts the job module with `deno run -A`. */
export const runCommand: Command = {
  summary:
    "run job.ts [-s SAVEPOINT] [--allow-non-restored-state] [--restore-mode M] [-- job args]\n" +
    "                run a job module (on the cluster with --nats), restoring a savepoint",
  help: `usage: weir run job.ts [-s SAVEPOINT] [--allow-non-restored-state]
                [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]

Runs a job module with 'deno run -A' (Flink's 'flink run'): locally, or on the
cluster when --nats URL (or WEIR_NATS_URL) is given. With -s it restores that
savepoint (possibly at another parallelism or max parallelism);
--allow-non-restored-state drops state of operator uids the job no longer has;
--restore-mode says who owns the restored snapshot (default NO_CLAIM: the job
never deletes it).

${NATS_HELP}

Exit codes: the job process's exit code (0 when the job finished), 2 bad usage.`,
  async run(argv) {
    const dashDash = argv.indexOf("--");
    const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
    const jobArgs = dashDash === -1 ? [] : argv.slice(dashDash + 1);
    const { values, positionals } = parseCommandArgs("run", own, {
      ...NATS_OPTIONS,
      "from-savepoint": { type: "string", short: "s" },
      "allow-non-restored-state": { type: "boolean" },
      "restore-mode": { type: "string" },
    });
    const module = positionals[0];
    if (module === undefined) throw new UsageError("weir run needs a job module (weir run job.ts)");
    if (positionals.length > 1) {
      throw new UsageError(
        `weir run takes one job module; put job arguments after '--': ${
          JSON.stringify(positionals.slice(1))
        }`,
      );
    }
    const mode = values["restore-mode"];
    if (mode !== undefined && mode !== "CLAIM" && mode !== "NO_CLAIM") {
      throw new UsageError(
        `--restore-mode must be CLAIM or NO_CLAIM: current value is ${JSON.stringify(mode)}`,
      );
    }
    if (
      values["from-savepoint"] === undefined &&
      (values["allow-non-restored-state"] || mode !== undefined)
    ) {
      throw new UsageError("--allow-non-restored-state and --restore-mode need -s SAVEPOINT");
    }
    const natsArgs = natsArgsOf(values);
    const env: Record<string, string> = {};
    if (values["from-savepoint"] !== undefined) {
      env[SAVEPOINT_ENV.path] = values["from-savepoint"];
      env[SAVEPOINT_ENV.allowNonRestoredState] = String(
        values["allow-non-restored-state"] ?? false,
      );
      env[SAVEPOINT_ENV.restoreMode] = mode ?? "NO_CLAIM";
    }
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", module, ...jobArgs, ...natsArgs],
      env,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    const status = await child.status;
    if (status.code !== 0 && values["from-savepoint"] !== undefined) {
      console.error(
        `weir: the job ended with exit code ${status.code}; the savepoint is untouched: ` +
          `run again with: weir run ${module} -s ${values["from-savepoint"]}` +
          (values["allow-non-restored-state"] ? " --allow-non-restored-state" : "") +
          (natsArgs.length > 0 ? " --nats <url>" : ""),
      );
    }
    return status.code;
  },
};
