/**
 * The cluster's long-running processes: `weir coordinator` (Flink's
 * JobManager role) and `weir worker` (the TaskManager role). Both log at
 * `info` unless `WEIR_LOG_LEVEL` says otherwise, and run until SIGINT or
 * SIGTERM: the coordinator then cancels its running jobs, a worker ends its
 * slot threads.
 *
 * @module
 */

import { connectNats, watchReconnects } from "../runtime/actor/nats_connect.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import { ClusterCoordinator } from "../runtime/cluster/cluster_coordinator.ts";
import { WorkerProcess } from "../runtime/cluster/worker_process.ts";
import { setLogLevel } from "../runtime/log.ts";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  NATS_HELP,
  NATS_OPTIONS,
  onOff,
  parseCommandArgs,
  positiveInt,
  requireNats,
  untilSignal,
} from "./_args.ts";

/** Cluster processes log at info by default (checkpoints, deployments, failovers). */
function defaultToInfo(): void {
  if ((Deno.env.get("WEIR_LOG_LEVEL") ?? "") === "") setLogLevel("info");
}

/** `weir coordinator`: the cluster's coordinator, until SIGINT/SIGTERM. */
export const coordinatorCommand: Command = {
  summary:
    "coordinator   run the cluster's coordinator [--checkpoint-bucket B] [--heartbeat-timeout MS]",
  help: `usage: weir coordinator --nats URL [--checkpoint-bucket B] [--heartbeat-timeout MS]

Runs the cluster's coordinator (Flink's JobManager role) until SIGINT or
SIGTERM, which cancel its running jobs. Checkpoints and savepoints go to the
NATS Object Store bucket B (default weir-checkpoints). A worker silent for
MS milliseconds (default 3000) is declared lost.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("coordinator", args, {
      ...NATS_OPTIONS,
      "checkpoint-bucket": { type: "string" },
      "heartbeat-timeout": { type: "string" },
    });
    atMostPositionals("coordinator", positionals, 0, "no positional arguments");
    const nats = requireNats("coordinator", args);
    const heartbeatTimeoutMs = positiveInt(
      values["heartbeat-timeout"],
      "--heartbeat-timeout",
      3000,
    );
    defaultToInfo();
    const nc = await connectNats({ ...nats, name: "weir-coordinator" });
    const transport = new NatsTransport(nc, { ownsConnection: true });
    const bucket = values["checkpoint-bucket"] ?? "weir-checkpoints";
    const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
    const coordinator = new ClusterCoordinator({
      transport,
      storage,
      checkpointBucket: bucket,
      heartbeatTimeoutMs,
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
  },
};

/** `weir worker`: a worker offering slots, until SIGINT/SIGTERM. */
export const workerCommand: Command = {
  summary: "worker        run a worker [--slots N] [--id ID] [--heartbeat-interval MS]",
  help: `usage: weir worker --nats URL [--slots N] [--id ID] [--heartbeat-interval MS]
                   [--local-recovery on|off] [--local-state-dir DIR]

Runs a worker (Flink's TaskManager role) offering N slots (default: the
number of CPUs) until SIGINT or SIGTERM. It heartbeats every MS
milliseconds (default 500). Local recovery (default on) keeps the subtasks'
latest snapshot under DIR (default: the OS temp directory's
weir-local-state) and restores from it when a subtask comes back on this
worker; give a stable --id to keep it across worker restarts.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("worker", args, {
      ...NATS_OPTIONS,
      slots: { type: "string" },
      id: { type: "string" },
      "heartbeat-interval": { type: "string" },
      "local-recovery": { type: "string" },
      "local-state-dir": { type: "string" },
    });
    atMostPositionals("worker", positionals, 0, "no positional arguments");
    const nats = requireNats("worker", args);
    const slots = positiveInt(values.slots, "--slots", navigator.hardwareConcurrency);
    const heartbeatIntervalMs = positiveInt(
      values["heartbeat-interval"],
      "--heartbeat-interval",
      500,
    );
    const localRecovery = onOff(values["local-recovery"], "--local-recovery", true);
    defaultToInfo();
    const nc = await connectNats({ ...nats, name: "weir-worker" });
    const transport = new NatsTransport(nc, { ownsConnection: true });
    const worker = new WorkerProcess({
      transport,
      nats,
      slots,
      heartbeatIntervalMs,
      ...(values.id === undefined ? {} : { workerId: values.id }),
      localRecovery,
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
  },
};
