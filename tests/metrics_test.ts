/**
 * The job result's per-vertex metrics: record counts that add up, and
 * Flink's `backPressuredTimeMsPerSecond` on a producer held back by a slow
 * consumer (credits bound what it may send).
 *
 * @module
 */

import assert from "node:assert/strict";
import { SequenceSource, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";

Deno.test("the job result counts records per vertex and shows back pressure behind a slow sink", async () => {
  await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setCheckpointDirectory(directory).setNetworkBuffers({ bufferSize: 16, credits: 1 });
    let written = 0;
    env.fromSource(new SequenceSource(1, 2000), WatermarkStrategy.noWatermarks(), "numbers")
      .uid("numbers")
      .keyBy((n) => n % 10)
      .map((n) => n * 2)
      .sinkTo({
        kind: "simple",
        invoke: async () => {
          written++;
          if (written % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
        },
      });
    const result = await env.execute("metrics");
    const source = result.metrics["v0"]!;
    const sink = result.metrics["v1"]!;
    assert.equal(written, 2000);
    assert.equal(source.numRecordsOut, 2000, "the source wrote every record to its keyed edge");
    assert.equal(sink.numRecordsIn, 2000, "the keyed vertex consumed every record");
    assert.equal(sink.numRecordsOut, 0, "the sink vertex has no network output");
    assert.ok(
      source.backPressuredTimeMsPerSecond > 100,
      `the source waited for credit most of the time: ${source.backPressuredTimeMsPerSecond} ms/s`,
    );
    assert.ok(sink.backPressuredTimeMsPerSecond < source.backPressuredTimeMsPerSecond);
  });
});
