/**
 * The `weir` command: runs a cluster's processes and talks to its
 * coordinator.
 *
 *     deno run -A cli.ts coordinator --nats nats://host:4222 [--checkpoint-bucket B]
 *                                    [--heartbeat-timeout MS]
 *     deno run -A cli.ts worker      --nats nats://host:4222 [--slots N] [--id ID]
 *                                    [--heartbeat-interval MS]
 *     deno run -A cli.ts list        --nats nats://host:4222 [--json]
 *     deno run -A cli.ts cancel JOB  --nats nats://host:4222
 *     deno run -A cli.ts savepoint JOB [DIR] --nats nats://host:4222
 *     deno run -A cli.ts stop JOB --savepoint [DIR] [--drain] --nats nats://host:4222
 *     deno run -A cli.ts run job.ts [-s SAVEPOINT] [--allow-non-restored-state]
 *                               [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]
 *     deno run -A cli.ts read        --nats nats://host:4222 --stream S [--committed] [--from SEQ]
 *                                    [--subject F] [--txn-bucket B] [--follow]
 *
 * Every command takes the NATS connection options `--nats URL`,
 * `--nats-user`, `--nats-password`, `--nats-token`, `--nats-tls-ca`,
 * `--nats-tls-cert` and `--nats-tls-key`, or the environment variables
 * `WEIR_NATS_URL`, `WEIR_NATS_USER`, `WEIR_NATS_PASSWORD`, `WEIR_NATS_TOKEN`,
 * `WEIR_NATS_TLS_CA`, `WEIR_NATS_TLS_CERT` and `WEIR_NATS_TLS_KEY`.
 *
 * A job is submitted by running its module with `--nats URL`
 * (`deno run -A job.ts --nats nats://host:4222`); workers import the job
 * module by its URL, so serve it over HTTP when workers run on other hosts.
 *
 * `savepoint` and `stop` print the savepoint's path on stdout (Flink's
 * `flink savepoint` / `flink stop --savepointPath [--drain]`); `run` starts
 * the job module (locally, or on the cluster with `--nats`), restoring the
 * savepoint given with `-s` (Flink's `flink run -s`). Install the command as
 * `weir` with `deno install -g -A -n weir cli.ts`.
 *
 * Exit codes: 0 success, 1 failure (one `error: ...` line on stderr), 2 bad
 * usage.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  connectNats,
  type NatsConnectionOptions,
  natsOptionsFromArgs,
  watchReconnects,
} from "./runtime/actor/nats_connect.ts";
import { NatsTransport } from "./runtime/actor/nats_transport.ts";
import { ObjectStoreCheckpointStorage } from "./runtime/checkpoint/object_store_storage.ts";
import { ClusterCoordinator } from "./runtime/cluster/cluster_coordinator.ts";
import { WorkerProcess } from "./runtime/cluster/worker_process.ts";
import {
  cancelJob,
  listJobs,
  stopWithSavepointOnCluster,
  triggerSavepointOnCluster,
} from "./runtime/cluster/client.ts";
import { SAVEPOINT_ENV } from "./runtime/cluster/default_executor.ts";
import { runReadCommand } from "./connectors/jetstream/reader.ts";
import { setLogLevel } from "./runtime/log.ts";

const USAGE = `usage: deno run -A cli.ts <command> --nats URL [options]

commands:
  coordinator   run the cluster's coordinator [--checkpoint-bucket B] [--heartbeat-timeout MS]
  worker        run a worker [--slots N] [--id ID] [--heartbeat-interval MS]
  list          list jobs and workers [--json]
  cancel JOB    cancel a running job
  savepoint JOB [DIR]
                trigger a savepoint; prints its path
  stop JOB --savepoint [DIR] [--drain]
                stop the job with a final savepoint (it ends FINISHED); prints the path
  run job.ts [-s SAVEPOINT] [--allow-non-restored-state] [--restore-mode M] [-- job args]
                run a job module (on the cluster with --nats), restoring a savepoint
  read          print a stream's records as JSON lines --stream S [--committed] [--from SEQ]
                [--subject F] [--txn-bucket B] [--follow]

NATS options: --nats URL --nats-user U --nats-password P --nats-token T
              --nats-tls-ca F --nats-tls-cert F --nats-tls-key F (or WEIR_NATS_* variables)

'weir <command> --help' describes a command.`;

/** `--help` of each command. */
const COMMAND_HELP: Readonly<Record<string, string>> = {
  savepoint: `usage: weir savepoint JOB [DIR] --nats URL

Triggers a savepoint of running job JOB (Flink's 'flink savepoint') and prints
its path once it is stored. A savepoint is a self-contained snapshot in the
canonical format; retention never deletes it. DIR is the savepoint directory:
a cluster stores savepoints in its checkpoint bucket (give no DIR, or
nats-object-store://<bucket>). Restore it with: weir run job.ts -s <path> --nats URL`,
  stop: `usage: weir stop JOB --savepoint [DIR] [--drain] --nats URL

Stops running job JOB with a final savepoint (Flink's 'flink stop', FLIP-34):
the sources stop, the savepoint is taken, the sinks commit it, and the job
ends FINISHED. Prints the savepoint's path. With --drain the sources first
emit the maximum watermark, so event-time windows and timers fire; without,
they keep their state in the savepoint. DIR as for 'weir savepoint'.`,
  run: `usage: weir run job.ts [-s SAVEPOINT] [--allow-non-restored-state]
                [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]

Runs a job module with 'deno run -A' (Flink's 'flink run'): locally, or on the
cluster when --nats URL (or WEIR_NATS_URL) is given. With -s it restores that
savepoint (possibly at another parallelism or max parallelism);
--allow-non-restored-state drops state of operator uids the job no longer has;
--restore-mode says who owns the restored snapshot (default NO_CLAIM: the job
never deletes it). Exits with the job's exit code.`,
  cancel: `usage: weir cancel JOB --nats URL

Cancels running job JOB (it ends CANCELED). Its retained checkpoints stay; to
keep the job's state, prefer 'weir stop JOB --savepoint'.`,
  list: `usage: weir list --nats URL [--json]

Lists the cluster's jobs (id, status, attempt, name) and live workers.`,
  coordinator: `usage: weir coordinator --nats URL [--checkpoint-bucket B] [--heartbeat-timeout MS]

Runs the cluster's coordinator. Checkpoints and savepoints go to bucket B
(default weir-checkpoints).`,
  worker: `usage: weir worker --nats URL [--slots N] [--id ID] [--heartbeat-interval MS]
                   [--local-recovery on|off] [--local-state-dir DIR]

Runs a worker offering N slots (default: the number of CPUs). Local recovery
(default on) keeps the subtasks' latest snapshot under DIR (default: the OS
temp directory's weir-local-state) and restores from it when a subtask comes
back on this worker; give a stable --id to keep it across worker restarts.`,
  read: `usage: weir read --nats URL --stream S [--committed] [--from SEQ] [--subject F]
                 [--txn-bucket B] [--follow]

Prints a stream's records as JSON lines.`,
};

