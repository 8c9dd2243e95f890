/**
 * The job commands of `weir`, Flink's `flink list|cancel|savepoint|stop|run`
 * plus `resume`: they talk to the cluster's coordinator over NATS
 * (`runtime/cluster/client.ts`), except `run` and `resume`, which start a job
 * module with `deno run -A` and hand it what to do through the environment
 * variables of the executor's contract (`SAVEPOINT_ENV`, `RUN_ENV` in
 * `runtime/cluster/default_executor.ts`): `-s` the savepoint, `-p` the
 * default parallelism, `--detached`, and for `resume JOB` the earlier job
 * whose latest retained checkpoint to restore.
 *
 * @module
 */

import { connectNats, natsOptionsFromArgs } from "../runtime/actor/nats_connect.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import type { Transport } from "../runtime/actor/types.ts";
import {
  cancelJob,
  listJobs,
  stopWithSavepointOnCluster,
  triggerSavepointOnCluster,
} from "../runtime/cluster/client.ts";
import { RUN_ENV, SAVEPOINT_ENV } from "../runtime/cluster/default_executor.ts";
import { onInterrupt } from "../runtime/cluster/interrupt.ts";
import { natsFlags, resumeCommand, shellQuote } from "../runtime/cluster/resume_command.ts";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  NATS_FLAGS,
  NATS_HELP,
  NATS_OPTIONS,
  natsArgsOf,
  parseCommandArgs,
  positiveInt,
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
function runHint(path: string, args: readonly string[]): string {
  const nats = natsOptionsFromArgs(args, Deno.env);
  return `weir resume ${shellQuote(path)} <job.ts> ${
    nats === undefined ? "--nats <url>" : natsFlags(nats).join(" ")
  } [-- <job args>]`;
}

/** `weir list`: the cluster's jobs and workers. */
export const listCommand: Command = {
  summary: "list          list jobs and workers [--json]",
  help: `usage: weir list --nats URL [--json]

Lists the cluster's jobs (id, status, attempt, largest vertex parallelism,
name; running jobs first) and live workers (id, host, pid, slots, last
heartbeat). --json prints the coordinator's answer as one JSON object instead
(each job with its module URL, arguments and 'weir run -p' default too).
A job's status is WAITING_FOR_RESOURCES (no slot to deploy on yet), RUNNING,
FINISHED, FAILED or CANCELED.

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
    console.log("JOB ID\tSTATUS\tATTEMPT\tPARALLELISM\tNAME");
    for (const j of overview.jobs) {
      console.log(`${j.jobId}\t${j.status}\t${j.attempt}\t${j.parallelism ?? "-"}\t${j.name}`);
    }
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
      `weir: its retained checkpoints stay in the checkpoint bucket; resume it from the latest ` +
        `with: ${resumeCommand({ jobId, nats: requireNats("cancel", args) })}`,
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
    console.error(`weir: savepoint of ${jobId} stored; restore it with: ${runHint(path, args)}`);
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
    console.error(
      `weir: job ${jobId} stopped with a savepoint; resume it with: ${runHint(path, args)}`,
    );
    return 0;
  },
};

/** The options `run` and `resume` share. */
const LAUNCH_OPTIONS = {
  ...NATS_OPTIONS,
  parallelism: { type: "string", short: "p" },
  detached: { type: "boolean", short: "d" },
  "allow-non-restored-state": { type: "boolean" },
  "restore-mode": { type: "string" },
} as const;

/** What `run` and `resume` start: `deno run -A <module> <jobArgs> <natsArgs>` with `env`. */
interface JobLaunch {
  /** The job module's path or URL. */
  readonly module: string;
  /** The job module's own arguments. */
  readonly jobArgs: readonly string[];
  /** The NATS flags given to the command, passed on to the job. */
  readonly natsArgs: readonly string[];
  /** Variables of the executor's contract (`SAVEPOINT_ENV`, `RUN_ENV`). */
  readonly env: Readonly<Record<string, string>>;
}

/** `argv` split at the first `--`: the command's own arguments and the job's. */
function splitJobArgs(argv: readonly string[]): { own: string[]; jobArgs: string[] | undefined } {
  const dashDash = argv.indexOf("--");
  return dashDash === -1
    ? { own: [...argv], jobArgs: undefined }
    : { own: argv.slice(0, dashDash), jobArgs: argv.slice(dashDash + 1) };
}

/**
 * The environment of the options `run` and `resume` share (`-p`,
 * `--detached`, `--allow-non-restored-state`, `--restore-mode`).
 * @throws {UsageError} naming the option and its value when one is wrong,
 *   or `--detached` without a cluster.
 */
function launchEnv(
  command: string,
  own: readonly string[],
  values: {
    readonly parallelism?: string | undefined;
    readonly detached?: boolean | undefined;
    readonly "allow-non-restored-state"?: boolean | undefined;
    readonly "restore-mode"?: string | undefined;
  },
): Record<string, string> {
  const env: Record<string, string> = {};
  if (values.parallelism !== undefined) {
    env[RUN_ENV.parallelism] = String(positiveInt(values.parallelism, "-p/--parallelism"));
  }
  if (values.detached) {
    if (natsOptionsFromArgs(own, Deno.env) === undefined) {
      throw new UsageError(
        `weir ${command} --detached needs a cluster: give --nats URL (or WEIR_NATS_URL); ` +
          "a local job runs in the weir process's child and ends with it",
      );
    }
    env[RUN_ENV.detached] = "true";
  }
  const mode = values["restore-mode"];
  if (mode !== undefined && mode !== "CLAIM" && mode !== "NO_CLAIM") {
    throw new UsageError(
      `--restore-mode must be CLAIM or NO_CLAIM: current value is ${JSON.stringify(mode)}`,
    );
  }
  env[SAVEPOINT_ENV.allowNonRestoredState] = String(values["allow-non-restored-state"] ?? false);
  env[SAVEPOINT_ENV.restoreMode] = mode ?? "NO_CLAIM";
  return env;
}

/**
 * Starts the job module and waits for its process. Ctrl-C in a terminal
 * reaches the job process too (same process group), which cancels its job
 * and prints the resume command: this process ignores SIGINT and waits for
 * it. SIGTERM is passed on to the job process (which then ends at once,
 * without a cancel).
 * @returns the job process's exit code.
 */
async function launchJob(launch: JobLaunch): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", launch.module, ...launch.jobArgs, ...launch.natsArgs],
    env: { ...launch.env },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const stopListening = onInterrupt(() => {}); // the job process handles Ctrl-C
  const terminate = () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already ended
    }
  };
  let terminateListening = false;
  try {
    Deno.addSignalListener("SIGTERM", terminate);
    terminateListening = true;
  } catch {
    // no signals on this platform: SIGTERM keeps its default action
  }
  try {
    return (await child.status).code;
  } finally {
    stopListening();
    if (terminateListening) Deno.removeSignalListener("SIGTERM", terminate);
  }
}

/** Exit codes of `run` and `resume`. */
const LAUNCH_EXIT_CODES =
  `Exit codes: the job process's: 0 the job finished (or, with --detached, was
submitted), 1 it failed or was cancelled (the resume command is printed),
130 Ctrl-C (the job was cancelled; the resume command is printed); 2 bad usage.`;

/** `weir run job.ts`: starts the job module with `deno run -A`. */
export const runCommand: Command = {
  summary: "run job.ts [-p N] [--detached] [-s SAVEPOINT] [-- job args]\n" +
    "                run a job module (on the cluster with --nats), restoring a savepoint",
  help: `usage: weir run job.ts [-p N] [--detached] [-s SAVEPOINT] [--allow-non-restored-state]
                [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]

