/**
 * The job of the savepoint cluster tests (`tests/savepoint_cluster_test.ts`):
 * the exactly-once audit (a JetStream source of `{"key","seq"}` records,
 * keyed state checking each key's `seq` goes 1, 2, 3, …, a transactional
 * JetStream sink to `--sink-stream`) plus an event-time branch: records
 * carry event time `seq` seconds, and a tumbling window of `--window`
 * seconds counts each key's records, written as `{"key","end","count"}`
 * to `--windows-stream`. A window fires when the watermark passes its end:
 * at the end of the input, or at a stop with `--drain`.
 *
 *     deno run -A tests/jobs/savepoint_job.ts --nats URL --source-stream S \
 *       --sink-stream T --windows-stream W --txn-bucket B [--parallelism P] [--rate R] [--window 10]
 *       [--unbounded]
 *
 * With `--unbounded` the source keeps waiting for input at the end of the
 * stream, so the job only ends by a stop (the tests stop it at a point of
 * their choosing, never racing its end).
 *
 * It is meant to be run by `weir run … -s <savepoint>`, which restores a savepoint.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  StreamExecutionEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../../mod.ts";
import { JetStreamSink, JetStreamSource } from "../../connectors/jetstream/mod.ts";
import {
  AUDIT_UIDS,
  type AuditOutput,
  type AuditRecord,
  isViolation,
  SemanticsCheck,
} from "../../examples/exactly_once_audit.ts";

/** A window's count, as written to the windows stream. */
export interface WindowCount {
  /** The key. */
  readonly key: string;
  /** The window's end, in event-time ms. */
  readonly end: number;
  /** Records of the key in the window. */
  readonly count: number;
}

if (import.meta.main) {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      "source-stream": text,
      "sink-stream": text,
      "windows-stream": text,
      "txn-bucket": text,
      parallelism: text,
      rate: text,
      window: text,
      unbounded: { type: "boolean" },
    },
  });
  const need = (name: Exclude<keyof typeof values, "unbounded">): string => {
    const v = values[name];
    if (v === undefined) throw new Error(`savepoint_job.ts needs --${name}`);
    return v;
  };
  const connection = { servers: need("nats") };
  const txnBucket = need("txn-bucket");
  const sinkStream = need("sink-stream");
  const windowsStream = need("windows-stream");
  const windowMs = Number(values.window ?? "10") * 1000;
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(Number(values.parallelism ?? "2"))
    .enableCheckpointing(300, { timeoutMs: 20_000 });
  const keyed = env.fromSource(
    new JetStreamSource<AuditRecord>({
      connection,
      stream: need("source-stream"),
      filterSubject: `${need("source-stream")}.*`,
      bounded: !values.unbounded,
      txnBucket,
      ...(values.rate === undefined ? {} : { recordsPerSecond: Number(values.rate) }),
    }),
    WatermarkStrategy.forMonotonousTimestamps<AuditRecord>().withTimestampAssigner((r) =>
      r.seq * 1000
    ),
    "audit input",
  ).uid(AUDIT_UIDS.source)
    .keyBy((r) => r.key);
  keyed.process(new SemanticsCheck()).uid(AUDIT_UIDS.check)
    .sinkTo(
      new JetStreamSink<AuditOutput>({
        connection,
        stream: sinkStream,
        subject: (o) =>
          isViolation(o) ? `${sinkStream}.violations.${o.key}` : `${sinkStream}.records.${o.key}`,
        txnBucket,
      }),
    ).uid(AUDIT_UIDS.sink);
  keyed.window(TumblingEventTimeWindows.of(windowMs))
    .aggregate(
      {
        createAccumulator: () => 0,
        add: (_r: AuditRecord, n: number) => n + 1,
        getResult: (n: number) => n,
        merge: (a: number, b: number) => a + b,
      },
      {
        process(key: string, context, counts: Iterable<number>, out) {
          for (const count of counts) out.collect({ key, end: context.window().end, count });
        },
      },
    ).uid("window-counts")
    .sinkTo(
      new JetStreamSink<WindowCount>({
        connection,
        stream: windowsStream,
        subject: (w) => `${windowsStream}.${w.key}`,
        txnBucket,
      }),
    ).uid("window-sink");
  const result = await env.execute("savepoint audit");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
