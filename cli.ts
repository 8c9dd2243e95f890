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
import { cancelJob, listJobs } from "./runtime/cluster/client.ts";
import { runReadCommand } from "./connectors/jetstream/reader.ts";
import { setLogLevel } from "./runtime/log.ts";

const USAGE = `usage: deno run -A cli.ts <command> --nats URL [options]

commands:
  coordinator   run the cluster's coordinator [--checkpoint-bucket B] [--heartbeat-timeout MS]
  worker        run a worker [--slots N] [--id ID] [--heartbeat-interval MS]
  list          list jobs and workers [--json]
  cancel JOB    cancel a running job
  read          print a stream's records as JSON lines --stream S [--committed] [--from SEQ]
                [--subject F] [--txn-bucket B] [--follow]

NATS options: --nats URL --nats-user U --nats-password P --nats-token T
              --nats-tls-ca F --nats-tls-cert F --nats-tls-key F (or WEIR_NATS_* variables)`;

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
    console.log(USAGE);
    return command === undefined && !values.help ? 2 : 0;
  }
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
