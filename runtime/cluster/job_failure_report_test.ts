import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DeliveryGuaranteeError } from "../api/sink_v2.ts";
import { InvalidJobGraphError } from "../graph/job_graph.ts";
import { PlanningError } from "../table/changelog_mode.ts";
import { expectedFailureLine } from "./job_failure_report.ts";

Deno.test("expectedFailureLine: a job refused before it starts is one line naming the error class; a bug is left to Deno", () => {
  assert.equal(
    expectedFailureLine(new DeliveryGuaranteeError('Sink (uid "out") has ...')),
    'error: DeliveryGuaranteeError: Sink (uid "out") has ...',
  );
  assert.equal(
    expectedFailureLine(new InvalidJobGraphError("Job 'j' has no source")),
    "error: InvalidJobGraphError: Job 'j' has no source",
  );
  assert.equal(
    expectedFailureLine(new PlanningError("Object 'tt' not found")),
    "error: PlanningError: Object 'tt' not found",
  );
  assert.equal(expectedFailureLine(new TypeError("x is undefined")), undefined);
  assert.equal(expectedFailureLine("a string"), undefined);
});

Deno.test({
  name:
    "a job execute() refuses (exactly-once sink, unbounded source, no checkpointing) exits 1 with one error line and no Uncaught stack",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weir-refused-job-" });
    try {
      const root = new URL("../../", import.meta.url);
      const job = join(dir, "job.ts");
      await Deno.writeTextFile(
        job,
        `import { StreamExecutionEnvironment } from "${new URL("mod.ts", root)}";
import { FileSink, lineEncoder } from "${new URL("connectors/file/mod.ts", root)}";
const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.socketTextStream("127.0.0.1", 9).uid("in").sinkTo(
  new FileSink<string>({ path: ${JSON.stringify(join(dir, "out"))}, encoder: lineEncoder() }),
).uid("out");
await env.execute("refused");
`,
      );
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-lock", job],
        cwd: fileURLToPath(root),
        env: { WEIR_NATS_URL: "" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const out = new TextDecoder().decode(output.stderr) + new TextDecoder().decode(output.stdout);
      assert.equal(output.code, 1, out);
      assert.match(
        out,
        /^error: DeliveryGuaranteeError: Sink \(uid "out"\) has deliveryGuarantee "exactly-once" but checkpointing is off/m,
        out,
      );
      assert.doesNotMatch(out, /Uncaught|\n {4}at /, out);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
