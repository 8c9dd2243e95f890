/**
 * The cluster's long-running processes: `weir coordinator` (Flink's
 * JobManager role) and `weir worker` (the TaskManager role). Both log at
 * `info` unless `WEIR_LOG_LEVEL` says otherwise, and run until SIGINT or
 * SIGTERM: the coordinator then suspends its running jobs and hands the
 * leadership over (high availability: they go on under a standby or the
 * next coordinator started), a worker ends its slot threads. Each step of
 * the coordinator's shutdown is bounded ({@linkcode stopCoordinator}), so
 * it ends promptly also when its NATS server is gone.
 *
 * @module
 */

import { connectNats, watchConnection, watchReconnects } from "../runtime/actor/nats_connect.ts";
import { NatsTransport } from "../runtime/actor/nats_transport.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import {
  DEFAULT_HA_BUCKET,
  DEFAULT_JOBS_BUCKET,
  DEFAULT_LEASE_MS,
  HaCoordinator,
} from "../runtime/cluster/ha/ha_coordinator.ts";
import { WorkerProcess } from "../runtime/cluster/worker_process.ts";
import { setLogLevel } from "../runtime/log.ts";
import { deadline } from "../runtime/actor/async.ts";
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
  UsageError,
} from "./_args.ts";
import { REST_HELP, REST_OPTIONS, restEndpoint } from "./_rest_options.ts";

/** Cluster processes log at info by default (checkpoints, deployments, failovers). */
function defaultToInfo(): void {
  if ((Deno.env.get("WEIR_LOG_LEVEL") ?? "") === "") setLogLevel("info");
}

