/**
 * How a job coordinator fails over (Flink's `ExecutionFailureHandler` with
 * its `FailoverStrategy` and `RestartBackoffTimeStrategy`, and the
 * scheduler's restart): for each failure it decides between a region and a
 * full failover (`decideFailoverScope` in `region_failover.ts`), asks the
 * restart strategy, and runs the sequence. It keeps the failover's facts:
 * restarts so far, the last failure, why the current attempt exists, and
 * the region being restarted.
 *
 * - **Full failover:** the job's phase becomes `restarting`; pending
 *   checkpoints are aborted, every subtask is cancelled, and once they ended
 *   and the restart delay passed (`planRestart` in `failover_restart.ts`) the
 *   next attempt is deployed, every subtask restoring the latest checkpoint
 *   whose metadata the coordinator wrote.
 * - **Region failover:** the job stays `running`; `restartRegion`
 *   (`region_failover.ts`) restarts the region while the other regions run
 *   on. Meanwhile {@linkcode JobFailover.phase} says `restarting` (being
 *   cancelled) or `deploying` to the checkpoint coordinator, the deployment
 *   and the cancellation, so no checkpoint is triggered until the region
 *   runs again. A failure meanwhile supersedes it with a full failover.
 *
 * ## Invariants
 *
 * - At most one failover at a time: a failure while the job is
 *   `restarting` or `done` is ignored (the failed attempt is being cancelled
 *   anyway); one while a region restarts becomes a full failover.
 * - Attempt numbers only grow: a full failover's next attempt is above every
 *   subtask's, so its cancel (of attempts up to the current number) also
 *   ends a region redeployed meanwhile.
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";
import { classifyFailure } from "../failure.ts";
import { logger } from "../log.ts";
import type { AttemptCancellation } from "./attempt_cancellation.ts";
import type { CheckpointCoordinator } from "./checkpoint_coordinator.ts";
import type { ExecutionAttempt } from "./execution_attempt.ts";
import type { FailoverRegions, PipelinedRegion } from "./failover_regions.ts";
import { planRestart } from "./failover_restart.ts";
import type { JobPhase } from "./job_phase.ts";
import { decideFailoverScope, failedSubtask, restartRegion } from "./region_failover.ts";
import { createRestartBackoff, type RestartBackoff } from "./restart_strategy.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import {
  describeError as describe,
  describeRestorePoint as describePoint,
} from "./restore_decision.ts";

const log = logger("coordinator");

/** What a {@linkcode JobFailover} needs from the job coordinator that owns it. */
export interface JobFailoverHost {
  /** The job's id, for log lines, errors and the restore decision. */
  readonly jobId: string;
  /** The job's name, for error messages. */
  readonly jobName: string;
  /** Where the metadata of the checkpoint to restore is read. */
  readonly storage: CheckpointStorage;
  /** The checkpoint the job was started from, or `null`. */
  readonly restoreFrom: RestorePoint | null;
  /** The job's pipelined regions. */
  readonly regions: FailoverRegions;
  /** The job's checkpoints (aborts, the checkpoint to restore, ids). */
  readonly checkpoints: CheckpointCoordinator;
  /** Cancels the failed subtasks and waits for them to end. */
  readonly cancellation: AttemptCancellation;
  /** The job's own phase (not the one {@linkcode JobFailover.phase} reports). */
  phase(): JobPhase;
  /** Sets the job's phase (`restarting` for a full failover). */
  setPhase(phase: JobPhase): void;
  /** The current execution attempt. */
  attempt(): ExecutionAttempt;
  /** Replaces the current execution attempt. */
  setAttempt(attempt: ExecutionAttempt): void;
  /** A full failover begins: the deployment stops its timers. */
  deploymentFailingOver(): void;
  /** Deploys the current attempt restoring `restore`: every subtask, or only `region`'s. */
  deploy(restore: RestorePoint | null, region?: PipelinedRegion): void;
  /** A full failover starts attempt `attempt`: live metrics of older ones go. */
  startAttemptMetrics(attempt: number): void;
  /** The job fails for good with `error`. */
  end(error: Error): void;
}

/** Options of {@linkcode JobFailover}. */
export interface JobFailoverOptions {
  /** Whether and when a failed attempt restarts. */
  readonly restartStrategy: RestartStrategyConfig;
  /** Which subtasks a failure restarts. */
  readonly failoverStrategy: FailoverStrategy;
  /** Restarts before this coordinator took the job over (its first attempt number). */
  readonly restartsBefore: number;
}

/** How many failovers {@linkcode JobFailover.history} keeps (Flink's `web.exception-history-size`, 16). */
export const FAILOVER_HISTORY_SIZE = 16;

/**
 * One failover of a job, for its exception history (Flink's
 * `RootExceptionHistoryEntry`, with the failover's scope added): the
 * failure, where it happened, and what restarted.
 */