class UsageError extends Error {
  override name = "UsageError";
}

function parse(args: string[]) {
  const text = { type: "string" } as const;
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      nats: text,
      "nats-user": text,
      "nats-password": text,
      "nats-token": text,
      "nats-tls-ca": text,
      "nats-tls-cert": text,
      "nats-tls-key": text,
      slots: text,
      id: text,
      "local-recovery": text,
      "local-state-dir": text,
      "checkpoint-bucket": text,
      "heartbeat-timeout": text,
      "heartbeat-interval": text,
      stream: text,
      from: text,
      subject: text,
      "txn-bucket": text,
      committed: { type: "boolean" },
      follow: { type: "boolean" },
      json: { type: "boolean" },
      savepoint: { type: "boolean" },
      drain: { type: "boolean" },
      "from-savepoint": { type: "string", short: "s" },
      "allow-non-restored-state": { type: "boolean" },
      "restore-mode": text,
      help: { type: "boolean", short: "h" },
    },
  });
}

function positiveInt(value: string | undefined, flag: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`${flag} is required`);
    return fallback;
  }
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

function onOff(value: string | undefined, flag: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new UsageError(`${flag} must be on or off, got ${JSON.stringify(value)}`);
}

function natsOptions(args: string[]): NatsConnectionOptions {
  const options = natsOptionsFromArgs(args, Deno.env);
  if (options === undefined) throw new UsageError("--nats URL (or WEIR_NATS_URL) is required");
  return options;
}

