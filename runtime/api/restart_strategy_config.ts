/**
 * Restart strategy configuration: the plain data saying whether, and after
 * how long, a failed job is restarted (Flink's `RestartStrategies` and
 * `RestartStrategyConfiguration`s: `NoRestart`, `FixedDelay`,
 * `ExponentialDelay`, `FailureRate`), and its validation.
 *
 * A job describes its strategy with this data; the runtime that runs the job
 * (`runtime/cluster/restart_strategy.ts`, `createRestartBackoff`) turns it
 * into a backoff state machine. This module is near a leaf of the API layer: it
 * imports only the leaf `options_check.ts` (DESIGN §16).
 *
 * ```ts
 * import { RestartStrategies } from "./restart_strategy_config.ts";
 * const strategy = RestartStrategies.fixedDelay(3, 1000);
 * console.assert(strategy.type === "fixed-delay");
 * ```
 *
 * @module
 */

import { checkOptions, type OptionKind } from "./options_check.ts";

/**
 * How a job reacts to failures. Plain data; build it with
 * {@linkcode RestartStrategies}, which validates it.
 */
export type RestartStrategyConfig =
  /** Fail the job on the first failure. */
  | { readonly type: "none" }
  /** Restart up to `attempts` times, each after `delayMs` (Flink's `fixed-delay`). */
  | { readonly type: "fixed-delay"; readonly attempts: number; readonly delayMs: number }
  /** Restart forever with a growing delay (Flink's `exponential-delay`). */
  | {
    readonly type: "exponential-delay";
    /** Delay of the first restart, in ms (>= 1). */
    readonly initialBackoffMs: number;
    /** Largest delay, in ms (>= initialBackoffMs). */
    readonly maxBackoffMs: number;
    /** Factor applied to the delay after each failure (>= 1). */
    readonly backoffMultiplier: number;
    /** Time without failure after which the delay resets, in ms (>= 1). */
    readonly resetBackoffThresholdMs: number;
    /** Random spread of each delay, as a fraction of it, in [0, 1]. */
    readonly jitterFactor: number;
  }
  /** Restart unless the failure rate is too high (Flink's `failure-rate`). */
  | {
    readonly type: "failure-rate";
    /** Failures tolerated within one interval (>= 1). */
    readonly maxFailuresPerInterval: number;
    /** Length of the sliding interval, in ms (> 0). */
    readonly failureRateIntervalMs: number;
    /** Delay before each restart, in ms (>= 0). */
    readonly delayMs: number;
  };

/** Options of {@linkcode RestartStrategies.exponentialDelay}; omitted ones take Flink's defaults. */
export interface ExponentialDelayOptions {
  /** Default 1 000 ms. */
  readonly initialBackoffMs?: number;
  /** Default 300 000 ms (5 min). */
  readonly maxBackoffMs?: number;
  /** Default 2. */
  readonly backoffMultiplier?: number;
  /** Default 3 600 000 ms (1 h). */
  readonly resetBackoffThresholdMs?: number;
  /** Default 0.1. */
  readonly jitterFactor?: number;
}

/** Options of {@linkcode RestartStrategies.failureRate}. */
export interface FailureRateOptions {
  /** Failures tolerated within one interval, a positive integer. */
  readonly maxFailuresPerInterval: number;
  /** Length of the sliding interval, in ms. */
  readonly failureRateIntervalMs: number;
  /** Delay before each restart, in ms. */
  readonly delayMs: number;
}

function invalid(type: string, name: string, rule: string, value: unknown): never {
  throw new RangeError(
    `Cannot use ${type} restart: '${name}' must be ${rule}: current value is ${String(value)}`,
  );
}

function checkNonNegativeInteger(type: string, name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    invalid(type, name, "a non-negative integer", value);
  }
}

function checkPositiveInteger(type: string, name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1) invalid(type, name, "a positive integer", value);
}

function checkDelay(type: string, name: string, value: number, min: 0 | 1 | "positive"): void {
  const ok = typeof value === "number" && Number.isFinite(value) &&
    (min === "positive" ? value > 0 : value >= min);
  if (!ok) {
    const rule = min === 0
      ? "a non-negative finite number of ms"
      : min === 1
      ? "a finite number of ms >= 1"
      : "a positive finite number of ms";
    invalid(type, name, rule, value);
  }
}

