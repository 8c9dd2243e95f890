/**
 * A job reading a file that does not exist fails once, at attempt 0,
 * naming the path, under the default restart strategy (fixed delay,
 * unlimited): `FileNotReadableError` in `connectors/file/file_source.ts`.
 * The example `temperature_alert.ts` given such a path exits once with
 * that error instead of restarting every second.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { FileSource, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";
import { assertFailsOnce, discardingGuard } from "./_permanent_kit.ts";

Deno.test("a job reading a file that does not exist fails once, naming the path", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "missing.csv");
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(1)
      .enableCheckpointing(50, { directory: join(dir, "checkpoints") });
    env.fromSource(FileSource.forLines(path), WatermarkStrategy.noWatermarks(), "lines")
      .uid("lines")
      .sinkTo(discardingGuard<string>()).uid("out");
    await assertFailsOnce(env, "missing file", [path, "FileNotReadableError", "no such file"]);
  });
});

Deno.test("the temperature alert example given a path that does not exist exits once, naming the path", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "nonexistent.csv");
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../examples/temperature_alert.ts", import.meta.url).pathname,
        path,
      ],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      // A bound for failing, not a measurement: before the fix the example restarted forever.
      signal: AbortSignal.timeout(120_000),
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.signal, null, `killed after 120 s: ${stderr.slice(-2000)}`);
    assert.notEqual(output.code, 0, stderr);
    assert.ok(stderr.includes(path), stderr);
    // The failure is printed once, as the job's error (attempt 0), and no attempt followed.
    assert.equal(stderr.split(`Cannot read ${path} in FileSource`).length - 1, 1, stderr);
    assert.match(stderr, /attempt 0\] of job \S+ failed/, stderr);
    assert.ok(!stderr.includes("attempt 1"), stderr);
  });
});
