/**
 * The job of `tests/cli_jobs_test.ts`: the exactly-once audit (a JetStream
 * source of `{"key","seq"}` records, keyed state checking each key's `seq`
 * goes 1, 2, 3, …, a transactional JetStream sink), unbounded (it only ends
 * by a cancel, a stop or Ctrl-C), with a checkpoint every 300 ms.
 *
 * It sets no parallelism of its own, so `weir run -p N` decides it.
 *
 *     deno run -A tests/jobs/cli_jobs_job.ts --jetstream URL --source-stream S \
 *       --sink-stream T --txn-bucket B [--checkpoint-dir DIR] [--nats URL]
 *
 * `--jetstream` is where the source and sink connect; `--nats` (which
 * `weir run --nats` appends) submits the job to a cluster.
 * `--checkpoint-dir` is local mode's checkpoint directory.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../../mod.ts";
import { JetStreamSink, JetStreamSource } from "../../connectors/jetstream/mod.ts";
import {
  AUDIT_UIDS,
  type AuditOutput,
  type AuditRecord,
  isViolation,
  SemanticsCheck,
} from "../../examples/exactly_once_audit.ts";

if (import.meta.main) {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      jetstream: text,
      "source-stream": text,
      "sink-stream": text,
      "txn-bucket": text,
      "checkpoint-dir": text,
    },
  });
  const need = (name: "jetstream" | "source-stream" | "sink-stream" | "txn-bucket"): string => {
    const v = values[name];
    if (v === undefined) throw new Error(`cli_jobs_job.ts needs --${name}`);
    return v;
  };
  const connection = { servers: need("jetstream") };
  const source = need("source-stream");
  const sink = need("sink-stream");
  const txnBucket = need("txn-bucket");
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(300, {
      timeoutMs: 20_000,
      ...(values["checkpoint-dir"] === undefined ? {} : { directory: values["checkpoint-dir"] }),
    })
    .setRestartStrategy(RestartStrategies.fixedDelay(3, 200));
  env.fromSource(
    new JetStreamSource<AuditRecord>({
      connection,
      stream: source,
      filterSubject: `${source}.*`,
      bounded: false,
      txnBucket,
    }),
    WatermarkStrategy.noWatermarks(),
    "audit input",
  ).uid(AUDIT_UIDS.source)
    .keyBy((r) => r.key)
    .process(new SemanticsCheck()).uid(AUDIT_UIDS.check)
    .sinkTo(
      new JetStreamSink<AuditOutput>({
        connection,
        stream: sink,
        subject: (o) => isViolation(o) ? `${sink}.violations.${o.key}` : `${sink}.records.${o.key}`,
        txnBucket,
      }),
    ).uid(AUDIT_UIDS.sink);
  await env.execute("cli jobs audit");
}
