/**
 * The client side of cluster mode: `execute()` with `--nats URL` submits the
 * job to the cluster's coordinator and waits for its end, and the CLI lists
 * and cancels jobs.
 *
 * The job module's URL (`Deno.mainModule`) is the unit of deployment:
 * workers import that URL, so it must be reachable from every worker host
 * (an `http(s)://` URL, or a `file://` path that exists on every host).
 *
 * @module
 */

import { decode, encode } from "../actor/codec.ts";
import { NoRespondersError, type Transport } from "../actor/types.ts";
import { delay } from "../actor/async.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import { summarizeJobGraph } from "../graph/job_graph_summary.ts";
import {
  CANCEL_SUBJECT,
  type CancelReply,
  type ClusterOverview,
  JOB_STATUS_SUBJECT,
  type JobStatus,
  type JobStatusReply,
  LIST_SUBJECT,
  SAVEPOINT_SUBJECT,
  type SavepointReply,
  type SavepointRequest,
  STOP_SUBJECT,
  type StopRequest,
  SUBMIT_SUBJECT,
  type SubmitReply,
  type SubmitRequest,
} from "./cluster_protocol.ts";
import type { CheckpointConfig } from "./coordinator.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";
import { newJobId, type ResumeRequest } from "./local_executor.ts";
import { ClusterRequestError, type JobExecutionResult, JobFailedError } from "./job_result.ts";
import {
  connectNats,
  type NatsConnectionOptions,
  natsOptionsFromArgs,
  watchConnection,
} from "../actor/nats_connect.ts";
import { NatsTransport } from "../actor/nats_transport.ts";
import { logger } from "../log.ts";
import type { JobClient } from "../api/executor.ts";
import { natsFlags, resumeCommand } from "./resume_command.ts";
import { onInterrupt } from "./interrupt.ts";

const log = logger("client");

/** What a submission needs besides the graph. */
export interface SubmitOptions {
  /** Transport to the cluster (NATS). */
  readonly transport: Transport;
  /** The job module's URL. */
  readonly moduleUrl: string;
  /** The job module's arguments. */
  readonly args: readonly string[];
  /** Checkpointing settings. */
  readonly checkpointing: CheckpointConfig;
  /** Restart strategy. */
  readonly restartStrategy: RestartStrategyConfig;
  /** Which subtasks a failure restarts (`FailoverStrategy`); absent: `"region"`. */
  readonly failoverStrategy?: FailoverStrategy | undefined;
  /** Checkpoint to resume from. */
  readonly resume?: ResumeRequest | undefined;
  /** Period of status polls, in ms. Default 250. */
  readonly pollIntervalMs?: number;
  /** The default parallelism from `weir run -p N`, for the slot threads (see `SubmitRequest`). */
  readonly defaultParallelism?: number | undefined;
  /** How the client reached NATS, for the commands it prints (secrets are never printed). */
  readonly nats?: NatsConnectionOptions | undefined;
}

/**
 * Sends a request to the coordinator and decodes the answer.
 * @throws {ClusterRequestError} when no coordinator answers.
 */
export async function askCoordinator<T>(
  transport: Transport,
  subject: string,
  body: unknown,
  timeoutMs = 10_000,
): Promise<T> {
  try {
    const reply = await transport.request(subject, encode(body), { timeoutMs });
    return decode(reply.data) as T;
  } catch (error) {
    if (error instanceof NoRespondersError) {
      throw new ClusterRequestError(
        `No Weir coordinator answers on ${subject}: start one with ` +
          "`deno run -A cli.ts coordinator --nats <url>`",
        { cause: error },
      );
    }
    throw new ClusterRequestError(`The coordinator did not answer on ${subject}: ${error}`, {
      cause: error,
    });
  }
}

/**
 * Submits `graph` and waits until the job ends.
 * @returns the job's result.
 * @throws {ClusterRequestError} when no coordinator answers or it refuses the job.
 * @throws {JobFailedError} when the job fails for good or is cancelled.
 */
export async function submitToCluster(
  graph: JobGraph,
  options: SubmitOptions,
): Promise<JobExecutionResult> {
  const jobId = await submitJob(graph, options);
  return await awaitJob(options.transport, jobId, options.pollIntervalMs ?? 250);
}

/**
 * Submits `graph` and returns its job id once the coordinator accepted it.
 * @throws {ClusterRequestError} when no coordinator answers or it refuses the job.
 */
