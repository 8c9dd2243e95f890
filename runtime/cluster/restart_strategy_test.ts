import assert from "node:assert/strict";
import {
  createRestartBackoff,
  RestartStrategies,
  SuppressRestartsError,
  validateRestartStrategy,
} from "./restart_strategy.ts";
import type { RestartDecision, RestartStrategyConfig } from "./restart_strategy.ts";

const boom = new Error("boom");

function delays(decisions: RestartDecision[]): Array<number | "fail"> {
  return decisions.map((d) => (d.kind === "restart" ? d.delayMs : "fail"));
}

Deno.test("none restart strategy fails the job on the first failure, naming the error", () => {
  const b = createRestartBackoff(RestartStrategies.noRestart());
  const d = b.onFailure(0, new TypeError("bad record"));
  assert.equal(d.kind, "fail");
  assert.match(d.kind === "fail" ? d.reason : "", /none.*TypeError: bad record/);
});

Deno.test("fixed-delay restart grants exactly 'attempts' restarts, then fails", () => {
  const b = createRestartBackoff(RestartStrategies.fixedDelay(3, 500));
  const decisions = [0, 1, 2, 3].map((i) => b.onFailure(i * 1_000_000, boom));
  assert.deepEqual(decisions.slice(0, 3), [
    { kind: "restart", delayMs: 500, attempt: 1 },
    { kind: "restart", delayMs: 500, attempt: 2 },
    { kind: "restart", delayMs: 500, attempt: 3 },
  ]);
  const last = decisions[3];
  assert.equal(last?.kind, "fail");
  assert.match(
    last?.kind === "fail" ? last.reason : "",
    /all 3 restart attempts; last failure: Error: boom/,
  );
});

Deno.test("fixed-delay restart keeps counting after recoveries", () => {
  const b = createRestartBackoff(RestartStrategies.fixedDelay(1, 0));
  assert.equal(b.onFailure(0, boom).kind, "restart");
  b.onRecovered(10);
  assert.equal(b.onFailure(10_000_000, boom).kind, "fail");
});

Deno.test("fixed-delay restart with zero attempts fails on the first failure", () => {
  const b = createRestartBackoff(RestartStrategies.fixedDelay(0, 100));
  assert.equal(b.onFailure(0, boom).kind, "fail");
});

Deno.test("failure-rate restart tolerates maxFailuresPerInterval failures within the interval", async (t) => {
  const config = RestartStrategies.failureRate({
    maxFailuresPerInterval: 3,
    failureRateIntervalMs: 10_000,
    delayMs: 200,
  });

  await t.step("the fourth failure within the interval fails the job", () => {
    const b = createRestartBackoff(config);
    assert.deepEqual(delays([0, 1000, 2000].map((at) => b.onFailure(at, boom))), [200, 200, 200]);
    const d = b.onFailure(3000, boom);
    assert.equal(d.kind, "fail");
    assert.match(d.kind === "fail" ? d.reason : "", /exceeded 3 failures within 10000 ms/);
  });

  await t.step("failures spread wider than the interval restart forever", () => {
    const b = createRestartBackoff(config);
    for (let i = 0; i < 20; i++) {
      assert.equal(b.onFailure(i * 4000, boom).kind, "restart", `failure ${i}`);
    }
  });

  await t.step("the interval slides: old failures stop counting", () => {
    const b = createRestartBackoff(config);
    b.onFailure(0, boom);
    b.onFailure(1, boom);
    b.onFailure(2, boom);
    // 10 001 ms after the first: only 3 failures (1, 2, now) fall within the window.
    assert.equal(b.onFailure(10_001, boom).kind, "restart");
    // 10 002: the failure at 1 left the window too; 2, 10 001 and now remain.
    assert.equal(b.onFailure(10_002, boom).kind, "restart");
    // Another at 10 002: 2, 10 001, 10 002, 10 002 are four within 10 000 ms.
    assert.equal(b.onFailure(10_002, boom).kind, "fail");
  });

  await t.step("a failure exactly interval ms after the oldest still counts", () => {
    const b = createRestartBackoff(config);
    [0, 1, 2].forEach((at) => b.onFailure(at, boom));
    assert.equal(b.onFailure(10_000, boom).kind, "fail");
  });
});

