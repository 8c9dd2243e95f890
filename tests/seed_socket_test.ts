/**
 * Seed examples 1–3 with `--socket host:port`, run as a user runs them
 * against `nc -lk 7777`: the test is the peer, a `Deno.listen` server on a
 * free port of 127.0.0.1 that writes the seed's lines to the example's
 * connection and closes it, which ends the example's (bounded) socket
 * stream. Each example is a `deno run -A examples/<name>.ts` subprocess in
 * the repository root; the test compares its stdout with the seed's exact
 * output.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const CHECKPOINTS = join(REPO, ".weir", "checkpoints");

/** Seed 2's input, line by line. */
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

/** Seed 2's output, exactly. */
const SEED_ALERTS = ["(sensor_1,32.4,42.4)", "(sensor_10,52.6,22.5)", "(sensor_7,19.9,30)"];

interface SocketRun {
  readonly code: number;
  readonly stdout: string[];
  readonly stderr: string;
  readonly jobId: string | undefined;
}

/**
 * Serves `text` to the first connection on a free port, runs
 * `deno run -A <script> --socket 127.0.0.1:<port> <extra>` and returns what
 * it printed. Removes the job's checkpoints, if any are left.
 */
async function runWithSocket(
  script: string,
  text: string,
  extra: readonly string[] = [],
  timeoutMs = 30_000,
): Promise<SocketRun> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const served = (async () => {
    const conn = await listener.accept();
    try {
      const bytes = new TextEncoder().encode(text);
      let written = 0;
      while (written < bytes.length) written += await conn.write(bytes.subarray(written));
    } finally {
      conn.close();
    }
  })();
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script, "--socket", `127.0.0.1:${port}`, ...extra],
      cwd: REPO,
      env: { NO_COLOR: "1", WEIR_LOG_LEVEL: "info" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).output();
    await served;
    const stdout = new TextDecoder().decode(output.stdout);
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.signal, null, `${script} did not exit; stderr:\n${stderr.slice(-2000)}`);
    const jobId = /\bjob ([A-Za-z0-9_-]+-[0-9a-f]{8})\b/.exec(stderr)?.[1];
    if (jobId !== undefined) {
      await Deno.remove(join(CHECKPOINTS, jobId), { recursive: true }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
    }
    return {
      code: output.code,
      stdout: stdout.split("\n").filter((line) => line !== ""),
      stderr,
      jobId,
    };
  } finally {
    listener.close();
  }
}

function assertSummary(line: string | undefined): void {
  assert.match(line ?? "", /^checkpoints: \d+ triggered, \d+ completed, 0 failed, .*restarts: 0$/);
}

Deno.test("temperature_alert.ts --socket prints exactly the seed's three alerts from CRLF lines on a socket", async () => {
  const run = await runWithSocket(
    "examples/temperature_alert.ts",
    SEED_READINGS.join("\r\n") + "\r\n",
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.stdout.slice(0, -1), SEED_ALERTS);
  assertSummary(run.stdout.at(-1));
});

Deno.test("operator_state_count.ts --socket counts 1 to 5 for the five seed lines", async () => {
  const line = "sensor_1,1547718199,35.8";
  const run = await runWithSocket(
    "examples/operator_state_count.ts",
    `${line}\n${line}\n\n${line}\n${line}\n${line}`,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.stdout.slice(0, -1), ["1", "2", "3", "4", "5"]);
  assertSummary(run.stdout.at(-1));
});

Deno.test("side_output.ts --socket splits the socket's readings into high-temp and low-temp", async () => {
  const run = await runWithSocket(
    "examples/side_output.ts",
    "sensor_1,1547718199,35.8\nsensor_6,1547718201,15.4\nsensor_7,1547718202,6.7\nsensor_10,1547718205,38.1\n",
  );
  assert.equal(run.code, 0, run.stderr);
  const records = run.stdout.slice(0, -1);
  const stream = (prefix: string) =>
    records.filter((l) => l.startsWith(`${prefix}> `)).map((l) => l.slice(prefix.length + 2));
  assert.deepEqual(stream("high-temp"), ["sensor_1", "sensor_10"]);
  assert.deepEqual(stream("low-temp"), ["sensor_6", "sensor_7"]);
  assert.equal(records.length, 4, records.join(" | "));
});

Deno.test("temperature_alert.ts --socket exits non-zero naming the socket and line of a malformed line", async () => {
  const run = await runWithSocket(
    "examples/temperature_alert.ts",
    "sensor_1,1547718199,35.8\nsensor_1,1547718199\n",
  );
  assert.notEqual(run.code, 0);
  assert.match(
    run.stderr,
    /socket 127\.0\.0\.1:\d+, line 2: expected 3 fields \(id,epochSeconds,temperature\), got 2: "sensor_1,1547718199"/,
  );
});

Deno.test("an example refuses a --socket value that is not host:port", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/side_output.ts", "--socket", "localhost"],
    cwd: REPO,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(30_000),
  }).output();
  assert.notEqual(output.code, 0);
  assert.match(
    new TextDecoder().decode(output.stderr),
    /--socket must be host:port with a port in 1\.\.65535: current value is "localhost"/,
  );
});