/** Resolves on SIGINT or SIGTERM. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      Deno.addSignalListener(signal, () => resolve(signal));
    }
  });
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  const command = positionals[0];
  if (values.help || command === undefined) {
    console.log((command !== undefined && COMMAND_HELP[command]) || USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
  if (command === "run") return await runJob(argv);
  const nats = natsOptions(argv);
  // Cluster processes log at info by default (checkpoints, deployments, failovers).
  const server = command === "coordinator" || command === "worker";
  if (server && (Deno.env.get("WEIR_LOG_LEVEL") ?? "") === "") setLogLevel("info");
  switch (command) {
    case "coordinator": {
      const nc = await connectNats({ ...nats, name: "weir-coordinator" });
      const transport = new NatsTransport(nc, { ownsConnection: true });
      const bucket = values["checkpoint-bucket"] ?? "weir-checkpoints";
      const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
      const coordinator = new ClusterCoordinator({
        transport,
        storage,
        checkpointBucket: bucket,
        heartbeatTimeoutMs: positiveInt(values["heartbeat-timeout"], "--heartbeat-timeout", 3000),
      });
      coordinator.start();
      watchReconnects(nc, () => coordinator.connectionRestored());
      console.error(
        `weir coordinator: listening on ${nats.servers}, checkpoints in bucket ${bucket}`,
      );
      const signal = await untilSignal();
      console.error(`weir coordinator: ${signal}, cancelling running jobs`);
      await coordinator.close();
      await transport.close();
      return 0;
    }
    case "worker": {
      const nc = await connectNats({ ...nats, name: "weir-worker" });
      const transport = new NatsTransport(nc, { ownsConnection: true });
      const worker = new WorkerProcess({
        transport,
        nats,
        slots: positiveInt(values.slots, "--slots", navigator.hardwareConcurrency),
        heartbeatIntervalMs: positiveInt(values["heartbeat-interval"], "--heartbeat-interval", 500),
        ...(values.id === undefined ? {} : { workerId: values.id }),
        localRecovery: onOff(values["local-recovery"], "--local-recovery", true),
        ...(values["local-state-dir"] === undefined
          ? {}
          : { localStateDirectory: values["local-state-dir"] }),
      });
      worker.start();
      watchReconnects(nc, () => worker.heartbeatNow());
      console.error(
        `weir worker ${worker.workerId}: ${worker.slotIds.length} slots, connected to ${nats.servers}`,
      );
      await untilSignal();
      worker.close();
      await transport.close();
      return 0;
    }
    case "list": {
      const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
      try {
        const overview = await listJobs(transport);
        if (values.json) {
          console.log(JSON.stringify(overview));
          return 0;
        }
        console.log("JOB ID\tSTATUS\tATTEMPT\tNAME");
        for (const j of overview.jobs) {
          console.log(`${j.jobId}\t${j.status}\t${j.attempt}\t${j.name}`);
        }
        console.log(`\nWORKER\tHOST\tPID\tSLOTS\tLAST HEARTBEAT`);
        for (const w of overview.workers) {
          console.log(
            `${w.workerId}\t${w.host}\t${w.pid}\t${w.slots}\t${w.lastHeartbeatAgoMs} ms ago`,
          );
        }
        return 0;
      } finally {
        await transport.close();
      }
    }
    case "cancel": {
      const jobId = positionals[1];
      if (jobId === undefined) throw new UsageError("cancel needs a job id");
      const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
      try {
        await cancelJob(transport, jobId);
        console.log(`cancelled ${jobId}`);
        console.error(
          `weir: its retained checkpoints stay in the checkpoint bucket; resume from the latest ` +
            `with resumeFrom({ jobId: "${jobId}" }) in the job module`,
        );
        return 0;
      } finally {
        await transport.close();
      }
    }
    case "savepoint": {
      const jobId = positionals[1];
      if (jobId === undefined) throw new UsageError("savepoint needs a job id");
      if (positionals.length > 3) throw new UsageError("savepoint takes JOB and at most one DIR");
      const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
      try {
        const path = await triggerSavepointOnCluster(transport, jobId, positionals[2]);
        console.log(path);
        console.error(`weir: savepoint of ${jobId} stored; restore it with: ${runHint(path)}`);
        return 0;
      } finally {
        await transport.close();
      }
    }
    case "stop": {
      const jobId = positionals[1];
      if (jobId === undefined) throw new UsageError("stop needs a job id");
      if (!values.savepoint) {
        throw new UsageError(
          "stop needs --savepoint (stop without a savepoint is 'weir cancel JOB')",
        );
      }
      if (positionals.length > 3) throw new UsageError("stop takes JOB and at most one DIR");
      const transport = new NatsTransport(await connectNats(nats), { ownsConnection: true });
      try {
        const path = await stopWithSavepointOnCluster(transport, jobId, {
          directory: positionals[2],
          drain: values.drain ?? false,
        });
        console.log(path);
        console.error(
          `weir: job ${jobId} stopped with a savepoint; resume it with: ${runHint(path)}`,
        );
        return 0;
      } finally {
        await transport.close();
      }
    }
    case "read": {
      if (values.stream === undefined) throw new UsageError("read needs --stream S");
      await runReadCommand({
        nats,
        stream: values.stream,
        committed: values.committed ?? false,
        follow: values.follow ?? false,
        ...(values.from === undefined ? {} : { from: positiveInt(values.from, "--from") }),
        ...(values.subject === undefined ? {} : { filterSubject: values.subject }),
        ...(values["txn-bucket"] === undefined ? {} : { txnBucket: values["txn-bucket"] }),
      }, (line) => console.log(line));
      return 0;
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** The command that restores savepoint `path`. */
function runHint(path: string): string {
  return `weir run <job.ts> -s ${path} --nats <url>`;
}