Deno.test("failure-rate restart numbers its restarts", () => {
  const b = createRestartBackoff(
    RestartStrategies.failureRate({
      maxFailuresPerInterval: 1,
      failureRateIntervalMs: 1,
      delayMs: 0,
    }),
  );
  assert.deepEqual(b.onFailure(0, boom), { kind: "restart", delayMs: 0, attempt: 1 });
  assert.deepEqual(b.onFailure(10, boom), { kind: "restart", delayMs: 0, attempt: 2 });
});

Deno.test("exponential-delay restart doubles the delay up to the maximum", () => {
  const b = createRestartBackoff(
    RestartStrategies.exponentialDelay({
      initialBackoffMs: 100,
      maxBackoffMs: 1000,
      backoffMultiplier: 2,
      resetBackoffThresholdMs: 60_000,
      jitterFactor: 0,
    }),
  );
  const out: RestartDecision[] = [];
  let now = 0;
  for (let i = 0; i < 7; i++) {
    const d = b.onFailure(now, boom);
    out.push(d);
    now += (d.kind === "restart" ? d.delayMs : 0) + 10; // fails again soon after restarting
  }
  assert.deepEqual(delays(out), [100, 200, 400, 800, 1000, 1000, 1000]);
  assert.deepEqual(out.map((d) => (d.kind === "restart" ? d.attempt : 0)), [1, 2, 3, 4, 5, 6, 7]);
});

Deno.test("exponential-delay restart resets to the initial delay after a quiet threshold", async (t) => {
  const config = RestartStrategies.exponentialDelay({
    initialBackoffMs: 100,
    maxBackoffMs: 10_000,
    resetBackoffThresholdMs: 5_000,
    jitterFactor: 0,
  });

  await t.step("measured from onRecovered", () => {
    const b = createRestartBackoff(config);
    b.onFailure(0, boom); // 100
    b.onFailure(200, boom); // 200
    b.onRecovered(1_000);
    assert.deepEqual(delays([b.onFailure(5_999, boom)]), [400]); // quiet 4 999 ms: no reset
    b.onRecovered(7_000);
    assert.deepEqual(delays([b.onFailure(12_000, boom)]), [100]); // quiet 5 000 ms: reset
  });

  await t.step("measured from the last restart when onRecovered was not called", () => {
    const b = createRestartBackoff(config);
    b.onFailure(0, boom); // 100, restart at 100
    assert.deepEqual(delays([b.onFailure(5_099, boom)]), [200]);
    // last failure 5 099 + 200 ms delay = restart at 5 299; threshold 5 000 → reset at 10 299
    assert.deepEqual(delays([b.onFailure(10_299, boom)]), [100]);
  });

  await t.step("a failure during restart does not count as quiet time", () => {
    const b = createRestartBackoff(config);
    b.onFailure(0, boom);
    b.onRecovered(100);
    b.onFailure(200, boom); // 200; recovery forgotten
    assert.deepEqual(delays([b.onFailure(300, boom)]), [400]);
  });
});

Deno.test("exponential-delay restart spreads delays by the jitter factor with the injected random", () => {
  const config = RestartStrategies.exponentialDelay({
    initialBackoffMs: 1000,
    maxBackoffMs: 10_000,
    jitterFactor: 0.1,
  });
  const low = createRestartBackoff(config, () => 0);
  const high = createRestartBackoff(config, () => 0.999999);
  const mid = createRestartBackoff(config, () => 0.5);
  assert.deepEqual(delays([low.onFailure(0, boom)]), [900]);
  assert.deepEqual(delays([high.onFailure(0, boom)]), [1100]);
  assert.deepEqual(delays([mid.onFailure(0, boom)]), [1000]);
  const one = createRestartBackoff(config, () => 1); // out-of-contract random is clamped
  assert.deepEqual(delays([one.onFailure(0, boom)]), [1100]);
});

