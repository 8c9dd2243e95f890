/**
 * `StreamExecutionEnvironment`: the entry point of a job (Flink's class of
 * the same name). It holds the job's settings, makes the first streams, and
 * `execute()` runs the dataflow.
 *
 * This module describes the job and runs none (DESIGN §16): `execute()` hands
 * the job graph to the {@linkcode JobExecutor} registered in `executor.ts`
 * (Flink's `PipelineExecutor`), which `runtime/cluster/default_executor.ts`
 * implements and registers; `mod.ts` imports it.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const out: number[] = [];
 * env.fromCollection([1, 2, 3]).map((n) => n * 10).sinkTo({ kind: "simple", invoke: (n) => { out.push(n); } });
 * await env.execute("times ten");
 * console.assert(out.join() === "10,20,30");
 * ```
 *
 * @module
 */

import { StreamGraph } from "../graph/stream_graph.ts";
import { buildJobGraph, type JobGraph } from "../graph/job_graph.ts";
import type { Source, SourceSplit } from "./source.ts";
import { SingleOutputStreamOperator, type StreamGraphOwner } from "./datastream.ts";
import { CollectionSource } from "./collection_source.ts";
import { SocketTextSource, type SocketTextSourceOptions } from "./socket_source.ts";
import { WatermarkStrategy } from "../time/watermark.ts";
import { type Clock, systemClock } from "../time/clock.ts";
import { DEFAULT_MAX_PARALLELISM } from "../state/key_group.ts";
import {
  defaultRestartStrategy,
  type FailoverStrategy,
  type RestartStrategyConfig,
  validateFailoverStrategy,
  validateRestartStrategy,
} from "./restart_strategy_config.ts";
import type { JobExecutionResult } from "./job_execution_result.ts";
import {
  type CoordinatorFaultPoint,
  type JobClient,
  type JobExecutionRequest,
  type JobExecutor,
  jobExecutor,
  type ResumeOptions,
  type SavepointRestoreSettings,
} from "./executor.ts";
import type { FaultInjector, TaskConfig } from "../task/stream_task.ts";
import { checkJobDeliveryGuarantees, type JobSink } from "./delivery_check.ts";
import { logger } from "../log.ts";
import { checkOptions, checkPositiveInteger, type OptionsShape } from "./options_check.ts";
import { checkStateBackendConfig, type StateBackendKind } from "../state/state_backend_factory.ts";
import {
  checkpointConfigOf,
  type CheckpointingOptions,
  DEFAULT_CHECKPOINT_DIRECTORY,
  DEFAULT_CHECKPOINTING_OPTIONS,
  mergeCheckpointingOptions,
  withChangelog,
} from "./checkpointing_options.ts";

export type { StateBackendKind } from "../state/state_backend_factory.ts";

const log = logger("environment");

export type { CheckpointingOptions } from "./checkpointing_options.ts";
export type { JobClient, ResumeOptions, SavepointRestoreSettings };

/** Options of {@linkcode StreamExecutionEnvironment.setStateBackend}; they apply to `"sqlite"` only. */
export interface StateBackendOptions {
  /**
   * The local directory under which each subtask's database directory is
   * made (and deleted when the subtask ends). Default: the system's
   * temporary directory.
   */
  readonly localDirectory?: string;
  /** The cache's bound, in entries per subtask (default 100 000). */
  readonly cacheEntries?: number;
}

const STATE_BACKEND_OPTIONS: OptionsShape<StateBackendOptions> = {
  localDirectory: "string",
  cacheEntries: "number",
};

