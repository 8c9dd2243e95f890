/**
 * The checkpointing settings of a job as `StreamExecutionEnvironment`
 * takes them (Flink's `CheckpointConfig` setters and its
 * `execution.checkpointing.*` options): the {@linkcode CheckpointingOptions}
 * of `enableCheckpointing`, their defaults, their validation, and the
 * `CheckpointConfig` the executor receives. Pure: no I/O.
 *
 * Invariant: a `Required<CheckpointingOptions>` that
 * {@linkcode mergeCheckpointingOptions} returned is valid as a whole (e.g.
 * unaligned checkpoints only with mode `"exactly-once"`), so the environment
 * never holds a half-applied setting.
 *
 * @example
 * ```ts
 * import {
 *   DEFAULT_CHECKPOINTING_OPTIONS,
 *   mergeCheckpointingOptions,
 * } from "./checkpointing_options.ts";
 * const merged = mergeCheckpointingOptions(DEFAULT_CHECKPOINTING_OPTIONS, { timeoutMs: 5_000 });
 * console.assert(merged.timeoutMs === 5_000 && merged.mode === "exactly-once");
 * ```
 *
 * @module
 */

import type { CheckpointConfig } from "./executor.ts";
import type { CheckpointingMode } from "./sink_v2.ts";
import { checkOptions, checkPositiveInteger, type OptionsShape } from "./options_check.ts";
import {
  DEFAULT_MEMORY_THRESHOLD_BYTES,
  INLINE_BYTES_PER_ACK_LIMIT,
} from "../checkpoint/snapshot_contract.ts";
import type { StateBackendConfig } from "../state/state_backend_factory.ts";

/** Options of `enableCheckpointing`. Times in ms. */
export interface CheckpointingOptions {
  /**
   * The checkpointing mode (Flink's `CheckpointingMode`), default
   * `"exactly-once"`: a task with several inputs aligns barriers (it blocks
   * each input that delivered barrier n until every input did), so its
   * snapshot reflects exactly the records before the barrier.
   * `"at-least-once"`: barriers never block an input and nothing is aligned
   * (Flink's `CheckpointBarrierTracker`); the task snapshots when barrier n
   * has arrived on every live input, so its state may already hold records
   * from after the barrier, and a restore replays them again: no record is
   * lost, some may count twice. Lower latency under backpressure or skew.
   * Savepoints follow the same mode. An exactly-once sink in an
   * at-least-once job is at-least-once end to end (`execute()` logs a
   * warning naming it).
   */
  readonly mode?: CheckpointingMode;
  /** Abort a checkpoint not complete after this long. Default 60 000. */
  readonly timeoutMs?: number;
  /** Least time between a completion and the next trigger. Default 0. */
  readonly minPauseBetweenCheckpointsMs?: number;
  /** Most checkpoints in progress at once. Default 1. */
  readonly maxConcurrentCheckpoints?: number;
  /** Completed checkpoints kept. Default 1 (Flink's default). */
  readonly retainedCheckpoints?: number;
  /** Checkpoint storage directory (local mode). Default `.weir/checkpoints`. */
  readonly directory?: string;
  /** Keep checkpoints after the job finishes. Default false. */
  readonly retainOnFinish?: boolean;
  /**
   * How many consecutive checkpoints may fail before the job fails over
   * (through its restart strategy): a non-negative integer, or `Infinity` to
   * never fail the job because of failed checkpoints. Default 0, Flink's
   * default: the first failed checkpoint fails the job. Flink's
   * `execution.checkpointing.tolerable-failed-checkpoints`
   * (`CheckpointConfig.setTolerableCheckpointFailureNumber`).
   *
   * Counted: checkpoints that expired (`timeoutMs`), that a task declined
   * (its snapshot failed), or whose state or metadata could not be written.
   * Not counted: checkpoints subsumed by a newer one, or aborted because the
   * job is failing over anyway. A completed checkpoint resets the count.
   * The final checkpoint at the end of input counts too. With `Infinity`, a
   * source or snapshot that is stuck, or slower than `timeoutMs`, makes the
   * job retry its checkpoints (the final one included) forever.
   */
  readonly tolerableCheckpointFailures?: number;
  /**
   * Incremental checkpoints of keyed state (Flink's changelog state backend,
   * FLIP-158, with periodic materialization): each checkpoint uploads only
   * the state changed since the previous one, as one changelog segment, and
   * refers to the last full materialization and the segments since it.
   * Works over both state backends (`setStateBackend`). Savepoints stay
   * full and canonical. Default false (every checkpoint uploads all state).
   */
  readonly incrementalCheckpoints?: boolean;
  /**
   * With `incrementalCheckpoints`: materialize (upload a full snapshot that
   * later checkpoints build on, so a restore replays less changelog) at
   * least this often, ms; it also materializes when the changelog outgrows
   * the last materialization. A number ≥ 0 or `Infinity`. Default 600 000
   * (Flink's `state.backend.changelog.periodic-materialize.interval`).
   */
  readonly materializationIntervalMs?: number;
  /**
   * Unaligned checkpoints (FLIP-76; Flink's
   * `execution.checkpointing.unaligned`), for `mode: "exactly-once"` only:
   * a checkpoint's barriers overtake the buffers in flight (queued in the
   * input gates and not yet sent by the record writers), and those buffers
   * are stored in the checkpoint as channel state and replayed first on
   * restore. Checkpoints then complete under backpressure, at the cost of
   * larger checkpoints. Savepoints stay aligned. A checkpoint with channel
   * state cannot be restored at another parallelism (take a savepoint to
   * rescale). Default false.
   */
  readonly unalignedCheckpoints?: boolean;
  /**
   * With `unalignedCheckpoints`: a checkpoint starts aligned and switches
   * to unaligned at a subtask whose alignment has lasted this long, ms,
   * from the arrival of the first barrier at that subtask, announced ahead
   * of the data queued before it (Flink's
   * `execution.checkpointing.aligned-checkpoint-timeout`, which Flink
   * measures from the checkpoint's start). A finite number ≥ 0; 0 (default)
   * means unaligned from the start.
   */
  readonly alignedCheckpointTimeoutMs?: number;
  /**
   * Private state blobs smaller than this many bytes are kept inline in the
   * checkpoint metadata instead of being written to checkpoint storage
   * (Flink's `state.storage.fs.memory-threshold`, `ByteStreamStateHandle`):
   * each blob in storage costs requests (several on the Object Store), so
   * small timers, operator state, splits and watermark floors ride in the
   * ack and `_metadata` instead. An integer in 0..524 288 (the per-ack cap
   * of inline bytes, `INLINE_BYTES_PER_ACK_LIMIT`); 0 writes every blob to
   * storage. Default 20 480 (20 KiB, Flink's default). The metadata grows
   * by up to this much per state participant and subtask.
   */
  readonly memoryThresholdBytes?: number;
}