Runs a job module with 'deno run -A' (Flink's 'flink run'): locally, or on the
cluster when --nats URL (or WEIR_NATS_URL) is given. The job's own arguments
go after '--'.

  -p, --parallelism N   the job's default parallelism (Flink's -p): operators
                        that set no parallelism of their own, in a job that
                        does not call env.setParallelism, run at N (default 1)
  -d, --detached        cluster only: return once the job is submitted,
                        printing its id and the commands to follow it; the
                        job runs on without this process (code after
                        execute() in the job module does not run)
  -s SAVEPOINT          restore this savepoint (possibly at another
                        parallelism or max parallelism)
  --allow-non-restored-state
                        with -s: drop state of operator uids the job no
                        longer has
  --restore-mode M      with -s: who owns the restored snapshot, CLAIM or
                        NO_CLAIM (default: the job never deletes it)

When the job fails, is cancelled or is interrupted with Ctrl-C (which
cancels it), the job process prints the 'weir resume' command that restores
its latest retained checkpoint.

Run locally, the job serves the web dashboard and the REST API on
127.0.0.1 while it runs when given '-- --ui' (port 8081) or when WEIR_UI_PORT
is set (that port; 0 picks a free one), and prints 'weir: dashboard at
http://127.0.0.1:<port>/'. On the cluster the leading coordinator serves it
(weir coordinator --rest-port).

${NATS_HELP}