export async function submitJob(graph: JobGraph, options: SubmitOptions): Promise<string> {
  const request: SubmitRequest = {
    jobId: newJobId(graph.name),
    moduleUrl: options.moduleUrl,
    args: [...options.args],
    graph: summarizeJobGraph(graph),
    checkpointing: options.checkpointing,
    restartStrategy: options.restartStrategy,
    ...(options.failoverStrategy === undefined
      ? {}
      : { failoverStrategy: options.failoverStrategy }),
    resume: options.resume,
    ...(options.defaultParallelism === undefined
      ? {}
      : { defaultParallelism: options.defaultParallelism }),
  };
  const reply = await askCoordinator<SubmitReply>(options.transport, SUBMIT_SUBJECT, request);
  if (!reply.ok) {
    throw new ClusterRequestError(`The coordinator refused job '${graph.name}': ${reply.error}`);
  }
  // Always shown (Flink's client prints the JobID too): it is what `weir cancel` needs.
  const nats = natsText(options.nats);
  console.error(
    `weir: submitted job ${reply.jobId} '${graph.name}' from ${options.moduleUrl}; ` +
      `cancel it with: weir cancel ${reply.jobId} ${nats}; stop it with a savepoint ` +
      `with: weir stop ${reply.jobId} --savepoint ${nats}`,
  );
  return reply.jobId;
}

/** How long a savepoint or stop request waits for the coordinator's answer, in ms. */
export const SAVEPOINT_REQUEST_TIMEOUT_MS = 10 * 60_000;

/**
 * Triggers a savepoint of a running job and waits until it is stored.
 * @returns the savepoint's path.
 * @throws {ClusterRequestError} when no coordinator answers, the job is not
 *   running, or the savepoint fails (the message says why).
 */
export async function triggerSavepointOnCluster(
  transport: Transport,
  jobId: string,
  directory?: string,
  timeoutMs: number = SAVEPOINT_REQUEST_TIMEOUT_MS,
): Promise<string> {
  const reply = await askCoordinator<SavepointReply>(
    transport,
    SAVEPOINT_SUBJECT,
    { jobId, directory } satisfies SavepointRequest,
    timeoutMs,
  );
  if (!reply.ok) {
    throw new ClusterRequestError(`Cannot take a savepoint of job ${jobId}: ${reply.error}`);
  }
  return reply.path;
}

/**
 * Stops a running job with a savepoint (FLIP-34) and waits until the
 * savepoint is stored; the job then ends FINISHED.
 * @returns the savepoint's path.
 * @throws {ClusterRequestError} when no coordinator answers, the job is not
 *   running, or the stop fails (the job then keeps running).
 */
export async function stopWithSavepointOnCluster(
  transport: Transport,
  jobId: string,
  options: { readonly directory?: string | undefined; readonly drain?: boolean | undefined } = {},
  timeoutMs: number = SAVEPOINT_REQUEST_TIMEOUT_MS,
): Promise<string> {
  const reply = await askCoordinator<SavepointReply>(
    transport,
    STOP_SUBJECT,
    { jobId, directory: options.directory, drain: options.drain ?? false } satisfies StopRequest,
    timeoutMs,
  );
  if (!reply.ok) {
    throw new ClusterRequestError(`Cannot stop job ${jobId} with a savepoint: ${reply.error}`);
  }
  return reply.path;
}

/**
 * `executeAsync()` in the client role: connects as {@linkcode executeOnCluster}
 * does, submits, and returns a {@linkcode JobClient}; the connection closes
 * once the job ended (its result settled).
 * @throws {ClusterRequestError} when NATS or the coordinator cannot be reached.
 */
export async function submitOnCluster(
  graph: JobGraph,
  options: Omit<SubmitOptions, "transport">,
): Promise<JobClient> {
  const { transport, nats, disconnected } = await connectClient(graph, options.args);
  let jobId: string;
  try {
    jobId = await submitJob(graph, { ...options, transport, nats });
  } catch (error) {
    await transport.close();
    throw error;
  }
  const result = awaitJob(transport, jobId, {
    pollIntervalMs: options.pollIntervalMs ?? 250,
    disconnected,
  }).finally(() => transport.close());
  result.catch(() => {}); // observed through result()
  return {
    jobId,
    triggerSavepoint: (directory) => triggerSavepointOnCluster(transport, jobId, directory),
    stopWithSavepoint: (o = {}) => stopWithSavepointOnCluster(transport, jobId, o),
    cancel: () => cancelJob(transport, jobId),
    result: () => result,
  };
}

/** How often the waiting client repeats that its job waits for slots, at most, in ms. */
export const WAITING_REPEAT_MS = 5_000;