/**
 * Local checkpoint storage unless `enableCheckpointing(…, { directory })`
 * says otherwise: `.weir/checkpoints`, relative to the working directory.
 */
export const DEFAULT_CHECKPOINT_DIRECTORY = ".weir/checkpoints";

/**
 * Every {@linkcode CheckpointingOptions} at its default, as documented on
 * each option (Flink's defaults where Flink has the option).
 */
export const DEFAULT_CHECKPOINTING_OPTIONS: Readonly<Required<CheckpointingOptions>> = {
  mode: "exactly-once",
  timeoutMs: 60_000,
  minPauseBetweenCheckpointsMs: 0,
  maxConcurrentCheckpoints: 1,
  retainedCheckpoints: 1,
  directory: DEFAULT_CHECKPOINT_DIRECTORY,
  retainOnFinish: false,
  tolerableCheckpointFailures: 0,
  incrementalCheckpoints: false,
  materializationIntervalMs: 600_000,
  unalignedCheckpoints: false,
  alignedCheckpointTimeoutMs: 0,
  memoryThresholdBytes: DEFAULT_MEMORY_THRESHOLD_BYTES,
};

/** The known keys of {@linkcode CheckpointingOptions} and the kinds of their values. */
const CHECKPOINTING_OPTIONS: OptionsShape<CheckpointingOptions> = {
  mode: "string",
  timeoutMs: "number",
  minPauseBetweenCheckpointsMs: "number",
  maxConcurrentCheckpoints: "number",
  retainedCheckpoints: "number",
  directory: "string",
  retainOnFinish: "boolean",
  tolerableCheckpointFailures: "number",
  incrementalCheckpoints: "boolean",
  materializationIntervalMs: "number",
  unalignedCheckpoints: "boolean",
  alignedCheckpointTimeoutMs: "number",
  memoryThresholdBytes: "number",
};

/**
 * `current` with `options` laid over it, checked as a whole: what
 * `StreamExecutionEnvironment.enableCheckpointing` stores. Pure.
 *
 * @param current the settings so far (complete and valid).
 * @param options the caller's options, as passed (checked at run time).
 * @returns the merged settings, complete and valid.
 * @throws {RangeError} when an option is out of range (naming it and its
 *   current value), e.g. a `mode` other than `"exactly-once"` or
 *   `"at-least-once"`, `unalignedCheckpoints` with `"at-least-once"`, or an
 *   unknown option (`enableCheckpointing options: unknown option
 *   'intervalMs' (known: mode, …)`).
 * @throws {TypeError} when an option has the wrong type, e.g.
 *   `retainOnFinish: "yes"`.
 */