/** The keys of each kind of {@linkcode RestartStrategyConfig} and the kinds of their values. */
const CONFIG_SHAPES: {
  readonly [T in RestartStrategyConfig["type"]]: {
    readonly [K in keyof Extract<RestartStrategyConfig, { type: T }>]-?: OptionKind;
  };
} = {
  "none": { type: "string" },
  "fixed-delay": { type: "string", attempts: "number", delayMs: "number" },
  "exponential-delay": {
    type: "string",
    initialBackoffMs: "number",
    maxBackoffMs: "number",
    backoffMultiplier: "number",
    resetBackoffThresholdMs: "number",
    jitterFactor: "number",
  },
  "failure-rate": {
    type: "string",
    maxFailuresPerInterval: "number",
    failureRateIntervalMs: "number",
    delayMs: "number",
  },
};

/**
 * Validates a configuration (also one that did not come from
 * {@linkcode RestartStrategies}, e.g. parsed from JSON).
 *
 * @param config the configuration.
 * @returns `config`, unchanged.
 * @throws {RangeError} naming the strategy, the field and its current value,
 *   e.g. `Cannot use fixed-delay restart: 'attempts' must be a non-negative integer: current value is -1`,
 *   or a key its `type` does not have (`restart strategy fixed-delay options:
 *   unknown option 'delay' (known: type, attempts, delayMs)`).
 * @throws {TypeError} when `config` is not an object or a field is not a number.
 */
export function validateRestartStrategy(config: RestartStrategyConfig): RestartStrategyConfig {
  const type: unknown = (config as { type?: unknown } | null | undefined)?.type;
  const shape = typeof type === "string" && Object.hasOwn(CONFIG_SHAPES, type)
    ? CONFIG_SHAPES[type as RestartStrategyConfig["type"]]
    : { type: "any" as const };
  checkOptions(`restart strategy ${String(type)}`, config, shape);
  switch (config.type) {
    case "none":
      return config;
    case "fixed-delay":
      checkNonNegativeInteger(config.type, "attempts", config.attempts);
      checkDelay(config.type, "delayMs", config.delayMs, 0);
      return config;
    case "exponential-delay": {
      const t = config.type;
      checkDelay(t, "initialBackoffMs", config.initialBackoffMs, 1);
      checkDelay(t, "maxBackoffMs", config.maxBackoffMs, 1);
      if (config.maxBackoffMs < config.initialBackoffMs) {
        invalid(
          t,
          "maxBackoffMs",
          `>= 'initialBackoffMs' (${config.initialBackoffMs})`,
          config.maxBackoffMs,
        );
      }
      if (!(config.backoffMultiplier >= 1) || !Number.isFinite(config.backoffMultiplier)) {
        invalid(t, "backoffMultiplier", "a finite number >= 1", config.backoffMultiplier);
      }
      checkDelay(t, "resetBackoffThresholdMs", config.resetBackoffThresholdMs, 1);
      if (!(config.jitterFactor >= 0 && config.jitterFactor <= 1)) {
        invalid(t, "jitterFactor", "a number in [0, 1]", config.jitterFactor);
      }
      return config;
    }
    case "failure-rate":
      checkPositiveInteger(config.type, "maxFailuresPerInterval", config.maxFailuresPerInterval);
      checkDelay(config.type, "failureRateIntervalMs", config.failureRateIntervalMs, "positive");
      checkDelay(config.type, "delayMs", config.delayMs, 0);
      return config;
    default: {
      const type = (config as { type?: unknown }).type;
      throw new RangeError(
        `Cannot use restart strategy: 'type' must be one of none, fixed-delay, exponential-delay, failure-rate: current value is ${
          String(type)
        }`,
      );
    }
  }
}

/** Restarts the default strategy of local mode grants a job with checkpointing on. */
export const LOCAL_DEFAULT_RESTART_ATTEMPTS = 3;

/** The delay of each restart of the default strategies, in ms (Flink's 1 s). */
export const DEFAULT_RESTART_DELAY_MS = 1000;

/**
 * The restart strategy of a job that sets none. Pure.
 *
 * - Without checkpointing: `none` (Flink's default).
 * - With checkpointing, on a cluster (`role` `"client"`, which submits it):
 *   `fixed-delay`, unlimited, 1 s apart (Flink's legacy default): a
 *   cluster job outlives failures of workers and NATS.
 * - With checkpointing, in local mode (`role` `"local"`): `fixed-delay`,
 *   {@linkcode LOCAL_DEFAULT_RESTART_ATTEMPTS} restarts 1 s apart, so a job
 *   whose failure persists ends with its cause instead of restarting
 *   forever in the user's terminal. Errors a retry cannot fix end the job at
 *   once under every strategy (`runtime/failure.ts`).
 *
 * @param facts whether periodic checkpointing is on, and where the job runs
 *   (`"slot"` takes the client's strategy and gets the cluster default).
 * @returns a validated configuration.
 */
