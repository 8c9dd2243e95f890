/**
 * Exactly-once audit, end to end through JetStream: a stream of
 * `{"key":"k17","seq":42}` records (K keys, each numbered 1..N) is keyed by
 * `key`, a keyed-state check verifies per key that every `seq` is the last
 * one plus 1 (Flink's `SemanticsCheckMapper` of its end-to-end tests), and
 * every record goes on through the transactional `JetStreamSink` to a second
 * stream. Read committed, that stream must then hold per key exactly
 * 1..N in order, however often the job failed on the way.
 *
 * Run it in cluster mode (`--nats`), with a coordinator and workers running:
 *
 *     deno run -A cli.ts coordinator --nats nats://127.0.0.1:4222 &
 *     deno run -A cli.ts worker --nats nats://127.0.0.1:4222 --slots 2 &
 *     deno run -A examples/exactly_once_audit.ts --nats nats://127.0.0.1:4222 \
 *       --source-stream audit-in --sink-stream audit-out --generate --keys 100 --per-key 1000
 *     deno run -A cli.ts read --nats nats://127.0.0.1:4222 --stream audit-out --committed
 *
 * or in local mode (`--jetstream` instead of `--nats`: the job runs in this
 * process, but its input and output are still JetStream streams there):
 *
 *     deno run -A examples/exactly_once_audit.ts --jetstream nats://127.0.0.1:4222 \
 *       --source-stream audit-in --sink-stream audit-out --generate
 *
 * Options: `--parallelism P` (default 2), `--checkpoint-interval MS`
 * (default 1000), `--rate R` (records per second over all source subtasks;
 * default unlimited), `--txn-bucket B` (default `weir-txn`). With
 * `--generate` it first creates the source stream and publishes the input,
 * `--keys K` (default 100) × `--per-key N` (default 1000) records over
 * `--partitions` subjects (default 4); it refuses a source stream that
 * already holds messages. The sink stream is created when missing. At the
 * end it reads the sink stream back, read committed, and prints
 * `AUDIT records=… lost=… duplicated=… out_of_order=… violations=… unexpected=…`
 * against the input `--keys` × `--per-key` describes; it exits with 1 when
 * any count but `records` is not 0.
 *
 * ## Violations: emitted, not thrown
 *
 * On a gap (`seq > last + 1`) or a repeat (`seq <= last`) the check emits an
 * {@linkcode AuditViolation} next to the record instead of failing the job,
 * as Flink's `SemanticsCheckMapper` emits an alert: a failure would restart
 * the job from its last checkpoint and hide the evidence, while a violation
 * in the committed output is counted by the audit. Every record goes on
 * either way; `last` becomes the largest `seq` seen.
 *
 * ## Streams and subjects
 *
 * Input record of key number *i* goes to subject `<source>.p<i mod partitions>`
 * (Kafka-style partitions: one key's records stay in one partition, so in
 * order). The source reads `<source>.*`, one split per partition, bounded at
 * the stream's last sequence at the job's first start. Records are written
 * to `<sink>.records.<key>` and violations to `<sink>.violations.<key>`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type DataStreamSink,
  executionRole,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import {
  DEFAULT_TXN_BUCKET,
  JetStreamSink,
  JetStreamSource,
  type NatsConnectionOptions,
} from "../connectors/jetstream/mod.ts";
import { ensureStream, exampleConnection, publishAll } from "./_jetstream.ts";
import { auditCommittedOutput, type AuditReport, formatAuditReport } from "./audit_check.ts";
import { exitWithError } from "./_cli.ts";

/** One input record: the `seq`-th record (1-based) of `key`. */
export interface AuditRecord {
  /** The key, `k<i>`. */
  readonly key: string;
  /** Its number within the key: 1, 2, 3, ... */
  readonly seq: number;
}

/** What the check emits besides the records when a key's sequence breaks. */
export interface AuditViolation {
  /** The key. */
  readonly key: string;
  /** The `seq` that arrived. */
  readonly seq: number;
  /** The `seq` that should have arrived (the last one plus 1). */
  readonly expected: number;
  /** `gap`: `seq` is past `expected`; `repeat`: `seq` was seen already. */
  readonly violation: "gap" | "repeat";
}

/** What the audit pipeline writes: every record, and the violations. */
export type AuditOutput = AuditRecord | AuditViolation;

