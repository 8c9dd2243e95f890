/**
 * Restart strategies: whether, and after how long, a failed job is restarted
 * (Flink's `RestartBackoffTimeStrategy` family: `NoRestart`, `FixedDelay`,
 * `ExponentialDelay`, `FailureRate`).
 *
 * A {@linkcode RestartStrategyConfig} is plain data (it travels in job
 * configs); {@linkcode createRestartBackoff} turns it into a small state
 * machine that reads no clock and schedules nothing: the coordinator passes
 * `nowMs` in and executes the returned {@linkcode RestartDecision}.
 *
 * ```ts
 * import { createRestartBackoff, RestartStrategies } from "./restart_strategy.ts";
 * const backoff = createRestartBackoff(RestartStrategies.fixedDelay(2, 1000));
 * const boom = new Error("boom");
 * console.assert(backoff.onFailure(0, boom).kind === "restart");
 * console.assert(backoff.onFailure(10, boom).kind === "restart");
 * console.assert(backoff.onFailure(20, boom).kind === "fail");
 * ```
 *
 * ## Invariants
 *
 * - `fixed-delay` counts restarts over the job's lifetime: failure
 *   `attempts + 1` fails the job, however far apart the failures are.
 * - `failure-rate` fails the job when more than `maxFailuresPerInterval`
 *   failures fall within `failureRateIntervalMs` (the current one included).
 * - `exponential-delay` never gives up; its delay multiplies by
 *   `backoffMultiplier` per failure, capped at `maxBackoffMs`, and resets to
 *   `initialBackoffMs` after `resetBackoffThresholdMs` without failure.
 * - A {@linkcode SuppressRestartsError} anywhere in a failure's `cause` chain
 *   fails the job under every strategy.
 * - Delays are integers of ms, `>= 0`.
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";

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

/** What to do about one failure. */
export type RestartDecision =
  /**
   * Restart after `delayMs` ms. `attempt` counts the restarts this strategy
   * granted, this one included (1 for the first).
   */
  | { readonly kind: "restart"; readonly delayMs: number; readonly attempt: number }
  /** Fail the job for good; `reason` says why, naming the strategy and the failure. */
  | { readonly kind: "fail"; readonly reason: string };

/** A restart strategy's running state; see {@linkcode createRestartBackoff}. */
export interface RestartBackoff {
  /** The validated configuration. */
  readonly config: RestartStrategyConfig;
  /**
   * Records a failure of the job and decides what to do.
   *
   * @param nowMs time of the failure, in epoch ms.
   * @param error what failed; a {@linkcode SuppressRestartsError} in its
   *   `cause` chain always yields `fail`.
   * @returns restart after a delay, or fail.
   */
  onFailure(nowMs: number, error: unknown): RestartDecision;
  /**
   * Records that the job is running again after a restart. `exponential-delay`
   * measures its quiet period from here; the others ignore it.
   *
   * @param nowMs time of recovery, in epoch ms.
   */
  onRecovered(nowMs: number): void;
}

/**
 * Re-exported from the leaf `runtime/failure.ts`, where failure semantics
 * live (DESIGN §16), so existing imports keep working.
 */
export { SuppressRestartsError };

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

/**
 * Validates a configuration (also one that did not come from
 * {@linkcode RestartStrategies}, e.g. parsed from JSON).
 *
 * @param config the configuration.
 * @returns `config`, unchanged.
 * @throws {RangeError} naming the strategy, the field and its current value,
 *   e.g. `Cannot use fixed-delay restart: 'attempts' must be a non-negative integer: current value is -1`.
 */
export function validateRestartStrategy(config: RestartStrategyConfig): RestartStrategyConfig {
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
   * @throws {RangeError} naming the invalid option and its current value.
   */
  exponentialDelay(options?: ExponentialDelayOptions): RestartStrategyConfig;
  /**
   * Restart after `delayMs` unless more than `maxFailuresPerInterval`
   * failures happen within `failureRateIntervalMs`.
   *
   * @throws {RangeError} naming the invalid option and its current value.
   */
  failureRate(options: FailureRateOptions): RestartStrategyConfig;
} = Object.freeze({
  noRestart: (): RestartStrategyConfig => ({ type: "none" }),
  fixedDelay: (attempts: number, delayMs: number): RestartStrategyConfig =>
    validateRestartStrategy({ type: "fixed-delay", attempts, delayMs }),
  exponentialDelay: (options: ExponentialDelayOptions = {}): RestartStrategyConfig =>
    validateRestartStrategy({
      type: "exponential-delay",
      initialBackoffMs: options.initialBackoffMs ?? 1_000,
      maxBackoffMs: options.maxBackoffMs ?? 300_000,
      backoffMultiplier: options.backoffMultiplier ?? 2,
      resetBackoffThresholdMs: options.resetBackoffThresholdMs ?? 3_600_000,
      jitterFactor: options.jitterFactor ?? 0.1,
    }),
  failureRate: (options: FailureRateOptions): RestartStrategyConfig =>
    validateRestartStrategy({
      type: "failure-rate",
      maxFailuresPerInterval: options.maxFailuresPerInterval,
      failureRateIntervalMs: options.failureRateIntervalMs,
      delayMs: options.delayMs,
    }),
});

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