/** The entry point of a job: settings, sources and `execute()`. */
export class StreamExecutionEnvironment implements StreamGraphOwner {
  /** The graph the job's streams build. */
  readonly streamGraph: StreamGraph = new StreamGraph();
  /** Set by `setParallelism`; else the executor's default (`weir run -p`), else 1. */
  #parallelism: number | undefined;
  #maxParallelism = DEFAULT_MAX_PARALLELISM;
  #chaining = true;
  #checkpointIntervalMs = 0;
  #checkpointing: Required<CheckpointingOptions> = { ...DEFAULT_CHECKPOINTING_OPTIONS };
  #restartStrategy: RestartStrategyConfig | undefined;
  #failoverStrategy: FailoverStrategy = "region";
  #task: { -readonly [K in keyof TaskConfig]: TaskConfig[K] } = {
    bufferSize: 2048,
    bufferTimeoutMs: 10,
    initialCredits: 8,
    autoWatermarkIntervalMs: 200,
    checkpointingMode: "none",
    objectReuse: true,
  };
  #clock: Clock = systemClock;
  #resume: ResumeOptions | undefined;
  #savepoint: SavepointRestoreSettings | undefined;
  #faults: FaultInjector | undefined;
  #coordinatorFaults:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;

  /** A new environment for a job (local mode). */
  static getExecutionEnvironment(): StreamExecutionEnvironment {
    return new StreamExecutionEnvironment();
  }

  /**
   * Sets the default parallelism of operators. Without it, operators run at
   * the executor's default (`weir run -p N`, Flink's `parallelism.default`),
   * else 1; an operator's own `setParallelism` wins over both, as in Flink.
   * @throws {RangeError} unless a positive integer.
   */
  setParallelism(parallelism: number): this {
    this.#parallelism = checkPositiveInteger("parallelism", parallelism);
    return this;
  }

  /**
   * The default parallelism: the one set with `setParallelism`, else the
   * executor's default (`weir run -p N`), else 1.
   * @throws {RangeError} when `weir run -p`'s value (`WEIR_PARALLELISM`) is
   *   not a positive integer.
   */
  getParallelism(): number {
    return this.#parallelism ?? executorDefaultParallelism() ?? 1;
  }

  /**
   * Sets the default number of key groups (default 128), the upper bound of rescaling.
   * @throws {RangeError} unless an integer in 1..32768.
   */
  setMaxParallelism(maxParallelism: number): this {
    checkPositiveInteger("maxParallelism", maxParallelism);
    if (maxParallelism > 32768) {
      throw new RangeError(
        `maxParallelism must be at most 32768: current value is ${maxParallelism}`,
      );
    }
    this.#maxParallelism = maxParallelism;
    return this;
  }

  /** Runs every operator in its own subtask actor (for debugging and tests). */
  disableOperatorChaining(): this {
    this.#chaining = false;
    return this;
  }

  /**
   * Takes a checkpoint every `intervalMs` ms. With checkpointing on and no
   * restart strategy set, the job restarts with fixed-delay (unlimited
   * attempts, 1000 ms apart), as Flink does. A failed checkpoint fails the
   * job over unless `options.tolerableCheckpointFailures` tolerates it.
   * @throws {RangeError} unless `intervalMs` is a positive integer, or when
   *   an option is out of range (naming it and its current value), e.g. a
   *   `mode` other than `"exactly-once"` or `"at-least-once"`, or an
   *   unknown option (`enableCheckpointing options: unknown option
   *   'intervalMs' (known: mode, …)`; a job run without type checking would
   *   otherwise ignore it).
   * @throws {TypeError} when an option has the wrong type, e.g.
   *   `retainOnFinish: "yes"`.
   */
  enableCheckpointing(intervalMs: number, options: CheckpointingOptions = {}): this {
    this.#checkpointIntervalMs = checkPositiveInteger("checkpoint interval (ms)", intervalMs);
    const merged = mergeCheckpointingOptions(this.#checkpointing, options);
    this.#checkpointing = merged;
    this.#task.checkpointingMode = merged.mode;
    this.#task.unalignedCheckpoints = merged.unalignedCheckpoints;
    this.#task.alignedCheckpointTimeoutMs = merged.alignedCheckpointTimeoutMs;
    this.#task.memoryThresholdBytes = merged.memoryThresholdBytes;
    if (this.#task.stateBackend !== undefined || merged.incrementalCheckpoints) {
      this.#task.stateBackend = withChangelog(this.#task.stateBackend ?? { kind: "heap" }, merged);
    }
    return this;
  }

  /**
   * Chooses the keyed state backend of every keyed operator (Flink's
   * `env.setStateBackend` / `state.backend.type`):
   *
   * - `"heap"` (the default): JS `Map`s, copy-on-write snapshots; state must
   *   fit in the JS heap (`HeapKeyedStateBackend`).
   * - `"sqlite"`: a local `node:sqlite` database per subtask behind a bounded
   *   cache, for state larger than the JS heap, in RocksDB's role
   *   (`SqliteKeyedStateBackend`); slower per access when the state does not
   *   fit in its cache.
   *
   * Both write the same canonical savepoints, so a job can change backend
   * when it resumes from a savepoint.
   *
   * @example
   * ```ts ignore
   * env.setStateBackend("sqlite", { localDirectory: "/var/lib/weir", cacheEntries: 200_000 });
   * ```
   * @throws {RangeError} for an unknown backend, an unknown option, an
   *   option `"heap"` does not take, or `cacheEntries` not an integer ≥ 1.
   * @throws {TypeError} when an option has the wrong type or
   *   `localDirectory` is empty.
   */
  setStateBackend(backend: StateBackendKind, options: StateBackendOptions = {}): this {
    checkOptions("setStateBackend", options, STATE_BACKEND_OPTIONS);
    this.#task.stateBackend = withChangelog(
      checkStateBackendConfig({ kind: backend, ...options }, "setStateBackend"),
      this.#checkpointing,
    );
    return this;
  }

  /** Sets the checkpoint storage directory (local mode) without enabling periodic checkpoints. */
  setCheckpointDirectory(directory: string): this {
    this.#checkpointing = { ...this.#checkpointing, directory };
    return this;
  }

  /**
   * Sets the restart strategy (see `RestartStrategies`). Without one, a job
   * with checkpointing restarts 3 times in local mode and without limit on a
   * cluster, 1 s apart; without checkpointing it does not restart (see
   * `defaultRestartStrategy`).
   * @throws {RangeError} for invalid settings.
   */
  setRestartStrategy(strategy: RestartStrategyConfig): this {
    this.#restartStrategy = validateRestartStrategy(strategy);
    return this;
  }

  /**
   * Sets which subtasks a failure restarts (Flink's
   * `jobmanager.execution.failover-strategy`): `"region"` (the default, as
   * in Flink) restarts the failed subtask's pipelined region only, the
   * subtasks joined to it by channels (forward edges join subtask `i` with
   * subtask `i`, every other partitioner joins all); `"full"` restarts every
   * subtask. See `FailoverStrategy`.
   * @throws {RangeError} when `strategy` is neither `"region"` nor `"full"`.
   */
  setFailoverStrategy(strategy: FailoverStrategy): this {
    this.#failoverStrategy = validateFailoverStrategy(strategy);
    return this;
  }

  /**
   * Sets the longest a partly filled network buffer waits while its subtask
   * is busy, in ms (default 10). Buffers are also sent when full, before
   * every in-band event and whenever the subtask runs out of input.
   * @throws {RangeError} when negative.
   */
  setBufferTimeout(ms: number): this {
    if (!(ms >= 0)) throw new RangeError(`buffer timeout must be >= 0 ms: current value is ${ms}`);
    this.#task.bufferTimeoutMs = ms;
    return this;
  }

  /**
   * Sets the records per network buffer (default 2048) and the buffers in
   * flight per channel (default 8).
   * @throws {RangeError} unless positive integers.
   */
  setNetworkBuffers(options: { bufferSize?: number; credits?: number }): this {
    if (options.bufferSize !== undefined) {
      this.#task.bufferSize = checkPositiveInteger("bufferSize", options.bufferSize);
    }
    if (options.credits !== undefined) {
      this.#task.initialCredits = checkPositiveInteger("credits", options.credits);
    }
    return this;
  }

  /**
   * Lets network edges between subtasks of one thread (all of local mode;
   * one job's subtasks on one slot in cluster mode) hand records over as they are, without encoding them: the default
   * (Flink's `ExecutionConfig.enableObjectReuse`). Records must then not be
   * changed after `collect`, by the function that emitted them or by the one
   * that receives them; values read from state likewise.
   */
  enableObjectReuse(): this {
    this.#task.objectReuse = true;
    return this;
  }

  /**
   * Makes every network edge encode its records, also between subtasks of
   * one thread (Flink's `ExecutionConfig.disableObjectReuse`): each consumer
   * gets its own copy, records must be plain data, and a record over the
   * transport's max payload fails the job, inside a thread as across
   * threads. Slower (a keyed edge then spends most of its time encoding).
   */
  disableObjectReuse(): this {
    this.#task.objectReuse = false;
    return this;
  }

  /**
   * Sets the period of source watermark generation, in ms (default 200).
   * @throws {RangeError} unless a positive integer.
   */
  setAutoWatermarkInterval(ms: number): this {
    this.#task.autoWatermarkIntervalMs = checkPositiveInteger("autoWatermarkInterval", ms);
    return this;
  }

  /** Sets the processing-time clock (tests use `ManualClock`). */
  setClock(clock: Clock): this {
    this.#clock = clock;
    return this;
  }

  /**
   * Makes `execute()` restore a completed checkpoint of the earlier job
   * `jobId` (its latest one unless `checkpointId` is given), as Flink's
   * `--fromSavepoint` does with a retained checkpoint. Operators are matched
   * by uid; keyed state is redistributed by key group and operator list
   * state split evenly when the parallelism changed. The resumed run gets a
   * new job id, and never deletes the checkpoint it resumed from.
   * @throws {RangeError} when `checkpointId` is given and not a positive integer.
   */
  resumeFrom(options: ResumeOptions): this {
    if (options.checkpointId !== undefined) {
      checkPositiveInteger("checkpointId", options.checkpointId);
    }
    checkRestoreMode(options.restoreMode);
    this.#resume = options;
    this.#savepoint = undefined;
    return this;
  }

  /**
   * Makes `execute()` restore the savepoint at `path` (Flink's
   * `SavepointRestoreSettings.forPath`, `flink run -s <path>`): the path
   * `triggerSavepoint` or `stopWithSavepoint` returned. Operators are matched
   * by uid; the job may run at another parallelism, and even another max
   * parallelism (keys are re-hashed into the new key groups). The savepoint is
   * never deleted. Replaces an earlier `resumeFrom`.
   *
   * @param path the savepoint's path, e.g. `.weir/savepoints/savepoint-count-1a2b3c4d-7`.
   * @param options `allowNonRestoredState` (default false) drops state of
   *   uids this job lacks instead of failing with a `ResumeError`;
   *   `restoreMode` (default `"NO_CLAIM"`).
   * @throws {TypeError} when `path` is not a non-empty string.
   * @throws {RangeError} when `restoreMode` is neither `"CLAIM"` nor `"NO_CLAIM"`.
   */
  fromSavepoint(
    path: string,
    options: Omit<SavepointRestoreSettings, "path"> = {},
  ): this {
    if (typeof path !== "string" || path.length === 0) {
      throw new TypeError(
        `fromSavepoint: 'path' must be a non-empty string: current value is ${
          JSON.stringify(path)
        }`,
      );
    }
    checkRestoreMode(options.restoreMode);
    this.#savepoint = { ...options, path };
    this.#resume = undefined;
    return this;
  }

  /**
   * Chaos-testing hooks: `task` is called at each task fault point
   * (`before-snapshot`, `after-snapshot`, `alignment`, `before-commit`) and
   * `coordinator` at `before-notify-complete`; throwing there fails the attempt.
   */
  setFaultInjector(hooks: {
    task?: FaultInjector;
    coordinator?: (point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void;
  }): this {
    this.#faults = hooks.task;
    this.#coordinatorFaults = hooks.coordinator;
    return this;
  }

  /**
   * Adds a source. Its records get timestamps and watermarks from
   * `watermarkStrategy`.
   */
  fromSource<T, S extends SourceSplit>(
    source: Source<T, S>,
    watermarkStrategy: WatermarkStrategy<T>,
    name: string,
  ): SingleOutputStreamOperator<T> {
    const node = this.streamGraph.addNode({
      kind: "source",
      source: source as unknown as Source<unknown, SourceSplit>,
      watermarkStrategy: watermarkStrategy as WatermarkStrategy<unknown>,
    }, `Source: ${name}`);
    return new SingleOutputStreamOperator<T>(this, node);
  }

  /** A bounded stream of `items` (cut into one range per source subtask). */
  fromCollection<T>(items: readonly T[]): SingleOutputStreamOperator<T> {
    return this.fromSource(
      new CollectionSource<T>([...items]),
      WatermarkStrategy.noWatermarks(),
      "Collection",
    );
  }

  /**
   * Lines of text read from a TCP socket at `host:port` (Flink's
   * `socketTextStream`; the seeds read `nc -lk 7777`), as a non-parallel
   * source (parallelism 1).
   *
   * At-most-once, even with checkpoints: a socket cannot be replayed, so the
   * lines read between the last checkpoint and a failure are lost. The
   * stream ends when the peer closes the connection and no reconnection
   * attempt is left (`maxRetry`, default 0). See `socket_source.ts` for
   * delimiters, CRLF, reconnection and backpressure.
   *
   * @param host the host name or address to connect to.
   * @param port the TCP port, 1–65535.
   * @param options delimiter (default `"\n"`), `maxRetry` (default 0; -1
   *   forever), `retryDelayMs` (default 500) and `maxLineLength` (default
   *   16 Mi UTF-16 code units; a longer line fails the source).
   * @returns the stream of lines, without delimiters.
   * @throws {RangeError} for an empty host, a bad port or an option out of
   *   range, naming it and its current value.
   */
  socketTextStream(
    host: string,
    port: number,
    options: SocketTextSourceOptions = {},
  ): SingleOutputStreamOperator<string> {
    const source = new SocketTextSource(host, port, options);
    return this.fromSource(
      source,
      WatermarkStrategy.noWatermarks(),
      `Socket Stream ${source.address}`,
    )
      .setParallelism(1);
  }

  /**
   * The JobGraph this environment's streams make (for inspection).
   * @throws {InvalidJobGraphError} for an invalid graph.
   */
  getJobGraph(name: string = "Weir job"): JobGraph {
    return buildJobGraph(this.streamGraph, name, {
      parallelism: this.getParallelism(),
      maxParallelism: this.#maxParallelism,
      chaining: this.#chaining,
    });
  }

  /** The job's sinks, from the stream graph. */
  #sinks(): JobSink[] {
    const sinks: JobSink[] = [];
    for (const node of this.streamGraph.nodes) {
      if (node.spec.kind === "sink") {
        sinks.push({ name: node.name, uid: node.uid, sink: node.spec.sink });
      }
    }
    return sinks;
  }

  /**
   * Runs the job until every source ended and the final checkpoint completed
   * (or forever, for unbounded sources).
   *
   * It acts by role (see `executionRole()`): in local mode it runs the job in
   * this process; with `--nats <url>` among the arguments (or
   * `WEIR_NATS_URL` set) it submits the job to the cluster's coordinator and
   * waits for its end; on a worker's slot thread it hands the graph to the
   * slot and never resolves.
   *
   * @returns the job's result, with checkpoint counters and a one-line summary.
   * @throws {InvalidJobGraphError} for an invalid graph.
   * @throws {DeliveryGuaranteeError} when a sink promises exactly-once,
   *   checkpointing is off and a source is unbounded (see
   *   `delivery_check.ts`); with at-least-once
   *   checkpoints such a sink only gets a warning in the log.
   * @throws {ResumeError} when `resumeFrom` names no readable completed checkpoint.
   * @throws {JobFailedError} when the job fails and the restart strategy gives up.
   * @throws {ClusterRequestError} (cluster mode) when NATS or the coordinator cannot be reached.
   * @throws {NoJobExecutorError} when no executor was registered (this
   *   module was imported without `mod.ts`; see `executor.ts`).
   */
  async execute(name: string = "Weir job"): Promise<JobExecutionResult> {
    const executor = jobExecutor();
    executor.prepare?.();
    return await executor.execute(this.#request(name, executor.role()));
  }

  /**
   * Starts the job and returns at once with a {@linkcode JobClient} (Flink's
   * `executeAsync`): its id, `triggerSavepoint`, `stopWithSavepoint`,
   * `cancel` and `result()`. Local mode runs the job in this process; with
   * `--nats` it is submitted to the cluster.
   *
   * @param name the job's name.
   * @returns a client of the running job.
   * @throws as {@linkcode StreamExecutionEnvironment.execute} does before the job runs.
   * @throws {Error} when the registered executor cannot start jobs
   *   asynchronously (a worker's slot thread).
   */
  async executeAsync(name: string = "Weir job"): Promise<JobClient> {
    const executor = jobExecutor();
    if (executor.submit === undefined || executor.role() === "slot") {
      throw new Error(
        `executeAsync('${name}'): the job executor cannot start jobs asynchronously in role ` +
          `'${executor.role()}'`,
      );
    }
    executor.prepare?.();
    return await executor.submit(this.#request(name, executor.role()));
  }

  #request(name: string, role: string): JobExecutionRequest {
    const graph = this.getJobGraph(name);
    const executor = { role: () => role };
    if (executor.role() !== "slot") {
      // A worker's slot thread skips these: the job's client already made them.
      for (const warning of graph.warnings) log.warn(warning);
      const deliveryWarnings = checkJobDeliveryGuarantees({
        sinks: this.#sinks(),
        mode: this.#task.checkpointingMode,
        bounded: this.streamGraph.nodes.every((n) =>
          n.spec.kind !== "source" || n.spec.source.boundedness === "bounded"
        ),
      });
      for (const warning of deliveryWarnings) log.warn(warning);
    }
    const restartStrategy = this.#restartStrategy ?? defaultRestartStrategy({
      checkpointing: this.#checkpointIntervalMs > 0,
      role: role === "local" ? "local" : role === "slot" ? "slot" : "client",
    });
    const checkpointing = checkpointConfigOf(this.#checkpointIntervalMs, this.#checkpointing);
    return {
      graph,
      checkpointing,
      checkpointDirectory: this.#checkpointing.directory,
      defaultCheckpointDirectory: this.#checkpointing.directory === DEFAULT_CHECKPOINT_DIRECTORY,
      restartStrategy,
      failoverStrategy: this.#failoverStrategy,
      taskConfig: { ...this.#task },
      clock: this.#clock,
      resume: this.#resume,
      savepoint: this.#savepoint,
      faults: this.#faults,
      coordinatorFaults: this.#coordinatorFaults,
    };
  }
}

/** The registered executor's default parallelism, if an executor is registered and has one. */
function executorDefaultParallelism(): number | undefined {
  let executor: JobExecutor;
  try {
    executor = jobExecutor();
  } catch {
    return undefined; // none registered (environment.ts imported without mod.ts)
  }
  return executor.defaultParallelism?.();
}

function checkRestoreMode(mode: unknown): void {
  if (mode !== undefined && mode !== "CLAIM" && mode !== "NO_CLAIM") {
    throw new RangeError(
      `'restoreMode' must be "CLAIM" or "NO_CLAIM": current value is ${JSON.stringify(mode)}`,
    );
  }
}