/** `weir coordinator`: the cluster's coordinator, until SIGINT/SIGTERM. */
export const coordinatorCommand: Command = {
  summary: "coordinator   run the cluster's coordinator [--checkpoint-bucket B] " +
    "[--heartbeat-timeout MS] [--ha-bucket B] [--jobs-bucket B] [--lease-ms MS]\n" +
    "                [--rest-port N] [--rest-token T]",
  help: `usage: weir coordinator --nats URL [--checkpoint-bucket B] [--heartbeat-timeout MS]
                        [--ha-bucket B] [--jobs-bucket B] [--lease-ms MS]
                        [--rest-port N] [--rest-token T]

Runs a coordinator (Flink's JobManager role) until SIGINT or SIGTERM.
Checkpoints and savepoints go to the NATS Object Store bucket B (default
weir-checkpoints). A worker silent for --heartbeat-timeout MS (default 3000)
is declared lost.

High availability: run one or more coordinators on the same NATS server.
One leads (a lease in KV bucket --ha-bucket, default ${DEFAULT_HA_BUCKET},
renewed every --lease-ms / 4); the others print that they stand by and who
leads, and take over once the lease was not renewed for --lease-ms ms
(default ${DEFAULT_LEASE_MS}). Jobs are kept in KV bucket --jobs-bucket
(default ${DEFAULT_JOBS_BUCKET}); a new leader resumes every running job from its
latest completed checkpoint. SIGINT or SIGTERM suspends the leader's jobs
and hands the lease over; they keep running under the next leader. With the
NATS server unreachable it does not wait for it: the lease is left to expire
and the process ends within seconds. A second signal ends it at once.

${REST_HELP}

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("coordinator", args, {
      ...NATS_OPTIONS,
      "checkpoint-bucket": { type: "string" },
      "heartbeat-timeout": { type: "string" },
      "ha-bucket": { type: "string" },
      "jobs-bucket": { type: "string" },
      "lease-ms": { type: "string" },
      ...REST_OPTIONS,
    });
    atMostPositionals("coordinator", positionals, 0, "no positional arguments");
    const rest = restEndpoint(values, () => coordinator.leader);
    const leaseMs = positiveInt(values["lease-ms"], "--lease-ms", DEFAULT_LEASE_MS);
    if (leaseMs < 100) {
      throw new UsageError(`--lease-ms must be at least 100, got ${leaseMs}`);
    }
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
    const haBucket = values["ha-bucket"] ?? DEFAULT_HA_BUCKET;
    const coordinator = new HaCoordinator({
      connection: nc,
      transport,
      storage,
      checkpointBucket: bucket,
      heartbeatTimeoutMs,
      haBucket,
      jobsBucket: values["jobs-bucket"] ?? DEFAULT_JOBS_BUCKET,
      leaseMs,
      onRole: (role) => {
        console.error(
          role.kind === "leader"
            ? `weir coordinator: leading (epoch ${role.epoch})`
            : role.kind === "standby"
            ? `weir coordinator: standby; coordinator ${role.leader.holder} ` +
              `(${role.leader.description}) leads with epoch ${role.leader.epoch}`
            : `weir coordinator: no longer leading (${role.reason})`,
        );
        // The REST API is served by the leader only.
        if (role.kind === "leader") rest.leading();
        else void rest.notLeading();
      },
    });
    await coordinator.start();
    let natsDown = false;
    // A NATS outage is reported as one, not as lost workers (ClusterCoordinator.connectionLost).
    watchConnection(nc, {
      disconnected: () => {
        natsDown = true;
        coordinator.connectionLost();
      },
      reconnected: () => {
        natsDown = false;
        coordinator.connectionRestored();
      },
    });
    console.error(
      `weir coordinator: listening on ${nats.servers}, checkpoints in bucket ${bucket}, ` +
        `leader lease in KV bucket ${haBucket}`,
    );
    const signal = await untilSignal();
    console.error(`weir coordinator: ${signal}, suspending running jobs and handing over the lead`);
    // A second signal ends the process at once.
    void untilSignal().then((again) => {
      console.error(`weir coordinator: ${again} again; exiting without waiting`);
      Deno.exit(1);
    });
    await stopCoordinator({
      stopRest: () => rest.notLeading(),
      stop: (releaseLease) => coordinator.stop({ releaseLease }),
      closeTransport: () => transport.close(),
      closeConnection: () => nc.close(),
      natsDown: () => natsDown,
      leaseMs,
    });
    return 0;
  },
};

/** How long a stopping coordinator waits for each step of its shutdown, in ms. */
export const COORDINATOR_STOP_STEP_MS = 10_000;

/**
 * The steps of a coordinator's shutdown on SIGINT/SIGTERM, each bounded by
 * {@linkcode COORDINATOR_STOP_STEP_MS} (or `stepMs`), so the process ends
 * promptly also when its NATS server is gone: stop serving REST, leave the
 * election (suspending the leader's jobs, releasing the lease only while
 * NATS is reachable), then close the NATS connection (drained while NATS
 * is reachable, else closed at once). A step that fails or times out is
 * reported on stderr (`weir coordinator: could not …`) and the next one
 * runs anyway. Never throws.
 */
export async function stopCoordinator(steps: {
  readonly stopRest: () => Promise<void>;
  readonly stop: (releaseLease: boolean) => Promise<void>;
  readonly closeTransport: () => Promise<void>;
  readonly closeConnection: () => Promise<void>;
  readonly natsDown: () => boolean;
  readonly leaseMs: number;
  readonly stepMs?: number;
}): Promise<void> {
  const ms = steps.stepMs ?? COORDINATOR_STOP_STEP_MS;
  const step = async (what: string, run: () => Promise<void>) => {
    try {
      await deadline(run(), ms, what);
    } catch (error) {
      console.error(`weir coordinator: could not ${what}: ${error}`);
    }
  };
  await step("stop serving the REST API", steps.stopRest);
  const down = steps.natsDown();
  if (down) {
    console.error(
      `weir coordinator: the NATS server is unreachable: the lease could not be released ` +
        `(a standby takes over once it expires, after ${steps.leaseMs} ms) and the NATS ` +
        `connection is closed without draining`,
    );
  }
  await step("leave the leader election", () => steps.stop(!down));
  await step(
    "close its NATS connection",
    down || steps.natsDown() ? steps.closeConnection : steps.closeTransport,
  );
}

/** `weir worker`: a worker offering slots, until SIGINT/SIGTERM. */
export const workerCommand: Command = {
  summary: "worker        run a worker [--slots N] [--id ID] [--heartbeat-interval MS]\n" +
    "                [--local-recovery on|off] [--local-state-dir DIR]",
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
