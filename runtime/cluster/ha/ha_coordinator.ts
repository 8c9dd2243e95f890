/**
 * A highly available coordinator process (Flink's JobManager high
 * availability: `HighAvailabilityServices` with a leader election service
 * and a job graph store, and the dispatcher's leader process): several
 * `weir coordinator` processes share a NATS server; one leads, the others
 * stand by.
 *
 * - **Election** (`leader_election.ts`, `leader_election_service.ts`): a
 *   lease in KV bucket `haBucket`, key `leader`, renewed every
 *   `leaseMs / 4`; a standby takes over once it saw no renewal for
 *   `leaseMs` on its own clock. Each leadership has an epoch one above the
 *   previous one.
 * - **A leader term**: when granted leadership, this process reads every
 *   job of the job store (`job_store.ts`, bucket `jobsBucket`), decides for
 *   each what to do (`job_recovery.ts`: running jobs resume from their
 *   latest completed checkpoint in the checkpoint bucket, with the same job
 *   id and a higher attempt number; ended ones are served), builds a
 *   {@linkcode ClusterCoordinator} for the term, starts it (only now does
 *   it answer on the cluster subjects, so a client never hears `no job`
 *   from a leader that has not read the store yet), and announces its
 *   epoch to the workers (`weir.cluster.leader`): they cancel the subtasks
 *   an older leader deployed and heartbeat at once. Recovered jobs deploy
 *   once the registration window (`workerRegistrationMs`) has passed, so
 *   they spread over every worker rather than the first to answer.
 * - **Losing the lease** (a standby took over, or no renewal succeeded for
 *   `leaseMs`): the term's coordinator is suspended (Flink's SUSPENDED):
 *   it stops answering, checkpointing and deploying, sends nothing to
 *   workers, and leaves the job store to the next leader. The process stays
 *   a candidate and may lead again later, with a new epoch.
 * - **Stopping** (SIGTERM): the leader suspends its jobs and releases the
 *   lease, so a standby takes over at once; running jobs keep running under
 *   it (or under the next coordinator started). With the NATS server
 *   unreachable the lease is not released (a standby takes over once it
 *   expires), so stopping never waits on a server that cannot answer.
 *
 * While no coordinator leads (between a leader's death and the takeover),
 * requests find no responder: waiting clients keep polling, and a
 * submission fails with "no coordinator answers".
 *
 * @module
 */

import type { NatsConnection } from "../../actor/nats_deps.ts";
import type { Transport } from "../../actor/types.ts";
import { encode } from "../../actor/codec.ts";
import { delay } from "../../actor/async.ts";
import { logger } from "../../log.ts";
import type { CheckpointStorage } from "../../checkpoint/storage.ts";
import { ClusterCoordinator, type ClusterCoordinatorOptions } from "../cluster_coordinator.ts";
import { LEADER_SUBJECT, type LeaderAnnouncement } from "../cluster_protocol.ts";
import { LeaderElection, type LeaseValue } from "./leader_election.ts";
import { LeaderElectionService } from "./leader_election_service.ts";
import { JobStore } from "./job_store.ts";
import { LeaderJobRecords } from "./leader_job_records.ts";
import { planJobRecovery } from "./job_recovery.ts";

const log = logger("ha");

/** Default KV bucket of the leader lease. */
export const DEFAULT_HA_BUCKET = "weir-ha";
/** Default KV bucket of the job store. */
export const DEFAULT_JOBS_BUCKET = "weir-jobs";
/** Default lease, in ms. */
export const DEFAULT_LEASE_MS = 3000;
/** Default time a new leader lets workers register before deploying recovered jobs, in ms. */
export const DEFAULT_WORKER_REGISTRATION_MS = 500;

/** What a coordinator process is now. */
export type CoordinatorRole =
  | { readonly kind: "leader"; readonly epoch: number }
  | { readonly kind: "standby"; readonly leader: LeaseValue }
  | { readonly kind: "suspended"; readonly reason: string };

