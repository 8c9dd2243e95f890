/**
 * Acceptance tests for the seed examples of DESIGN.md §10, run the way a
 * user runs them: each example is a `deno run -A examples/<name>.ts`
 * subprocess in the repository root, and the test compares its stdout with
 * the seed's exact output. Bad input (seed 2 with malformed lines) is tested
 * here too, since what counts is the exit code and what reaches stderr.
 *
 * The examples keep their checkpoints in the default `.weir/checkpoints`
 * of the repository root (gitignored, excluded from fmt/lint/check). Every
 * run here finds its job id in the `info` log and checks that a finished
 * job left nothing there; a failed job's checkpoints are kept by design, so
 * the tests remove them.
 *
 * The state- and time-dependent seeds (timers, checkpoint content, key
 * groups) are tested in-process in `seed_timers_and_state_test.ts`; here
 * seed 4 (`rising_temperature.ts`) runs as its header says, in real time
 * (its point is 10 s of processing time passing), beside the windowed-count
 * example (`windowed_counts.ts`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import type { DeadLetter } from "../mod.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const CHECKPOINTS = join(REPO, ".weir", "checkpoints");

/** Seed 2's output, exactly. */
const SEED_ALERTS = ["(sensor_1,32.4,42.4)", "(sensor_10,52.6,22.5)", "(sensor_7,19.9,30)"];

/** Seed 2's input (examples/data/sensors.csv), line by line. */
const SEED_READINGS = [
  "sensor_1,1547718199,35.8",
  "sensor_1,1547718199,32.4",
  "sensor_1,1547718199,42.4",
  "sensor_10,1547718205,52.6",
  "sensor_10,1547718205,22.5",
  "sensor_7,1547718202,6.7",
  "sensor_7,1547718202,9.9",
  "sensor_1,1547718207,36.3",
  "sensor_7,1547718202,19.9",
  "sensor_7,1547718202,30",
];

/** Seed 5's committed running sums, as even_odd_sums.ts prints them, then its final line. */
const SEED_SUMS_OUTPUT = [
  "(odd,1)",
  "(even,2)",
  "(odd,4)",
  "(even,6)",
  "(odd,9)",
  "(even,12)",
  "(odd,16)",
  "(even,20)",
  "(odd,25)",
  "(even,30)",
  "sum_even=30 sum_odd=25",
];

/** What one example run gave. */
interface ExampleRun {
  readonly code: number;
  /** stdout, split into lines (without the final empty one). */
  readonly stdout: string[];
  readonly stderr: string;
  /** The job id, from the log on stderr. */
  readonly jobId: string;
}

/**
 * Runs `deno run -A <args>` in the repository root, with the `info` log so
 * that stderr names the job.
 * @throws {AssertionError} when it does not exit within `timeoutMs`, or the log names no job.
 */
async function runExample(args: readonly string[], timeoutMs = 30_000): Promise<ExampleRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...args],
    cwd: REPO,
    env: { NO_COLOR: "1", WEIR_LOG_LEVEL: "info" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(
    output.signal,
    null,
    `deno run ${args.join(" ")} did not exit within ${timeoutMs} ms; stderr ends:\n${
      stderr.slice(-2_000)
    }`,
  );
  const jobId = /\bjob ([A-Za-z0-9_-]+-[0-9a-f]{8})\b/.exec(stderr)?.[1];
  assert.ok(jobId, `no job id in the log of ${args.join(" ")}:\n${stderr}`);
  return {
    code: output.code,
    stdout: stdout.split("\n").filter((line, i, all) => line !== "" || i < all.length - 1),
    stderr,
    jobId,
  };
}

/** Asserts the run exited 0 and its finished job left no checkpoints in `.weir/checkpoints`. */
async function assertFinishedCleanly(run: ExampleRun): Promise<void> {
  assert.equal(run.code, 0, `exit code ${run.code}; stderr:\n${run.stderr}`);
  await assert.rejects(
    Deno.stat(join(CHECKPOINTS, run.jobId)),
    Deno.errors.NotFound,
    `job ${run.jobId} left checkpoints in ${CHECKPOINTS}`,
  );
}