/** Whether `output` is a violation rather than a record. */
export function isViolation(output: AuditOutput): output is AuditViolation {
  return "violation" in output;
}

/** The uids of the audit pipeline's operators (stable: they name its state in checkpoints). */
export const AUDIT_UIDS = {
  source: "audit-source",
  check: "semantics-check",
  sink: "audit-sink",
} as const;

/** The name of key number `i` (0-based): `k<i>`. */
export function auditKey(i: number): string {
  return `k${i}`;
}

/**
 * Checks per key that `seq` goes 1, 2, 3, ... (see the module docs): passes
 * every record on and emits an {@linkcode AuditViolation} on a gap or
 * repeat. After Flink's `SemanticsCheckMapper`.
 */
export class SemanticsCheck implements KeyedProcessFunction<string, AuditRecord, AuditOutput> {
  private last!: ValueState<number>;

  /** Registers the keyed state `last-seq`. */
  open(ctx: RuntimeContext): void {
    this.last = ctx.getState(new ValueStateDescriptor<number>("last-seq"));
  }

  /** Checks `record.seq` against the key's last one. */
  processElement(
    record: AuditRecord,
    _ctx: KeyedProcessContext<string>,
    out: Collector<AuditOutput>,
  ): void {
    const last = this.last.value() ?? 0;
    if (record.seq !== last + 1) {
      out.collect({
        key: record.key,
        seq: record.seq,
        expected: last + 1,
        violation: record.seq > last ? "gap" : "repeat",
      });
    }
    if (record.seq > last) this.last.update(record.seq);
    out.collect(record);
  }
}

/** Options of {@linkcode buildAuditPipeline}. */
export interface AuditPipelineOptions {
  /** How source and sink subtasks connect to NATS. */
  readonly connection: NatsConnectionOptions;
  /** The input stream (subjects `<sourceStream>.p<n>`). */
  readonly sourceStream: string;
  /** The output stream (it must store `<sinkStream>.>`). */
  readonly sinkStream: string;
  /** The KV bucket of the sink's transactions, read by read-committed readers (default `weir-txn`). */
  readonly txnBucket?: string;
  /** Source rate over all its subtasks, in records per second (default unlimited). */
  readonly recordsPerSecond?: number;
}

/**
 * Adds the audit pipeline to `env`: JetStream source (bounded, uid
 * `audit-source`) → `keyBy(key)` → {@linkcode SemanticsCheck} (uid
 * `semantics-check`) → transactional JetStream sink (uid `audit-sink`), all
 * at the environment's parallelism. Checkpointing and restarts are left to
 * the caller.
 * @returns the sink, e.g. to find its vertex for fault injection.
 */
export function buildAuditPipeline(
  env: StreamExecutionEnvironment,
  options: AuditPipelineOptions,
): DataStreamSink<AuditOutput> {
  const { connection, sourceStream, sinkStream } = options;
  const txnBucket = options.txnBucket ?? DEFAULT_TXN_BUCKET;
  return env.fromSource(
    new JetStreamSource<AuditRecord>({
      connection,
      stream: sourceStream,
      filterSubject: `${sourceStream}.*`,
      bounded: true,
      txnBucket,
      ...(options.recordsPerSecond === undefined
        ? {}
        : { recordsPerSecond: options.recordsPerSecond }),
    }),
    WatermarkStrategy.noWatermarks(),
    "audit input",
  ).uid(AUDIT_UIDS.source)
    .keyBy((r) => r.key)
    .process(new SemanticsCheck()).uid(AUDIT_UIDS.check).name("SemanticsCheck")
    .sinkTo(
      new JetStreamSink<AuditOutput>({
        connection,
        stream: sinkStream,
        subject: (o) =>
          isViolation(o) ? `${sinkStream}.violations.${o.key}` : `${sinkStream}.records.${o.key}`,
        txnBucket,
      }),
    ).uid(AUDIT_UIDS.sink).name("audit output");
}

/** The shape of the input: `keys` keys × `perKey` records over `partitions` subjects. */
export interface AuditInputShape {
  /** Number of keys, `k0` .. `k<keys-1>`. */
  readonly keys: number;
  /** Records per key, numbered 1..perKey. */
  readonly perKey: number;
  /** Subjects `<stream>.p0` .. `<stream>.p<partitions-1>` (default 4). */
  readonly partitions?: number;
}

