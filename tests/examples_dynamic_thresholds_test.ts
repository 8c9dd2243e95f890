/**
 * `examples/dynamic_thresholds.ts` runs as its header says: `deno run -A
 * examples/dynamic_thresholds.ts` prints one `alert:<subtask>> ...` line
 * per alert, which, sorted, are exactly the alerts computed without Weir
 * (`alertsOf`), at parallelism 2 (the default) and 3.
 *
 * @module
 */

import assert from "node:assert/strict";
import { alertsOf, READINGS, THRESHOLDS } from "../examples/dynamic_thresholds.ts";

async function runExample(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "examples/dynamic_thresholds.ts", ...args],
    cwd: new URL("..", import.meta.url),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

for (const parallelism of [undefined, 3]) {
  Deno.test(
    `examples/dynamic_thresholds.ts prints exactly the alerts of the thresholds in force${
      parallelism ? ` (parallelism ${parallelism})` : ""
    }`,
    async () => {
      const run = await runExample(parallelism ? ["--parallelism", String(parallelism)] : []);
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.split("\n");
      const alerts = lines.filter((l) => l.startsWith("alert"))
        .map((l) => l.replace(/^alert:\d+> /, ""));
      assert.deepEqual(alerts.sort(), alertsOf(READINGS, THRESHOLDS).sort());
      assert.ok(lines.some((l) => /checkpoint/i.test(l)), `a summary line: ${run.stdout}`);
    },
  );
}