/** Options of {@linkcode awaitJob}. */
export interface AwaitJobOptions {
  /** Period of status polls, in ms. Default 250. */
  readonly pollIntervalMs?: number | undefined;
  /**
   * Whether the client's own NATS connection is down now (see
   * `watchConnection`): while it is, the client does not also report the
   * coordinator as unreachable (the connection's log line says NATS is
   * down and reconnecting). Default: never down.
   */
  readonly disconnected?: (() => boolean) | undefined;
}

/**
 * Polls a job's status until it ends (polling survives NATS reconnects; a
 * one-shot notification could be lost). On the way it logs (warn) each
 * restart once, naming the failed attempt (restarts between two polls as
 * one line saying how many, so attempt numbers never jump unexplained),
 * and, while the job waits for
 * slots (`WAITING_FOR_RESOURCES`), what it waits for: when that starts or
 * changes, then at most every {@linkcode WAITING_REPEAT_MS} ms.
 *
 * @param transport the client's transport.
 * @param jobId the job.
 * @param options poll period in ms (a number), or {@linkcode AwaitJobOptions}.
 * @returns the job's result.
 * @throws {JobFailedError} when the job fails or is cancelled.
 */
export async function awaitJob(
  transport: Transport,
  jobId: string,
  options: number | AwaitJobOptions = 250,
): Promise<JobExecutionResult> {
  const o: AwaitJobOptions = typeof options === "number" ? { pollIntervalMs: options } : options;
  const pollIntervalMs = o.pollIntervalMs ?? 250;
  let unreachableSince: number | undefined;
  let attempt = 0;
  let lastWaiting: string | undefined;
  let waitingSince = 0;
  let waitingSaidAt = 0;
  while (true) {
    await delay(pollIntervalMs);
    let answer: JobStatusReply;
    try {
      answer = await askCoordinator<JobStatusReply>(transport, JOB_STATUS_SUBJECT, { jobId }, 5000);
      unreachableSince = undefined;
    } catch (error) {
      // NATS may be restarting: keep polling, but say so once in a while.
      const now = Date.now();
      unreachableSince ??= now;
      if (o.disconnected?.() === true) {
        unreachableSince = now; // a NATS outage: the connection's own log line says so
      } else if (now - unreachableSince > 10_000) {
        log.warn(
          `job ${jobId}: cannot reach the coordinator for ${now - unreachableSince} ms ` +
            `(NATS is connected): ${error}`,
        );
        unreachableSince = now;
      }
      continue;
    }
    if (!answer.ok) throw new JobFailedError(`Job ${jobId}: ${answer.error}`);
    const status = answer.status;
    if (status.attempt > attempt) {
      // Restarts faster than the polls: say how many, so attempt numbers never jump unexplained.
      const restarts = status.attempt - attempt;
      attempt = status.attempt;
      log.warn(
        restarts === 1
          ? `job ${jobId} restarted as attempt ${attempt} after ${restartReason(status)}`
          : `job ${jobId} restarted ${restarts} times since the last report, now as attempt ` +
            `${attempt}; the last restart followed ${restartReason(status)}`,
      );
    }
    const waiting = status.waitingForSlots;
    const now = Date.now();
    if (waiting !== undefined && waiting !== lastWaiting) {
      waitingSince = waitingSaidAt = now;
      log.warn(`job ${jobId} is ${status.status}: ${waiting}`);
    } else if (waiting !== undefined && now - waitingSaidAt >= WAITING_REPEAT_MS) {
      waitingSaidAt = now;
      log.warn(
        `job ${jobId} is still ${status.status} after ${
          Math.round((now - waitingSince) / 1000)
        } s: ${waiting}`,
      );
    }
    lastWaiting = waiting;
    const outcome = answer.outcome;
    if (outcome === undefined) continue;
    if (outcome.t === "result") return outcome.result;
    throw new JobFailedError(outcome.error.message, {
      ...(outcome.resumable === undefined ? {} : { resumable: outcome.resumable }),
    });
  }
}

/** The cluster's jobs and workers. */
export function listJobs(transport: Transport): Promise<ClusterOverview> {
  return askCoordinator<ClusterOverview>(transport, LIST_SUBJECT, {});
}

/**
 * Cancels a running job.
 * @throws {ClusterRequestError} when the job is unknown or not running.
 */
export async function cancelJob(transport: Transport, jobId: string): Promise<void> {
  const reply = await askCoordinator<CancelReply>(transport, CANCEL_SUBJECT, { jobId });
  if (!reply.ok) throw new ClusterRequestError(`Cannot cancel job ${jobId}: ${reply.error}`);
}