${LAUNCH_EXIT_CODES}`,
  async run(argv) {
    const { own, jobArgs } = splitJobArgs(argv);
    const { values, positionals } = parseCommandArgs("run", own, {
      ...LAUNCH_OPTIONS,
      "from-savepoint": { type: "string", short: "s" },
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
    const savepoint = values["from-savepoint"];
    if (
      savepoint === undefined &&
      (values["allow-non-restored-state"] || values["restore-mode"] !== undefined)
    ) {
      throw new UsageError("--allow-non-restored-state and --restore-mode need -s SAVEPOINT");
    }
    const env = launchEnv("run", own, values);
    if (savepoint !== undefined) env[SAVEPOINT_ENV.path] = savepoint;
    const natsArgs = natsArgsOf(values);
    const code = await launchJob({ module, jobArgs: jobArgs ?? [], natsArgs, env });
    if (code !== 0 && savepoint !== undefined) {
      console.error(
        `weir: the job ended with exit code ${code}; the savepoint is untouched: ` +
          `resume from it again with: weir resume ${shellQuote(savepoint)} ${shellQuote(module)}` +
          (values["allow-non-restored-state"] ? " --allow-non-restored-state" : "") +
          (natsArgs.length > 0 ? " --nats <url>" : ""),
      );
    }
    return code;
  },
};

/** Job ids: the job name's `[A-Za-z0-9_-]` characters and hex digits (`newJobId`). */
const JOB_ID = /^[A-Za-z0-9_-]+$/;

/** Whether `target` names a savepoint (a path or URL) rather than a job id. */
async function isSavepointPath(target: string): Promise<boolean> {
  if (!JOB_ID.test(target)) return true;
  try {
    await Deno.stat(target);
    return true; // a directory of that name here, e.g. savepoint-<job>-<n>
  } catch {
    return false;
  }
}

/** `args` without the NATS flags (and their values): `resume` passes its own. */
export function withoutNatsFlags(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = arg.includes("=") ? arg.slice(0, arg.indexOf("=")) : arg;
    if (NATS_FLAGS.some((f) => `--${f}` === name)) {
      if (!arg.includes("=")) i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** `weir resume JOB | SAVEPOINT [job.ts]`. */
export const resumeJobCommand: Command = {
  summary: "resume JOB|SAVEPOINT [job.ts] [-p N] [--detached] [-- job args]\n" +
    "                run a job again from a job's latest retained checkpoint, or a savepoint",
  help: `usage: weir resume JOB [job.ts] [-p N] [--detached] [--allow-non-restored-state]
                   [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]
       weir resume SAVEPOINT job.ts [same options]

Runs a job module again from where an earlier job left off (Flink's
'flink run -s <checkpoint or savepoint path>'), as 'weir run' does:

  JOB         an earlier job's id: restores its latest retained checkpoint
              (a failed or cancelled job keeps it). On a cluster, the job
              module, its arguments and -p default to the coordinator's record
              of the job, as long as the coordinator still knows it ('weir
              list' shows it); else give job.ts (and the job arguments after
              '--'). In local mode give job.ts, from the directory the job ran
              in (its checkpoint directory is relative to it). A job still
              RUNNING is refused: stop or cancel it first.
  SAVEPOINT   a savepoint path ('weir savepoint' and 'weir stop' print it);
              job.ts is required.

Options as for 'weir run' (-p N rescales the resumed job: keyed state is
redistributed by key group). The resumed job gets a new id; the checkpoint it
came from is never deleted (NO_CLAIM, the default).

${NATS_HELP}

${LAUNCH_EXIT_CODES}`,
  async run(argv) {
    const { own, jobArgs } = splitJobArgs(argv);
    const { values, positionals } = parseCommandArgs("resume", own, LAUNCH_OPTIONS);
    const target = positionals[0];
    if (target === undefined) {
      throw new UsageError("weir resume needs a job id or a savepoint path (weir resume JOB)");
    }
    atMostPositionals("resume", positionals, 2, "a job id or savepoint path, and a job module");
    const env = launchEnv("resume", own, values);
    const natsArgs = natsArgsOf(values);
    let module = positionals[1];
    if (await isSavepointPath(target)) {
      if (module === undefined) {
        throw new UsageError(
          `weir resume of savepoint ${target} needs the job module: weir resume ${target} job.ts`,
        );
      }
      env[SAVEPOINT_ENV.path] = target;
      return await launchJob({ module, jobArgs: jobArgs ?? [], natsArgs, env });
    }
    env[RUN_ENV.resumeJobId] = target;
    let args = jobArgs;
    const nats = natsOptionsFromArgs(own, Deno.env);
    if (nats !== undefined) {
      const overview = await withCoordinator("resume", own, listJobs);
      const record = overview.jobs.find((j) => j.jobId === target);
      if (record !== undefined && record.endedAt === undefined) {
        throw new Error(
          `job ${target} is still ${record.status}: a second run would read the same input; stop it ` +
            `first (weir stop ${target} --savepoint, or weir cancel ${target})`,
        );
      }
      if (record !== undefined) {
        module ??= record.moduleUrl;
        args ??= withoutNatsFlags(record.args ?? []);
        if (values.parallelism === undefined && record.defaultParallelism !== undefined) {
          env[RUN_ENV.parallelism] = String(record.defaultParallelism);
        }
      } else if (module === undefined) {
        throw new Error(
          `the coordinator does not know job ${target} (weir list shows the jobs it knows): ` +
            `give the job module and its arguments: ` +
            `weir resume ${target} job.ts --nats <url> -- <job args>`,
        );
      }
    } else if (module === undefined) {
      throw new UsageError(
        `weir resume ${target} needs the job module in local mode (weir resume ${target} ` +
          `job.ts), or --nats URL for a cluster job`,
      );
    }
    console.error(
      `weir: resuming job ${target} from its latest retained checkpoint with ${module}`,
    );
    return await launchJob({ module, jobArgs: args ?? [], natsArgs, env });
  },
};