export function defaultRestartStrategy(
  facts: { readonly checkpointing: boolean; readonly role: "local" | "client" | "slot" },
): RestartStrategyConfig {
  if (!facts.checkpointing) return RestartStrategies.noRestart();
  return facts.role === "local"
    ? RestartStrategies.fixedDelay(LOCAL_DEFAULT_RESTART_ATTEMPTS, DEFAULT_RESTART_DELAY_MS)
    : RestartStrategies.fixedDelay(Number.MAX_SAFE_INTEGER, DEFAULT_RESTART_DELAY_MS);
}

/**
 * Factories of validated {@linkcode RestartStrategyConfig}s (Flink's
 * `RestartStrategies`).
 */
export const RestartStrategies: {
  /** Never restart. */
  noRestart(): RestartStrategyConfig;
  /**
   * Restart at most `attempts` times, each after `delayMs` ms.
   *
   * @throws {RangeError} when `attempts` is not a non-negative integer or `delayMs` is negative.
   */
  fixedDelay(attempts: number, delayMs: number): RestartStrategyConfig;
  /**
   * Restart forever with exponentially growing delays; omitted options take
   * Flink's defaults (1 s initial, 5 min max, ×2, reset after 1 h, jitter 0.1).
   *
   * @throws {RangeError} naming the invalid option and its current value, or
   *   an unknown option.
   * @throws {TypeError} when an option is not a number.
   */
  exponentialDelay(options?: ExponentialDelayOptions): RestartStrategyConfig;
  /**
   * Restart after `delayMs` unless more than `maxFailuresPerInterval`
   * failures happen within `failureRateIntervalMs`.
   *
   * @throws {RangeError} naming the invalid option and its current value, or
   *   an unknown option.
   * @throws {TypeError} when an option is not a number.
   */
  failureRate(options: FailureRateOptions): RestartStrategyConfig;
} = Object.freeze({
  noRestart: (): RestartStrategyConfig => ({ type: "none" }),
  fixedDelay: (attempts: number, delayMs: number): RestartStrategyConfig =>
    validateRestartStrategy({ type: "fixed-delay", attempts, delayMs }),
  exponentialDelay: (options: ExponentialDelayOptions = {}): RestartStrategyConfig => {
    const { type: _, ...shape } = CONFIG_SHAPES["exponential-delay"];
    checkOptions<ExponentialDelayOptions>("RestartStrategies.exponentialDelay", options, shape);
    return validateRestartStrategy({
      type: "exponential-delay",
      initialBackoffMs: options.initialBackoffMs ?? 1_000,
      maxBackoffMs: options.maxBackoffMs ?? 300_000,
      backoffMultiplier: options.backoffMultiplier ?? 2,
      resetBackoffThresholdMs: options.resetBackoffThresholdMs ?? 3_600_000,
      jitterFactor: options.jitterFactor ?? 0.1,
    });
  },
  failureRate: (options: FailureRateOptions): RestartStrategyConfig => {
    const { type: _, ...shape } = CONFIG_SHAPES["failure-rate"];
    checkOptions<FailureRateOptions>("RestartStrategies.failureRate", options, shape);
    return validateRestartStrategy({
      type: "failure-rate",
      maxFailuresPerInterval: options.maxFailuresPerInterval,
      failureRateIntervalMs: options.failureRateIntervalMs,
      delayMs: options.delayMs,
    });
  },
});

/**
 * Which subtasks a failure restarts (Flink's
 * `jobmanager.execution.failover-strategy`):
 *
 * - `"region"` (the default, as in Flink): only the pipelined region of the
 *   failed subtask, i.e. the subtasks it exchanges records with directly or
 *   through others (a `forward` edge joins subtask `i` with subtask `i`,
 *   every other partitioner joins all subtasks of both vertices; see
 *   `runtime/cluster/failover_regions.ts`). The other regions keep running.
 *   A failure that names no subtask, that comes while a region is being
 *   restarted or before the attempt runs, or whose region is the whole job,
 *   restarts every subtask.
 * - `"full"`: every subtask of the job.
 *
 * Either way the restart strategy decides whether and when to restart.
 */
export type FailoverStrategy = "region" | "full";

/**
 * Checks a failover strategy given as untyped data (a submission, a CLI flag).
 * @returns `value` as a {@linkcode FailoverStrategy}.
 * @throws {RangeError} naming the value when it is neither `"region"` nor `"full"`.
 */
export function validateFailoverStrategy(value: unknown): FailoverStrategy {
  if (value === "region" || value === "full") return value;
  throw new RangeError(
    `failover strategy must be "region" or "full": current value is ${JSON.stringify(value)}`,
  );
}