/** Options of {@linkcode HaCoordinator}. */
export interface HaCoordinatorOptions
  extends Omit<ClusterCoordinatorOptions, "ha" | "transport" | "storage"> {
  /** The NATS connection of KV (not closed here). */
  readonly connection: NatsConnection;
  /** The transport over `connection`. */
  readonly transport: Transport;
  /** Checkpoint storage shared with every worker: the truth of completed checkpoints. */
  readonly storage: CheckpointStorage;
  /** KV bucket of the leader lease. Default `weir-ha`. */
  readonly haBucket?: string;
  /** KV bucket of the job store. Default `weir-jobs`. */
  readonly jobsBucket?: string;
  /** Lease duration, in ms (integer >= 100). Default 3000. */
  readonly leaseMs?: number;
  /** How long a new leader waits for worker heartbeats before deploying, in ms. Default 500 (a worker heartbeats every 500 ms, and at once on the announcement). */
  readonly workerRegistrationMs?: number;
  /** Told each time the role changes (the CLI prints it). */
  readonly onRole?: (role: CoordinatorRole) => void;
}

/** One leadership term: its coordinator once built, and whether it ended. */
interface Term {
  readonly epoch: number;
  coordinator: ClusterCoordinator | undefined;
  ended: boolean;
  ready: Promise<void>;
}

/** A coordinator process that leads or stands by; see the module docs. */
export class HaCoordinator {
  readonly #o: HaCoordinatorOptions;
  readonly #candidateId = `${Deno.hostname()}-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  #service: LeaderElectionService | undefined;
  #store: JobStore | undefined;
  #term: Term | undefined;