function suppressed(error: unknown): SuppressRestartsError | undefined {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e instanceof Error && !seen.has(e)) {
    if (e instanceof SuppressRestartsError) return e;
    seen.add(e);
    e = e.cause;
  }
  return undefined;
}

/**
 * Creates the state machine of a restart strategy.
 *
 * @param config the strategy; validated again here.
 * @param random source of uniform numbers in [0, 1) for the jitter of
 *   `exponential-delay`; default `Math.random`. Inject one for determinism.
 * @returns a fresh {@linkcode RestartBackoff} (one per job; it is not shared).
 * @throws {RangeError} when `config` is invalid.
 *
 * @example
 * ```ts
 * import { createRestartBackoff, RestartStrategies } from "./restart_strategy.ts";
 * const b = createRestartBackoff(
 *   RestartStrategies.exponentialDelay({ initialBackoffMs: 100, jitterFactor: 0 }),
 * );
 * const d1 = b.onFailure(0, new Error("x"));
 * const d2 = b.onFailure(150, new Error("x"));
 * console.assert(d1.kind === "restart" && d1.delayMs === 100);
 * console.assert(d2.kind === "restart" && d2.delayMs === 200);
 * ```
 */
export function createRestartBackoff(
  config: RestartStrategyConfig,
  random: () => number = Math.random,
): RestartBackoff {
  validateRestartStrategy(config);
  let restarts = 0;
  const restart = (delayMs: number): RestartDecision => ({
    kind: "restart",
    delayMs: Math.max(0, Math.round(delayMs)),
    attempt: ++restarts,
  });
  const wrap =
    (decide: (nowMs: number, error: unknown) => RestartDecision) =>
    (nowMs: number, error: unknown): RestartDecision => {
      const s = suppressed(error);
      if (s !== undefined) {
        return {
          kind: "fail",
          reason: `Restarts are suppressed by the failure: ${describeError(s)}`,
        };
      }
      return decide(nowMs, error);
    };

  switch (config.type) {
    case "none":
      return {
        config,
        onFailure: wrap((_now, error) => ({
          kind: "fail",
          reason: `Restart strategy none does not restart: ${describeError(error)}`,
        })),
        onRecovered() {},
      };
    case "fixed-delay":
      return {
        config,
        onFailure: wrap((_now, error) =>
          restarts < config.attempts ? restart(config.delayMs) : {
            kind: "fail",
            reason: `Restart strategy fixed-delay used all ${config.attempts} restart attempts; ` +
              `last failure: ${describeError(error)}`,
          }
        ),
        onRecovered() {},
      };
    case "failure-rate": {
      // Times of the latest failures, at most maxFailuresPerInterval + 1 of them.
      const failures: number[] = [];
      return {
        config,
        onFailure: wrap((nowMs, error) => {
          failures.push(nowMs);
          if (failures.length > config.maxFailuresPerInterval + 1) failures.shift();
          const oldest = failures[0] ?? nowMs;
          if (
            failures.length > config.maxFailuresPerInterval &&
            nowMs - oldest <= config.failureRateIntervalMs
          ) {
            return {
              kind: "fail",
              reason:
                `Restart strategy failure-rate exceeded ${config.maxFailuresPerInterval} failures ` +
                `within ${config.failureRateIntervalMs} ms; last failure: ${describeError(error)}`,
            };
          }
          return restart(config.delayMs);
        }),
        onRecovered() {},
      };
    }
    case "exponential-delay": {
      let currentBackoffMs = 0; // 0: no failure yet
      let lastFailureAt = 0;
      let recoveredAt: number | undefined;
      return {
        config,
        onFailure: wrap((nowMs) => {
          const quietSince = recoveredAt ?? lastFailureAt + currentBackoffMs;
          if (currentBackoffMs === 0 || nowMs - quietSince >= config.resetBackoffThresholdMs) {
            currentBackoffMs = config.initialBackoffMs;
          } else {
            currentBackoffMs = Math.min(
              Math.max(currentBackoffMs * config.backoffMultiplier, config.initialBackoffMs),
              config.maxBackoffMs,
            );
          }
          lastFailureAt = nowMs;
          recoveredAt = undefined;
          const spread = Math.floor(currentBackoffMs * config.jitterFactor);
          const jitter = spread === 0
            ? 0
            : Math.min(Math.floor(random() * (2 * spread + 1)), 2 * spread) - spread;
          return restart(Math.min(currentBackoffMs + jitter, config.maxBackoffMs));
        }),
        onRecovered(nowMs: number) {
          recoveredAt = nowMs;
        },
      };
    }
  }
}
