/**
 * The data plane end to end, in-process: a lost, duplicated or reordered
 * buffer is detected by its channel's sequence numbers and fails the attempt
 * (never skipped; the suite of `_channel_faults.ts`, run on an
 * `InProcessBus`), and credit-based flow control keeps a fast source within
 * a few buffers of a slow sink without losing anything.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { TestSource } from "../testing.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { SlowCollectingSink, withTempDir } from "./_job_kit.ts";
import { channelFaultSuite } from "./_channel_faults.ts";

channelFaultSuite("in-process", () => {
  const bus = new InProcessBus();
  return () => bus.connect();
}, "value");

Deno.test("credits keep a fast source within a few buffers of a slow sink and lose nothing", async () => {
  const records = 3000;
  const bufferSize = 16;
  const credits = 2;
  const batchSize = 8;
  await withTempDir(async (dir) => {
    const counts = { emitted: 0, invoked: 0, maxInFlight: 0 };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.noRestart())
      .setNetworkBuffers({ bufferSize, credits });
    const sink = new SlowCollectingSink<number>(1, counts);
    env.fromSource(
      TestSource.of(Array.from({ length: records }, (_, i) => i), { batchSize }),
      WatermarkStrategy.noWatermarks(),
      "numbers",
    ).uid("numbers")
      .map((n) => {
        counts.emitted++;
        counts.maxInFlight = Math.max(counts.maxInFlight, counts.emitted - counts.invoked);
        return n;
      }).name("count emitted")
      .rebalance() // a network channel between the source and the sink
      .sinkTo(sink).uid("slow");
    const result = await env.execute("backpressure");

    assert.deepEqual(sink.committed(), Array.from({ length: records }, (_, i) => i));
    assert.equal(counts.invoked, records, "the sink was not given every record once");
    // In flight: the buffers the consumer has credit for, the sealed buffers
    // waiting for credit, the open buffer, and one poll's batch.
    const bound = (credits + 2) * bufferSize + batchSize;
    assert.ok(
      counts.maxInFlight <= bound,
      `the source ran ${counts.maxInFlight} records ahead of the sink (at most ${bound} expected)`,
    );
    assert.ok(
      counts.maxInFlight >= credits * bufferSize,
      `the sink never fell behind (${counts.maxInFlight} records in flight): no backpressure`,
    );
    assert.equal(result.restarts, 0);
  });
});
