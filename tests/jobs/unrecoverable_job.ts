/**
 * The job of `tests/unrecoverable_failures_test.ts`: one small job per kind
 * of failure a retry cannot fix, run with the *default* restart strategy
 * (checkpointing on, so a cluster job would restart without limit), so a
 * test can check that the job fails once, at attempt 0, with the cause.
 *
 *     deno run -A tests/jobs/unrecoverable_job.ts --case CASE [--nats URL] [options]
 *
 * Cases (`--case`):
 *
 * - `missing-file --input PATH`: reads the lines of PATH, which does not
 *   exist (relative paths resolve on the worker, against its working
 *   directory);
 * - `missing-stream --stream S --servers URL`: reads the JetStream stream S,
 *   which does not exist;
 * - `load-throws`: the module throws while a worker's slot thread loads it;
 * - `invalid-config`: the module sets a buffer timeout of -5 ms on slot
 *   threads only (a setting that differs on the worker), which the
 *   environment refuses while the module loads there;
 * - `graph-mismatch`: the module builds another graph on slot threads
 *   (parallelism 3 instead of 2);
 * - `fails-always`: a map that throws on every attempt (a failure the
 *   restart strategy retries; in local mode its default gives up after 3
 *   restarts);
 * - `ok --count N`: a job that succeeds (`SequenceSource` 1..N, summed),
 *   printing `RESULT restarts=<n>`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  executionRole,
  FileSource,
  type SinkV2,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";
import { JetStreamSource } from "../../connectors/jetstream/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    nats: { type: "string" },
    case: { type: "string" },
    input: { type: "string" },
    stream: { type: "string" },
    servers: { type: "string" },
    count: { type: "string", default: "200" },
  },
});

const onSlot = executionRole() === "slot";
const which = values.case ?? "";
if (which === "load-throws" && onSlot) {
  throw new Error("induced failure while the job module loads on a worker");
}

/** A sink that drops every record. */
function discard<T>(): SinkV2<T, never, never> {
  return {
    kind: "v2",
    deliveryGuarantee: "at-least-once",
    createWriter: () => ({ write() {}, flush() {}, close() {} }),
  };
}

const env = StreamExecutionEnvironment.getExecutionEnvironment()
  .setParallelism(which === "graph-mismatch" && onSlot ? 3 : 2)
  .enableCheckpointing(200);
if (which === "invalid-config" && onSlot) env.setBufferTimeout(-5);

switch (which) {
  case "missing-file": {
    if (values.input === undefined) throw new TypeError("--case missing-file needs --input PATH");
    env.fromSource(FileSource.forLines(values.input), WatermarkStrategy.noWatermarks(), "lines")
      .uid("lines")
      .sinkTo(discard<string>()).uid("out");
    break;
  }
  case "missing-stream": {
    if (values.stream === undefined || values.servers === undefined) {
      throw new TypeError("--case missing-stream needs --stream S --servers URL");
    }
    env.fromSource(
      new JetStreamSource<unknown>({
        connection: { servers: values.servers },
        stream: values.stream,
        bounded: true,
      }),
      WatermarkStrategy.noWatermarks(),
      "events",
    ).uid("events")
      .sinkTo(discard<unknown>()).uid("out");
    break;
  }
  case "fails-always": {
    // One pipelined region: with two forward pipelines each failing at once,
    // region failover counts one restart per region's failure (as Flink's
    // restart strategies do), and how many attempts the job reaches depends
    // on which failure arrives first. This case checks the bounded default.
    env.setParallelism(1);
    env.fromSource(new SequenceSource(1, 10), WatermarkStrategy.noWatermarks(), "numbers")
      .uid("numbers")
      .map((n: number): number => {
        throw new Error(`induced failure on every attempt, at record ${n}`);
      }).uid("fails")
      .sinkTo(discard<number>()).uid("out");
    break;
  }
  case "load-throws":
  case "invalid-config":
  case "graph-mismatch":
  case "ok": {
    env.fromSource(
      new SequenceSource(1, Number(values.count)),
      WatermarkStrategy.noWatermarks(),
      "numbers",
    ).uid("numbers")
      .keyBy((n) => n % 2)
      .reduce((a, b) => a + b).uid("sum")
      .sinkTo(discard<number>()).uid("out");
    break;
  }
  default:
    throw new TypeError(
      `--case must be one of missing-file, missing-stream, load-throws, invalid-config, ` +
        `graph-mismatch, fails-always, ok: current value is ${JSON.stringify(which)}`,
    );
}

const result = await env.execute(`unrecoverable ${which}`);
console.log(`RESULT restarts=${result.restarts}`);