/**
 * The input messages in publishing order, `[subject, JSON payload]`: seq 1
 * of every key, then seq 2 of every key, ... (so every key progresses at
 * the same pace).
 * @throws {RangeError} unless `keys`, `perKey` and `partitions` are positive integers.
 */
export function* auditInput(
  stream: string,
  shape: AuditInputShape,
): Generator<readonly [string, Uint8Array]> {
  const partitions = shape.partitions ?? 4;
  for (const [name, value] of Object.entries({ ...shape, partitions })) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`'${name}' must be a positive integer: current value is ${value}`);
    }
  }
  const encoder = new TextEncoder();
  for (let seq = 1; seq <= shape.perKey; seq++) {
    for (let i = 0; i < shape.keys; i++) {
      const record: AuditRecord = { key: auditKey(i), seq };
      yield [`${stream}.p${i % partitions}`, encoder.encode(JSON.stringify(record))];
    }
  }
}

/**
 * Creates `stream` (capturing `<stream>.>`) and publishes the input of
 * `shape` to it (see {@linkcode auditInput}). Never call it on a slot
 * thread: guard with `executionRole() !== "slot"`.
 * @returns the number of records published.
 * @throws {Error} naming the stream when it already holds messages (the
 *   input would be doubled), or when NATS refuses a publish.
 */
export async function publishAuditInput(
  connection: NatsConnectionOptions,
  stream: string,
  shape: AuditInputShape,
): Promise<number> {
  const found = await ensureStream(connection, stream);
  if (found.kind === "exists" && found.messages > 0) {
    throw new Error(
      `Cannot generate the audit input into stream ${stream}: it already holds ${found.messages} messages`,
    );
  }
  return await publishAll(connection, auditInput(stream, shape));
}

/** Whether an audit report shows exactly-once output: nothing lost, doubled, reordered or flagged. */
export function auditPassed(report: AuditReport): boolean {
  return report.lost === 0 && report.duplicated === 0 && report.outOfOrder === 0 &&
    report.violations === 0 && report.unexpected === 0;
}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new Error(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return n;
}

async function main(): Promise<void> {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      jetstream: text,
      "source-stream": text,
      "sink-stream": text,
      "txn-bucket": text,
      parallelism: text,
      "checkpoint-interval": text,
      rate: text,
      generate: { type: "boolean", default: false },
      keys: text,
      "per-key": text,
      partitions: text,
    },
  });
  const connection = exampleConnection(values, "exactly-once-audit");
  const sourceStream = values["source-stream"];
  const sinkStream = values["sink-stream"];
  if (sourceStream === undefined || sinkStream === undefined) {
    throw new Error("exactly_once_audit.ts needs --source-stream S and --sink-stream T");
  }
  const shape = {
    keys: positiveInt(values.keys, "--keys") ?? 100,
    perKey: positiveInt(values["per-key"], "--per-key") ?? 1000,
    partitions: positiveInt(values.partitions, "--partitions") ?? 4,
  };
  const txnBucket = values["txn-bucket"] ?? DEFAULT_TXN_BUCKET;
  const rate = positiveInt(values.rate, "--rate");
  const onSlot = executionRole() === "slot";
  if (!onSlot) {
    if (values.generate) {
      const n = await publishAuditInput(connection, sourceStream, shape);
      console.error(`published ${n} records to stream ${sourceStream}`);
    }
    await ensureStream(connection, sinkStream);
  }
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(positiveInt(values.parallelism, "--parallelism") ?? 2)
    .enableCheckpointing(
      positiveInt(values["checkpoint-interval"], "--checkpoint-interval") ?? 1000,
    );
  buildAuditPipeline(env, {
    connection,
    sourceStream,
    sinkStream,
    txnBucket,
    ...(rate === undefined ? {} : { recordsPerSecond: rate }),
  });
  const result = await env.execute("exactly-once audit");
  console.log(result.summary);
  const report = await auditCommittedOutput({
    connection,
    stream: sinkStream,
    txnBucket,
    ...shape,
  });
  console.log(`AUDIT ${formatAuditReport(report)}`);
  if (!auditPassed(report)) {
    throw new Error(`the committed output of stream ${sinkStream} is not exactly the input`);
  }
}

if (import.meta.main) {
  // On a slot thread an error must reach the worker process (which reports it), not end it.
  if (executionRole() === "slot") await main();
  else await main().catch(exitWithError);
}