export interface FailoverRecord {
  /** When the failure was handled, epoch ms. */
  readonly timestamp: number;
  /** The failure, `name: message`. */
  readonly failure: string;
  /** The subtask the failure names (`vertexId#subtask`), if any. */
  readonly subtask: string | undefined;
  /** `region`: only `region` restarted; `full`: every subtask (or the job ended, with no `attempt`). */
  readonly scope: "region" | "full";
  /** The restarted region (`scope: "region"`): its id and `region <id> (<vertex>#<subtask>, …)`. */
  readonly region: { readonly id: number; readonly description: string } | undefined;
  /** The job-wide attempt number when it failed. */
  readonly failedAttempt: number;
  /**
   * The attempt the restarted subtasks run as, once redeployed; `undefined`
   * before, when a later failure superseded this failover (a region
   * failover that became a full one), or when the job ended.
   */
  readonly attempt: number | undefined;
}

/** Fails over one job; see the module docs. */
export class JobFailover {
  readonly #host: JobFailoverHost;
  readonly #strategy: FailoverStrategy;
  /** The job's restart strategy, across failovers (full and region). */
  readonly backoff: RestartBackoff;
  #restarts: number;
  #lastFailure: string | undefined;
  #restartedAfter: string | undefined;
  /** The latest failovers, oldest first, at most {@linkcode FAILOVER_HISTORY_SIZE}. */
  readonly #history: { -readonly [K in keyof FailoverRecord]: FailoverRecord[K] }[] = [];
  /** The region being restarted, and whether it is still being cancelled. */
  #region: { region: PipelinedRegion; stage: "cancelling" | "deploying" } | undefined;

  /**
   * Builds the restart backoff; no I/O.
   * @throws {RangeError} for an invalid restart strategy.
   */
  constructor(host: JobFailoverHost, options: JobFailoverOptions) {
    this.#host = host;
    this.#strategy = options.failoverStrategy;
    this.backoff = createRestartBackoff(options.restartStrategy);
    this.#restarts = options.restartsBefore;
  }

  /** Restarts so far, full and region (Flink's `numRestarts`). */
  get restarts(): number {
    return this.#restarts;
  }

  /** Why the latest failover happened (`name: message`), if one did. */
  get lastFailure(): string | undefined {
    return this.#lastFailure;
  }

  /** Why the current attempt exists (see `JobCoordinator.restartedAfter`). */
  get restartedAfter(): string | undefined {
    return this.#restartedAfter;
  }

  /**
   * The latest failovers, oldest first (at most
   * {@linkcode FAILOVER_HISTORY_SIZE}): each failure handled, whether it
   * restarted a region (which, and as which attempt) or every subtask.
   * Failures ignored while a full failover runs are not in it.
   */
  get history(): readonly FailoverRecord[] {
    return this.#history.map((r) => ({ ...r }));
  }