export function mergeCheckpointingOptions(
  current: Readonly<Required<CheckpointingOptions>>,
  options: CheckpointingOptions,
): Required<CheckpointingOptions> {
  checkOptions("enableCheckpointing", options, CHECKPOINTING_OPTIONS);
  const merged = { ...current, ...options };
  if (merged.mode !== "exactly-once" && merged.mode !== "at-least-once") {
    throw new RangeError(
      `checkpointing mode must be "exactly-once" or "at-least-once": current value is ${
        JSON.stringify(merged.mode)
      }`,
    );
  }
  checkPositiveInteger("timeoutMs", merged.timeoutMs);
  checkPositiveInteger("maxConcurrentCheckpoints", merged.maxConcurrentCheckpoints);
  checkPositiveInteger("retainedCheckpoints", merged.retainedCheckpoints);
  const tolerable = merged.tolerableCheckpointFailures;
  if (!(Number.isSafeInteger(tolerable) && tolerable >= 0) && tolerable !== Infinity) {
    throw new RangeError(
      `tolerableCheckpointFailures must be a non-negative integer or Infinity: current value is ${tolerable}`,
    );
  }
  if (!(merged.materializationIntervalMs >= 0)) {
    throw new RangeError(
      `materializationIntervalMs must be a number ≥ 0 (ms) or Infinity: current value is ${merged.materializationIntervalMs}`,
    );
  }
  if (
    !(Number.isFinite(merged.alignedCheckpointTimeoutMs) &&
      merged.alignedCheckpointTimeoutMs >= 0)
  ) {
    throw new RangeError(
      `alignedCheckpointTimeoutMs must be a finite number ≥ 0 (ms): current value is ${merged.alignedCheckpointTimeoutMs}`,
    );
  }
  const threshold = merged.memoryThresholdBytes;
  if (
    !(Number.isSafeInteger(threshold) && threshold >= 0 &&
      threshold <= INLINE_BYTES_PER_ACK_LIMIT)
  ) {
    throw new RangeError(
      `memoryThresholdBytes must be an integer in 0..${INLINE_BYTES_PER_ACK_LIMIT} (bytes): current value is ${threshold}`,
    );
  }
  if (merged.unalignedCheckpoints && merged.mode !== "exactly-once") {
    throw new RangeError(
      `unalignedCheckpoints needs mode "exactly-once" (at-least-once never aligns): current mode is ${
        JSON.stringify(merged.mode)
      }`,
    );
  }
  return merged;
}

/**
 * `config` with the changelog of incremental checkpoints on or off, as
 * `checkpointing.incrementalCheckpoints` says (FLIP-158: the changelog wraps
 * whichever backend `config` names). Pure; returns `config` itself when
 * nothing changes.
 */
export function withChangelog(
  config: StateBackendConfig,
  checkpointing: Readonly<Required<CheckpointingOptions>>,
): StateBackendConfig {
  const { incrementalCheckpoints, materializationIntervalMs } = checkpointing;
  if (!incrementalCheckpoints) {
    if (config.changelog === undefined) return config;
    const { changelog: _, ...rest } = config;
    return rest;
  }
  return { ...config, changelog: { materializationIntervalMs } };
}

/**
 * The `CheckpointConfig` an executor receives (Flink's `CheckpointConfig`):
 * `intervalMs` (ms; 0 = no periodic checkpoints) and the settings the
 * coordinator acts on. The storage directory travels beside it in the
 * `JobExecutionRequest`; the mode and the unaligned settings reach the
 * tasks through `TaskConfig`.
 */
export function checkpointConfigOf(
  intervalMs: number,
  checkpointing: Readonly<Required<CheckpointingOptions>>,
): CheckpointConfig {
  return {
    intervalMs,
    timeoutMs: checkpointing.timeoutMs,
    minPauseBetweenCheckpointsMs: checkpointing.minPauseBetweenCheckpointsMs,
    maxConcurrentCheckpoints: checkpointing.maxConcurrentCheckpoints,
    retainedCheckpoints: checkpointing.retainedCheckpoints,
    retainOnFinish: checkpointing.retainOnFinish,
    tolerableCheckpointFailures: checkpointing.tolerableCheckpointFailures,
    incrementalCheckpoints: checkpointing.incrementalCheckpoints,
    materializationIntervalMs: checkpointing.materializationIntervalMs,
    unalignedCheckpoints: checkpointing.unalignedCheckpoints,
    alignedCheckpointTimeoutMs: checkpointing.alignedCheckpointTimeoutMs,
    memoryThresholdBytes: checkpointing.memoryThresholdBytes,
  };
}