  /**
   * Keeps the options; no I/O until `start`.
   * @throws {RangeError} when `leaseMs` is not an integer >= 100 or
   *   `workerRegistrationMs` is not a non-negative integer.
   */
  constructor(options: HaCoordinatorOptions) {
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isInteger(leaseMs) || leaseMs < 100) {
      throw new RangeError(
        `HaCoordinator option leaseMs must be an integer >= 100: current value is ${leaseMs}`,
      );
    }
    const reg = options.workerRegistrationMs ?? DEFAULT_WORKER_REGISTRATION_MS;
    if (!Number.isInteger(reg) || reg < 0) {
      throw new RangeError(
        `HaCoordinator option workerRegistrationMs must be an integer >= 0: current value is ${reg}`,
      );
    }
    this.#o = options;
  }

  /** This process's candidate id (host, pid, random digits). */
  get candidateId(): string {
    return this.#candidateId;
  }

  /** The coordinator of the current leadership term, if this process leads. */
  get leader(): ClusterCoordinator | undefined {
    const t = this.#term;
    return t !== undefined && !t.ended ? t.coordinator : undefined;
  }

  /**
   * Opens the buckets and joins the election.
   * @returns once the first round decided (and, when leading, the job store was read).
   * @throws {Error} naming a bucket that can be neither created nor opened.
   */
  async start(): Promise<void> {
    const o = this.#o;
    const leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.#store = await JobStore.open(o.connection, o.jobsBucket ?? DEFAULT_JOBS_BUCKET);
    this.#service = new LeaderElectionService({
      connection: o.connection,
      bucket: o.haBucket ?? DEFAULT_HA_BUCKET,
      election: new LeaderElection({
        candidateId: this.#candidateId,
        description: `${Deno.hostname()} pid ${Deno.pid}`,
        leaseMs,
      }),
      renewIntervalMs: Math.max(25, Math.floor(leaseMs / 4)),
      contender: {
        granted: (epoch) => this.#granted(epoch),
        revoked: (reason) => this.#revoked(reason),
        standby: (leader) => {
          log.info(
            `standby: coordinator ${leader.holder} (${leader.description}) leads with epoch ` +
              `${leader.epoch}`,
            { name: "coordinator-standby", leader: leader.holder, epoch: leader.epoch },
          );
          o.onRole?.({ kind: "standby", leader });
        },
      },
    });
    await this.#service.start();
    await this.#term?.ready;
  }

  /** See `ClusterCoordinator.connectionLost`. */
  connectionLost(): void {
    this.leader?.connectionLost();
  }

  /** See `ClusterCoordinator.connectionRestored`. */
  connectionRestored(): void {
    this.leader?.connectionRestored();
  }

  /**
   * Leaves the election: a leader suspends its jobs (they keep running
   * under the next leader) and releases the lease, unless `releaseLease` is
   * false (the NATS server is unreachable, so the write could only time
   * out: a standby takes over once the lease expires).
   */
  async stop(options: { readonly releaseLease?: boolean } = {}): Promise<void> {
    await this.#service?.stop({ release: options.releaseLease ?? true });
    await this.#endTerm("the coordinator stopped");
  }

  #granted(epoch: number): void {
    const o = this.#o;
    log.info(`leading with epoch ${epoch} (coordinator ${this.#candidateId})`, {
      name: "coordinator-leading",
      epoch,
    });
    const term: Term = { epoch, coordinator: undefined, ended: false, ready: Promise.resolve() };
    this.#term = term;
    term.ready = this.#takeOver(term).catch((error) => {
      // A leader that cannot serve hands the lease over and leaves the election.
      log.error(`leader epoch ${epoch}: taking over failed: ${error}; leaving the election`);
      void this.#endTerm(`taking over failed: ${error}`).then(() => this.#service?.stop());
    });
    o.onRole?.({ kind: "leader", epoch });
  }

  #revoked(reason: string): void {
    log.warn(`no longer leading: ${reason}`, { name: "coordinator-revoked", reason });
    void this.#endTerm(reason);
    this.#o.onRole?.({ kind: "suspended", reason });
  }

  /** Suspends the term's coordinator once its takeover settled. */
  async #endTerm(reason: string): Promise<void> {
    const term = this.#term;
    if (term === undefined || term.ended) return;
    term.ended = true;
    await term.ready;
    if (term.coordinator !== undefined) {
      log.warn(`leader epoch ${term.epoch}: suspending its jobs (${reason})`);
      term.coordinator.suspend();
    }
  }

  /** Reads the store, recovers every job, starts answering and announces the epoch. */
  async #takeOver(term: Term): Promise<void> {
    const o = this.#o;
    const store = this.#store!;
    const records = new LeaderJobRecords({ store, epoch: term.epoch });
    const { jobs, unreadable } = await retrying(
      () => store.list(),
      () => term.ended,
      "read the job store",
    );
    if (term.ended) return;
    for (const u of unreadable) {
      log.error(`leader epoch ${term.epoch}: cannot take over a stored job: ${u.error}`);
    }
    const coordinator = new ClusterCoordinator({
      ...o,
      ha: {
        records,
        // Only recovered jobs wait for workers to register; new ones deploy on who is there.
        workerRegistrationMs: jobs.some((j) => j.status === "RUNNING")
          ? o.workerRegistrationMs ?? DEFAULT_WORKER_REGISTRATION_MS
          : 0,
      },
    });
    // Set at once: a revocation from here on suspends what was recovered so far.
    term.coordinator = coordinator;
    for (const job of jobs) {
      const jobId = job.request.jobId;
      const completed = job.status === "RUNNING"
        ? await retrying(
          () => o.storage.listCompleted(jobId),
          () => term.ended,
          `list the checkpoints of job ${jobId}`,
        )
        : [];
      if (term.ended) return;
      records.adopt(job);
      const plan = planJobRecovery({
        jobId,
        status: job.status,
        attempt: job.attempt,
        latestCheckpointId: job.latestCheckpointId,
        restoreFrom: job.restoreFrom,
        completedCheckpoints: completed,
      });
      coordinator.recover(job, plan);
    }
    coordinator.start();
    const announcement: LeaderAnnouncement = { epoch: term.epoch, leader: this.#candidateId };
    o.transport.publish(LEADER_SUBJECT, encode(announcement));
    log.info(
      `leader epoch ${term.epoch}: took over ${jobs.length} stored job(s) ` +
        `(${jobs.filter((j) => j.status === "RUNNING").length} running)`,
    );
  }
}

/**
 * Runs `op` until it succeeds, every 250 ms (NATS may be restarting), or
 * until `abandoned()`; then rejects with the last error.
 */
async function retrying<T>(
  op: () => Promise<T>,
  abandoned: () => boolean,
  what: string,
): Promise<T> {
  for (let round = 1;; round++) {
    try {
      return await op();
    } catch (error) {
      if (abandoned()) throw error;
      if (round % 20 === 1) log.warn(`cannot ${what} yet (retrying): ${error}`);
      await delay(250);
    }
  }
}