/**
 * `execute()` in the client role: connects with the NATS options of `args`
 * and the environment (`--nats`, `WEIR_NATS_URL`, ...), submits, waits for
 * the end and disconnects.
 * @throws {ClusterRequestError} when NATS or the coordinator cannot be reached.
 * @throws {JobFailedError} when the job fails for good or is cancelled.
 */
export async function executeOnCluster(
  graph: JobGraph,
  options: Omit<SubmitOptions, "transport">,
): Promise<JobExecutionResult> {
  const { transport, nats, disconnected } = await connectClient(graph, options.args);
  try {
    const jobId = await submitJob(graph, { ...options, transport, nats });
    let interrupted = false;
    const stopListening = onInterrupt(() => {
      if (interrupted) {
        console.error(
          `weir: Ctrl-C again: leaving without waiting; job ${jobId} may still be running ` +
            `(weir list ${natsText(nats)}; weir cancel ${jobId} ${natsText(nats)})`,
        );
        Deno.exit(130);
      }
      interrupted = true;
      console.error(
        `weir: Ctrl-C: cancelling job ${jobId} on the cluster (Ctrl-C again to leave at once)`,
      );
      cancelJob(transport, jobId).catch((error) =>
        log.warn(`job ${jobId}: the cancel after Ctrl-C failed: ${error}`)
      );
    });
    try {
      return await awaitJob(transport, jobId, {
        pollIntervalMs: options.pollIntervalMs ?? 250,
        disconnected,
      });
    } catch (error) {
      if (error instanceof JobFailedError && error.resumable !== false) {
        console.error(
          `weir: job ${jobId} did not finish; resume it from its latest retained checkpoint ` +
            `with: ${resumeCommand({ jobId, nats })}`,
        );
      } else if (error instanceof JobFailedError) {
        console.error(`weir: job ${jobId} failed; it has no completed checkpoint to resume from`);
      }
      if (error instanceof JobFailedError && interrupted) Deno.exit(130);
      throw error;
    } finally {
      stopListening();
    }
  } finally {
    await transport.close();
  }
}

/**
 * A detached submission (Flink's `flink run --detached`): connects as
 * {@linkcode executeOnCluster} does, submits, prints the job id and the
 * commands to follow it on stdout, and disconnects; the job runs on without
 * this client.
 * @returns the job's id.
 * @throws {ClusterRequestError} when NATS or the coordinator cannot be reached
 *   or the coordinator refuses the job.
 */
export async function submitDetached(
  graph: JobGraph,
  options: Omit<SubmitOptions, "transport">,
): Promise<string> {
  const { transport, nats } = await connectClient(graph, options.args);
  try {
    const jobId = await submitJob(graph, { ...options, transport, nats });
    const flags = natsText(nats);
    console.log(
      `Job has been submitted with JobID ${jobId}\n` +
        `follow it with:  weir list ${flags}\n` +
        `                 weir info ${jobId} ${flags}\n` +
        `cancel it with:  weir cancel ${jobId} ${flags}`,
    );
    return jobId;
  } finally {
    await transport.close();
  }
}

/**
 * Connects with the NATS options of `args` and the environment.
 * @throws {ClusterRequestError} when neither gives a URL.
 */
async function connectClient(
  graph: JobGraph,
  args: readonly string[],
): Promise<
  { transport: NatsTransport; nats: NatsConnectionOptions; disconnected: () => boolean }
> {
  const nats = natsOptionsFromArgs([...args], Deno.env);
  if (nats === undefined) {
    throw new ClusterRequestError("cluster mode needs --nats <url> or WEIR_NATS_URL");
  }
  const nc = await connectNats({ ...nats, name: `weir-client-${graph.name}` });
  // Whether the connection has lost its server now: a NATS outage, said by its own log line.
  let down = false;
  watchConnection(nc, { disconnected: () => down = true, reconnected: () => down = false });
  return {
    transport: new NatsTransport(nc, { ownsConnection: true }),
    nats,
    disconnected: () => down,
  };
}

/** The NATS flags of the commands the client prints (`--nats <url>` when unknown). */
function natsText(nats: NatsConnectionOptions | undefined): string {
  return nats === undefined ? "--nats <url>" : natsFlags(nats).join(" ");
}

/**
 * What the client says a restart followed: the coordinator's
 * `restartedAfter` (`attempt <n> failed: …`, the failed attempt, not the new
 * one); from an older coordinator, its `lastFailure`.
 */
function restartReason(status: JobStatus): string {
  if (status.restartedAfter !== undefined) return status.restartedAfter;
  return `a failure: ${status.lastFailure ?? "unknown"}`;
}
