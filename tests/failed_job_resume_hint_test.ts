/**
 * A local job that fails for good before completing any checkpoint (the
 * README's `examples/temperature_alert.ts examples/data/bad_sensors.csv`)
 * prints its cause once and no `weir resume` command: there is nothing to
 * resume from, and the command it used to print failed with "has no
 * completed checkpoint" (found by following the README as a new user).
 *
 * @module
 */

import assert from "node:assert/strict";

Deno.test("a job that fails before its first checkpoint prints no weir resume command", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/temperature_alert.ts", "examples/data/bad_sensors.csv"],
    cwd: new URL("..", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 1, stderr);
  assert.match(stderr, /Cannot parse line 3 of examples\/data\/bad_sensors\.csv/);
  assert.match(stderr, /failed; it has no completed checkpoint to resume from/);
  assert.doesNotMatch(stderr, /weir resume/);
});