  /** Starts the history entry of a failover of `error`. */
  #record(
    error: unknown,
    scope: "region" | "full",
    region: PipelinedRegion | undefined,
  ): { attempt: number | undefined } {
    const h = this.#host;
    const failed = failedSubtask(error);
    const entry = {
      timestamp: Date.now(),
      failure: describe(error),
      subtask: failed === undefined ? undefined : `${failed.vertexId}#${failed.subtask}`,
      scope,
      region: region === undefined
        ? undefined
        : { id: region.id, description: h.regions.describe(region) },
      failedAttempt: h.attempt().number,
      attempt: undefined as number | undefined,
    };
    this.#history.push(entry);
    if (this.#history.length > FAILOVER_HISTORY_SIZE) this.#history.shift();
    return entry;
  }

  /**
   * The phase the checkpoint coordinator, the deployment and the
   * cancellation see: the job's, except while a region restarts, when it is
   * `restarting` (being cancelled) or `deploying`.
   */
  phase(): JobPhase {
    const r = this.#region;
    const phase = this.#host.phase();
    if (r === undefined || phase !== "running") return phase;
    return r.stage === "cancelling" ? "restarting" : "deploying";
  }

  /**
   * Every subtask being deployed is ready: the region failover (if one ran)
   * is over. Returns the region to start, or `undefined` when a whole
   * attempt was deployed.
   */
  started(): PipelinedRegion | undefined {
    const region = this.#region?.region;
    this.#region = undefined;
    return region;
  }

  /**
   * Fails over after `error`: a region or a full failover, as
   * `decideFailoverScope` says, through the restart strategy; or the job
   * fails for good. Ignored while restarting or after the job ended.
   * Never rejects.
   */
  async fail(error: unknown): Promise<void> {
    const h = this.#host;
    if (h.phase() === "restarting" || h.phase() === "done") return;
    const finalId = h.attempt().finalCheckpointId;
    const scope = decideFailoverScope({
      strategy: this.#strategy,
      regions: h.regions,
      error,
      running: h.phase() === "running" && this.#region === undefined,
      finishing: finalId !== undefined && (h.checkpoints.latestWritten ?? -1) >= finalId,
      stopping: h.checkpoints.stopping,
      wouldRestart: this.backoff.wouldRestart(Date.now(), error),
    });
    if (scope.kind === "region") return await this.#failRegion(scope.region, error);
    if (scope.why !== "") log.info(`job ${h.jobId}: full failover: ${scope.why}`);
    this.#region = undefined; // a full failover supersedes a region's
    await this.#failAll(error);
  }

  /** What a failover's restart plan reads, full or region. */
  #restartFacts() {
    const h = this.#host;
    return {
      jobId: h.jobId,
      jobName: h.jobName,
      storage: h.storage,
      restoreFrom: h.restoreFrom,
      backoff: this.backoff,
      latestWritten: () => h.checkpoints.latestWritten,
      writesSettled: () => h.checkpoints.writesSettled(),
    };
  }

  /** A region failover (`restartRegion`); the other regions run on. */
  async #failRegion(region: PipelinedRegion, error: unknown): Promise<void> {
    const h = this.#host;
    const restart = { region, stage: "cancelling" as "cancelling" | "deploying" };
    this.#region = restart;
    const where = h.regions.describe(region);
    const failed = h.attempt().number;
    this.#lastFailure = describe(error);
    const entry = this.#record(error, "region", region);
    await restartRegion({
      ...this.#restartFacts(),
      region,
      describe: where,
      error,
      attempt: failed,
      fence: () => h.attempt().fence(region.keys),
      abortCheckpoints: (f, c) => h.checkpoints.regionFailingOver(f, c),
      cancel: (keys) => h.cancellation.cancelSubtasks(keys),
      awaitCancelled: () => h.cancellation.awaitEnded(),
      stillCurrent: () => this.#region === restart && h.phase() === "running",
      fail: (e) => h.end(e),
      redeploy: (point) => {
        h.checkpoints.restoring(point);
        this.#restartedAfter =
          `region failover of ${where}: attempt ${failed} failed: ${this.#lastFailure}`;
        h.setAttempt(h.attempt().afterRegionRestart(failed + 1, region.keys));
        restart.stage = "deploying";
        entry.attempt = h.attempt().number;
        h.deploy(point, region);
        return { attempt: h.attempt().number, restarts: ++this.#restarts };
      },
    });
  }

  /**
   * A full failover: cancels every subtask, then restarts the job as the
   * restart strategy and the restore decision say (`failover_restart.ts`),
   * or fails it for good.
   */
  async #failAll(error: unknown): Promise<void> {
    const h = this.#host;
    h.setPhase("restarting");
    h.deploymentFailingOver();
    this.#lastFailure = describe(error);
    const entry = this.#record(error, "full", undefined);
    const failed = h.attempt().number;
    // A failure that ends the job (one a retry cannot fix, or the restart strategy
    // gives up) is the job's error, said once there; one it restarts after is a warning.
    const unrecoverable = classifyFailure(error).type === "NonRecoverableError";
    const restarts = !unrecoverable && this.backoff.wouldRestart(Date.now(), error);
    (restarts ? log.warn : log.info)(
      `job ${h.jobId}: attempt ${failed} failed` +
        (unrecoverable ? " with an error a restart cannot fix" : "") +
        (!unrecoverable && !restarts ? " and the restart strategy gives up" : "") +
        `: ${this.#lastFailure}`,
    );
    const abortedIds = h.checkpoints.failingOver(
      `attempt ${failed} of job ${h.jobId} failed (${this.#lastFailure})`,
    );
    h.cancellation.cancel();
    const cancelled = h.cancellation.awaitEnded();
    // Once no subtask of the attempt runs and every metadata write settled,
    // the checkpoints it aborted can release their shared blobs.
    h.checkpoints.releaseAborted(abortedIds, cancelled);
    const plan = await planRestart(error, {
      ...this.#restartFacts(),
      cancelled,
      restarting: () => h.phase() === "restarting",
    });
    if (plan.kind === "abandoned") return;
    if (plan.kind === "fail") {
      h.end(plan.error);
      return;
    }
    const latest = plan.point;
    if (h.phase() !== "restarting") return; // cancelled meanwhile
    h.checkpoints.restoring(latest);
    this.#restarts++;
    this.#restartedAfter = `attempt ${failed} failed: ${this.#lastFailure}`;
    h.setAttempt(h.attempt().next());
    entry.attempt = h.attempt().number;
    h.startAttemptMetrics(h.attempt().number);
    log.warn(
      `job ${h.jobId}: restarting as attempt ${h.attempt().number} (restart ${this.#restarts}) from ` +
        (latest === null ? "scratch" : describePoint(latest, h.jobId)),
    );
    h.deploy(latest);
  }
}