/** Removes what a failed job left in `.weir/checkpoints` (kept on failure, by design). */
async function removeCheckpointsOf(run: ExampleRun): Promise<void> {
  await Deno.remove(join(CHECKPOINTS, run.jobId), { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
}

/** Asserts `line` is the one-line checkpoint summary a finished example prints last. */
function assertSummary(line: string | undefined): void {
  assert.match(line ?? "", /^checkpoints: \d+ triggered, \d+ completed, 0 failed, .*restarts: 0$/);
}

/** Writes `lines` to a CSV file in a fresh temporary directory, runs `body`, removes the directory. */
async function withCsv(lines: readonly string[], body: (path: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "weir-seed-csv-" });
  try {
    const path = join(dir, "readings.csv");
    await Deno.writeTextFile(path, lines.map((line) => `${line}\n`).join(""));
    await body(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("temperature_alert.ts prints exactly the seed's three alerts, then the checkpoint summary", async () => {
  const run = await runExample(["examples/temperature_alert.ts", "examples/data/sensors.csv"]);
  await assertFinishedCleanly(run);
  assert.deepEqual(run.stdout.slice(0, -1), SEED_ALERTS);
  assert.equal(run.stdout.length, 4);
  assertSummary(run.stdout.at(-1));
});

Deno.test("operator_state_count.ts prints 1 to 5 for the five readings, then the checkpoint summary", async () => {
  const run = await runExample([
    "examples/operator_state_count.ts",
    "examples/data/five_readings.csv",
  ]);
  await assertFinishedCleanly(run);
  assert.deepEqual(run.stdout.slice(0, -1), ["1", "2", "3", "4", "5"]);
  assertSummary(run.stdout.at(-1));
});

Deno.test("side_output.ts sends sensor_1 and sensor_10 to high-temp and sensor_6 and sensor_7 to low-temp", async () => {
  const run = await runExample(["examples/side_output.ts", "examples/data/side_output.csv"]);
  await assertFinishedCleanly(run);
  const records = run.stdout.slice(0, -1);
  const stream = (prefix: string) =>
    records.filter((line) => line.startsWith(`${prefix}> `)).map((line) =>
      line.slice(prefix.length + 2)
    );
  // The two streams may interleave; each keeps the input's order.
  assert.deepEqual(stream("high-temp"), ["sensor_1", "sensor_10"]);
  assert.deepEqual(stream("low-temp"), ["sensor_6", "sensor_7"]);
  assert.equal(records.length, 4, `unexpected lines: ${records.join(" | ")}`);
  assertSummary(run.stdout.at(-1));
});

Deno.test("even_odd_sums.ts commits the same running sums with and without a crash while 7 is in flight", async () => {
  const [clean, crashed] = await Promise.all([
    runExample(["examples/even_odd_sums.ts"]),
    runExample(["examples/even_odd_sums.ts", "--fail-after", "7"]),
  ]);
  await assertFinishedCleanly(clean);
  await assertFinishedCleanly(crashed);
  assert.deepEqual(clean.stdout, SEED_SUMS_OUTPUT);
  assert.deepEqual(crashed.stdout, SEED_SUMS_OUTPUT);

  assert.doesNotMatch(clean.stderr, /restored from checkpoint|restarting/);
  assert.match(crashed.stderr, /induced failure while 7 is in flight/);
  // The restart restores the latest completed checkpoint: 1, unless a slow
  // first checkpoint let the next one start before the crash (it holds the same).
  const restoredFrom = /restarting as attempt 1 \(restart 1\) from checkpoint (\d+)\b/.exec(
    crashed.stderr,
  )?.[1];
  assert.ok(restoredFrom, `no restart from a checkpoint in the log:\n${crashed.stderr}`);
  assert.match(crashed.stderr, new RegExp(`^restored from checkpoint ${restoredFrom}$`, "m"));
  // The seed's checkpoint is taken after 5 (offset 5, sum_even 6, sum_odd 9),
  // so what it committed before the crash is the running sums of 1..5.
  assert.deepEqual(crashed.stdout.slice(0, 5), [
    "(odd,1)",
    "(even,2)",
    "(odd,4)",
    "(even,6)",
    "(odd,9)",
  ]);
});

// ---------------------------------------------------------------------------
// Event time and processing-time timers

Deno.test("rising_temperature.ts warns once, for the one sensor whose temperature rose for 10 s of processing time", async () => {
  // The replay takes 14 s: sensor_1's warning comes about 11 s in. The
  // deadline only bounds a hung run; nothing here is timed.
  const run = await runExample(
    ["examples/rising_temperature.ts", "examples/data/rising_temperatures.csv"],
    90_000,
  );
  await assertFinishedCleanly(run);
  assert.deepEqual(run.stdout.slice(0, -1), [
    "sensor sensor_1 temperature rose continuously for 10000 ms",
  ]);
  assertSummary(run.stdout.at(-1));
});

Deno.test("windowed_counts.ts prints each sensor's count per 5 s window, and sensor_7's two late readings on the side output", async () => {
  const [defaults, lenient] = await Promise.all([
    runExample(["examples/windowed_counts.ts", "examples/data/sensors.csv"]),
    runExample([
      "examples/windowed_counts.ts",
      "examples/data/sensors.csv",
      "--out-of-orderness-seconds",
      "3",
    ]),
  ]);
  await assertFinishedCleanly(defaults);
  await assertFinishedCleanly(lenient);
  assert.deepEqual(defaults.stdout.slice(0, -1), [
    "(sensor_1,1547718195,1547718200,3)",
    "(sensor_7,1547718200,1547718205,2)",
    "late> (sensor_7,1547718202,19.9)",
    "late> (sensor_7,1547718202,30)",
    "(sensor_10,1547718205,1547718210,2)",
    "(sensor_1,1547718205,1547718210,1)",
  ]);
  assertSummary(defaults.stdout.at(-1));
  // With 3 s of out-of-orderness allowed, sensor_7's window takes all four readings.
  assert.deepEqual(lenient.stdout.slice(0, -1), [
    "(sensor_1,1547718195,1547718200,3)",
    "(sensor_7,1547718200,1547718205,4)",
    "(sensor_10,1547718205,1547718210,2)",
    "(sensor_1,1547718205,1547718210,1)",
  ]);
  assertSummary(lenient.stdout.at(-1));
});

// ---------------------------------------------------------------------------
// Bad input

/** Seed 2's input with a line of two fields as line 3 and a non-numeric temperature as line 8. */
const READINGS_WITH_TWO_BAD_LINES = [
  ...SEED_READINGS.slice(0, 2),
  "sensor_1,35.8",
  ...SEED_READINGS.slice(2, 6),
  "sensor_7,1547718202,warm",
  ...SEED_READINGS.slice(6),
];

Deno.test("temperature_alert.ts exits non-zero naming the file and line of a line with two fields", async () => {
  await withCsv(READINGS_WITH_TWO_BAD_LINES, async (path) => {
    const run = await runExample(["examples/temperature_alert.ts", path], 10_000);
    try {
      assert.notEqual(run.code, 0);
      assert.ok(
        run.stderr.includes(`Cannot parse line 3 of ${path}: expected 3 fields`),
        `stderr does not name ${path} and line 3:\n${run.stderr}`,
      );
      assert.ok(run.stderr.includes('"sensor_1,35.8"'), "stderr does not quote the line");
      // Lines 1 and 2 raise no alert, and the job fails before its summary: stdout stays empty.
      assert.deepEqual(run.stdout, []);
    } finally {
      await removeCheckpointsOf(run);
    }
  });
});

Deno.test("temperature_alert.ts exits non-zero naming the file and line of a non-numeric temperature", async () => {
  const lines = READINGS_WITH_TWO_BAD_LINES.filter((line) => line !== "sensor_1,35.8");
  await withCsv(lines, async (path) => {
    const run = await runExample(["examples/temperature_alert.ts", path], 10_000);
    try {
      assert.notEqual(run.code, 0);
      assert.ok(
        run.stderr.includes(`Cannot parse line 7 of ${path}: temperature must be a number`),
        `stderr does not name ${path} and line 7:\n${run.stderr}`,
      );
      // The alerts of lines 1..6 may print before the failure (print() is
      // at-least-once), once each; the job never gets to its summary.
      assert.deepEqual(run.stdout, SEED_ALERTS.slice(0, run.stdout.length));
    } finally {
      await removeCheckpointsOf(run);
    }
  });
});

Deno.test("with --dead-letter, temperature_alert.ts prints the malformed lines on stderr and exactly the seed's alerts", async () => {
  await withCsv(READINGS_WITH_TWO_BAD_LINES, async (path) => {
    const run = await runExample(["examples/temperature_alert.ts", path, "--dead-letter"]);
    await assertFinishedCleanly(run);
    assert.deepEqual(run.stdout.slice(0, -1), SEED_ALERTS);
    assertSummary(run.stdout.at(-1));
    const deadLetters = run.stderr.split("\n")
      .filter((line) => line.startsWith("dead-letter> "))
      .map((line) => JSON.parse(line.slice("dead-letter> ".length)) as DeadLetter);
    assert.deepEqual(
      deadLetters.map(({ source, line, raw }) => ({ source, line, raw })),
      [
        { source: path, line: 3, raw: "sensor_1,35.8" },
        { source: path, line: 8, raw: "sensor_7,1547718202,warm" },
      ],
    );
    assert.match(deadLetters[0]?.error ?? "", /expected 3 fields/);
    assert.match(deadLetters[1]?.error ?? "", /temperature must be a number, got "warm"/);
  });
});
