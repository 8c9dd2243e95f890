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
 *   (`classifyFailure` of `../failure.ts`: a `NonRecoverableError`) fails
 *   the job under every strategy.
 * - Delays are integers of ms, `>= 0`.
 *
 * @module
 */

import { classifyFailure, SuppressRestartsError } from "../failure.ts";
import { describeError } from "../error_chain.ts";
import {
  type RestartStrategyConfig,
  validateRestartStrategy,
} from "../api/restart_strategy_config.ts";

export { RestartStrategies, validateRestartStrategy } from "../api/restart_strategy_config.ts";
export type {
  ExponentialDelayOptions,
  FailureRateOptions,
  RestartStrategyConfig,
} from "../api/restart_strategy_config.ts";

/** What to do about one failure. */
export type RestartDecision =
  /**
   * Restart after `delayMs` ms. `attempt` counts the restarts this strategy
   * granted, this one included (1 for the first).
   */
  | { readonly kind: "restart"; readonly delayMs: number; readonly attempt: number }
  /**
   * Fail the job for good; `reason` says why, naming the strategy and the
   * failure. When a `SuppressRestartsError` in the failure's chain decided
   * it, `suppressed` is true and `reason` is `without restarts: <its class
   * name>: <its message>` (e.g. `without restarts: MariaDbRejectedError: …`).
   */
  | { readonly kind: "fail"; readonly reason: string; readonly suppressed?: boolean };

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
   * Whether {@linkcode RestartBackoff.onFailure} would restart after this
   * failure, without recording it (the coordinator logs a failure the job
   * restarts after at `warn`, and leaves the last one to the job's error).
   * Performs no I/O and changes nothing.
   *
   * @param nowMs time of the failure, in epoch ms.
   * @param error what failed.
   * @returns true when `onFailure(nowMs, error)` would return `restart`.
   */
  wouldRestart(nowMs: number, error: unknown): boolean;
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
  const recoverable = (error: unknown) => classifyFailure(error).type === "RecoverableError";
  const wrap =
    (decide: (nowMs: number, error: unknown) => RestartDecision) =>
    (nowMs: number, error: unknown): RestartDecision => {
      const classified = classifyFailure(error);
      if (classified.type === "NonRecoverableError") {
        return {
          kind: "fail",
          reason: `without restarts: ${describeError(classified.by)}`,
          suppressed: true,
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
        wouldRestart: () => false,
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
        wouldRestart: (_now, error) => recoverable(error) && restarts < config.attempts,
        onRecovered() {},
      };
    case "failure-rate": {
      // Times of the latest failures, at most maxFailuresPerInterval + 1 of them.
      const failures: number[] = [];
      /** The failure times kept after one at `nowMs`, and whether they exceed the rate. */
      const withFailure = (nowMs: number) => {
        const next = [...failures, nowMs];
        if (next.length > config.maxFailuresPerInterval + 1) next.shift();
        const oldest = next[0] ?? nowMs;
        const exceeded = next.length > config.maxFailuresPerInterval &&
          nowMs - oldest <= config.failureRateIntervalMs;
        return { next, exceeded };
      };
      return {
        config,
        onFailure: wrap((nowMs, error) => {
          const { next, exceeded } = withFailure(nowMs);
          failures.splice(0, failures.length, ...next);
          if (exceeded) {
            return {
              kind: "fail",
              reason:
                `Restart strategy failure-rate exceeded ${config.maxFailuresPerInterval} failures ` +
                `within ${config.failureRateIntervalMs} ms; last failure: ${describeError(error)}`,
            };
          }
          return restart(config.delayMs);
        }),
        wouldRestart: (nowMs, error) => recoverable(error) && !withFailure(nowMs).exceeded,
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
        wouldRestart: (_now, error) => recoverable(error),
        onRecovered(nowMs: number) {
          recoveredAt = nowMs;
        },
      };
    }
  }
}