/**
 * \`weir run\`: starts the job module with \`deno run -A\`, passing the NATS
 * options and the job arguments through, and the savepoint to restore in
 * the environment (\`SAVEPOINT_ENV\`), which \`execute()\` reads.
 * @returns the job process's exit code.
 */
async function runJob(argv: string[]): Promise<number> {
  const dashDash = argv.indexOf("--");
  const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
  const jobArgs = dashDash === -1 ? [] : argv.slice(dashDash + 1);
  const { values, positionals } = parse(own);
  const module = positionals[1];
  if (module === undefined) throw new UsageError("run needs a job module (weir run job.ts)");
  if (positionals.length > 2) {
    throw new UsageError(
      `run takes one job module; put job arguments after '--': ${
        JSON.stringify(positionals.slice(2))
      }`,
    );
  }
  const mode = values["restore-mode"];
  if (mode !== undefined && mode !== "CLAIM" && mode !== "NO_CLAIM") {
    throw new UsageError(`--restore-mode must be CLAIM or NO_CLAIM, got ${JSON.stringify(mode)}`);
  }
  if (
    values["from-savepoint"] === undefined &&
    (values["allow-non-restored-state"] || mode !== undefined)
  ) {
    throw new UsageError("--allow-non-restored-state and --restore-mode need -s SAVEPOINT");
  }
  const natsArgs: string[] = [];
  for (
    const flag of [
      "nats",
      "nats-user",
      "nats-password",
      "nats-token",
      "nats-tls-ca",
      "nats-tls-cert",
      "nats-tls-key",
    ] as const
  ) {
    const v = values[flag];
    if (v !== undefined) natsArgs.push(`--${flag}`, v);
  }
  const env: Record<string, string> = {};
  if (values["from-savepoint"] !== undefined) {
    env[SAVEPOINT_ENV.path] = values["from-savepoint"];
    env[SAVEPOINT_ENV.allowNonRestoredState] = String(values["allow-non-restored-state"] ?? false);
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
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith(
      "ERR_PARSE_ARGS",
    );
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    if (usage) console.error(USAGE);
    Deno.exit(usage ? 2 : 1);
  }
}