Deno.test("exponential-delay restart never exceeds the maximum, even with jitter", () => {
  const b = createRestartBackoff(
    RestartStrategies.exponentialDelay({
      initialBackoffMs: 1000,
      maxBackoffMs: 1000,
      jitterFactor: 1,
    }),
    () => 0.999999,
  );
  assert.deepEqual(delays([b.onFailure(0, boom)]), [1000]);
});

Deno.test("exponentialDelay() uses Flink's defaults", () => {
  assert.deepEqual(RestartStrategies.exponentialDelay(), {
    type: "exponential-delay",
    initialBackoffMs: 1000,
    maxBackoffMs: 300_000,
    backoffMultiplier: 2,
    resetBackoffThresholdMs: 3_600_000,
    jitterFactor: 0.1,
  });
});

Deno.test("every restart strategy fails when a SuppressRestartsError is in the cause chain", () => {
  const configs: RestartStrategyConfig[] = [
    RestartStrategies.fixedDelay(10, 0),
    RestartStrategies.exponentialDelay(),
    RestartStrategies.failureRate({
      maxFailuresPerInterval: 5,
      failureRateIntervalMs: 1,
      delayMs: 0,
    }),
  ];
  const error = new Error("outer", { cause: new SuppressRestartsError("schema mismatch") });
  for (const config of configs) {
    const d = createRestartBackoff(config).onFailure(0, error);
    assert.equal(d.kind, "fail", config.type);
    assert.equal(
      d.kind === "fail" ? d.reason : "",
      "without restarts: SuppressRestartsError: schema mismatch",
    );
    assert.equal(d.kind === "fail" && d.suppressed, true, config.type);
  }
});

Deno.test("restart strategy factories reject invalid values, stating the current value", () => {
  assert.throws(
    () => RestartStrategies.fixedDelay(-1, 0),
    {
      name: "RangeError",
      message:
        "Cannot use fixed-delay restart: 'attempts' must be a non-negative integer: current value is -1",
    },
  );
  assert.throws(() => RestartStrategies.fixedDelay(1.5, 0), /'attempts'.*current value is 1.5/);
  assert.throws(() => RestartStrategies.fixedDelay(1, -5), /'delayMs'.*current value is -5/);
  assert.throws(
    () =>
      RestartStrategies.failureRate({
        maxFailuresPerInterval: 0,
        failureRateIntervalMs: 1,
        delayMs: 0,
      }),
    /failure-rate restart: 'maxFailuresPerInterval' must be a positive integer: current value is 0/,
  );
  assert.throws(
    () =>
      RestartStrategies.failureRate({
        maxFailuresPerInterval: 1,
        failureRateIntervalMs: 0,
        delayMs: 0,
      }),
    /'failureRateIntervalMs'.*current value is 0/,
  );
  assert.throws(
    () => RestartStrategies.exponentialDelay({ initialBackoffMs: 0 }),
    /'initialBackoffMs'.*current value is 0/,
  );
  assert.throws(
    () => RestartStrategies.exponentialDelay({ initialBackoffMs: 2000, maxBackoffMs: 1000 }),
    /'maxBackoffMs' must be >= 'initialBackoffMs' \(2000\): current value is 1000/,
  );
  assert.throws(
    () => RestartStrategies.exponentialDelay({ backoffMultiplier: 0.5 }),
    /'backoffMultiplier'.*current value is 0.5/,
  );
  assert.throws(
    () => RestartStrategies.exponentialDelay({ jitterFactor: 1.5 }),
    /'jitterFactor'.*1.5/,
  );
  assert.throws(
    () => RestartStrategies.exponentialDelay({ resetBackoffThresholdMs: NaN }),
    /'resetBackoffThresholdMs'.*NaN/,
  );
});

Deno.test("createRestartBackoff validates configurations that bypassed the factories", () => {
  assert.throws(
    () => createRestartBackoff({ type: "fixed-delay", attempts: -2, delayMs: 0 }),
    /'attempts'.*current value is -2/,
  );
  assert.throws(
    () => validateRestartStrategy({ type: "bogus" } as unknown as RestartStrategyConfig),
    /'type' must be one of none, fixed-delay, exponential-delay, failure-rate: current value is bogus/,
  );
});
