/**
 * Seed example 2: keyed state. Keyed by sensor id, a ValueState holds the
 * last temperature, and a jump of 10 degrees or more emits
 * `(id,last,current)`.
 *
 * Run (local mode):
 *
 *     deno run -A examples/temperature_alert.ts examples/data/sensors.csv
 *     deno run -A examples/temperature_alert.ts examples/data/bad_sensors.csv
 *     deno run -A examples/temperature_alert.ts examples/data/bad_sensors.csv --dead-letter
 *
 * It prints the alerts, then a one-line checkpoint summary. A malformed line
 * fails the job with an error naming the file and line; with `--dead-letter`
 * the line is printed on stderr instead and the job goes on.
 *
 * From a socket instead (the seeds' `nc -lk 7777`; at-most-once, ends when
 * the peer closes; a malformed line names the socket and line number):
 *
 *     deno run -A examples/temperature_alert.ts --socket localhost:7777
 *
 * Run (cluster mode, with a coordinator and workers running; see `cli.ts`):
 *
 *     deno run -A examples/temperature_alert.ts --nats nats://127.0.0.1:4222 \
 *       --source-stream sensors --sink-stream alerts --load examples/data/sensors.csv
 *     deno run -A cli.ts read --nats nats://127.0.0.1:4222 --stream alerts --committed
 *
 * With `--source-stream S` the readings come from JetStream stream S, one
 * CSV line per message (bounded: the job reads up to the stream's last
 * message at its first start, unless `--unbounded`), and the alerts
 * `(id,last,current)` go, as UTF-8 text, to subject `T.alerts` of stream T
 * through the transactional `JetStreamSink` (`--sink-stream T`,
 * `--txn-bucket B`, default `weir-txn`): they become visible to
 * read-committed readers when a checkpoint completes. `--load FILE` first
 * publishes the file's non-blank lines to `S.readings`, in order; both
 * streams are created (capturing `S.>` and `T.>`) when missing. With
 * `--jetstream URL` instead of `--nats URL` the same job runs in local mode.
 * In cluster mode the job runs on the workers: `--dead-letter` lines are
 * printed on their stderr, and this process prints the checkpoint summary.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  DEAD_LETTER,
  executionRole,
  type JobExecutionResult,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  PrintSink,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { parseSensorReading, readSensors, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";
import {
  DEFAULT_TXN_BUCKET,
  JETSTREAM_DEAD_LETTER,
  JetStreamSink,
  JetStreamSource,
  type NatsConnectionOptions,
} from "../connectors/jetstream/mod.ts";
import { ensureStream, exampleConnection, publishAll } from "./_jetstream.ts";

/** Emits `[id, last, current]` when `|current - last| >= threshold`. */
export class TemperatureJumpAlert
  implements KeyedProcessFunction<string, SensorReading, [string, number, number]> {
  readonly threshold: number;
  private last!: ValueState<number>;
  constructor(threshold: number) {
    this.threshold = threshold;
  }
  open(ctx: RuntimeContext): void {
    this.last = ctx.getState(new ValueStateDescriptor<number>("last-temperature"));
  }
  processElement(
    reading: SensorReading,
    _ctx: KeyedProcessContext<string>,
    out: Collector<[string, number, number]>,
  ): void {
    const last = this.last.value();
    if (last !== undefined && Math.abs(reading.temperature - last) >= this.threshold) {
      out.collect([reading.id, last, reading.temperature]);
    }
    this.last.update(reading.temperature);
  }
}

/** Options of {@linkcode runOnJetStream}. */
export interface JetStreamAlertOptions {
  /** How the job and this process connect to NATS. */
  readonly connection: NatsConnectionOptions;
  /** The stream of CSV lines, one per message. */
  readonly sourceStream: string;
  /** The stream the alerts go to (subject `<sinkStream>.alerts`). */
  readonly sinkStream: string;
  /** The sink's transaction bucket (default `weir-txn`). */
  readonly txnBucket?: string;
  /** The alert threshold, in degrees. */
  readonly threshold: number;
  /** Send malformed lines to stderr instead of failing the job. */
  readonly deadLetter: boolean;
  /** Keep reading new messages instead of stopping at the last one at the first start. */
  readonly unbounded: boolean;
}

const utf8 = new TextDecoder();
const encoder = new TextEncoder();

/**
 * Publishes the non-blank lines of `path` to `<stream>.readings`, in order
 * (creating the stream, capturing `<stream>.>`, when missing). Never call
 * it on a slot thread.
 * @returns the number of lines published.
 * @throws {Error} when the file cannot be read or NATS refuses a publish.
 */
export async function loadSensorLines(
  connection: NatsConnectionOptions,
  stream: string,
  path: string,
): Promise<number> {
  const lines = (await Deno.readTextFile(path)).split(/\r?\n/).filter((l) => l.trim() !== "");
  await ensureStream(connection, stream);
  const subject = `${stream}.readings`;
  return await publishAll(connection, lines.map((l) => [subject, encoder.encode(l)] as const));
}

/**
 * The seed example's job on JetStream: readings from `sourceStream`, alerts
 * `(id,last,current)` to `sinkStream` through the transactional sink.
 * @returns the job's result (in cluster mode, once the job ended on the cluster).
 */
export function runOnJetStream(options: JetStreamAlertOptions): Promise<JobExecutionResult> {
  const { connection, sourceStream, sinkStream } = options;
  const txnBucket = options.txnBucket ?? DEFAULT_TXN_BUCKET;
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  const readings = env.fromSource(
    new JetStreamSource<SensorReading>({
      connection,
      stream: sourceStream,
      bounded: !options.unbounded,
      txnBucket,
      deserializer: (data) => parseSensorReading(utf8.decode(data)),
      onMalformed: options.deadLetter ? "dead-letter" : "fail",
    }),
    WatermarkStrategy.noWatermarks(),
    "sensors",
  ).uid("sensor-source");
  readings.getSideOutput(JETSTREAM_DEAD_LETTER).sinkTo(
    new PrintSink({
      target: "stderr",
      prefix: "dead-letter",
      formatter: (d) => `${d.stream}#${d.seq}: ${d.error}: ${JSON.stringify(utf8.decode(d.data))}`,
    }),
  );
  readings
    .keyBy((r) => r.id)
    .process(new TemperatureJumpAlert(options.threshold))
    .uid("temperature-jump-alert")
    .name("TemperatureJumpAlert")
    .sinkTo(
      new JetStreamSink<[string, number, number]>({
        connection,
        stream: sinkStream,
        subject: `${sinkStream}.alerts`,
        serializer: (alert) => encoder.encode(PrintSink.format(alert)),
        txnBucket,
      }),
    ).uid("alerts");
  return env.execute("temperature alert");
}

async function mainOnJetStream(values: {
  nats?: string | undefined;
  jetstream?: string | undefined;
  "source-stream": string;
  "sink-stream"?: string | undefined;
  "txn-bucket"?: string | undefined;
  load?: string | undefined;
  threshold: string;
  "dead-letter": boolean;
  unbounded: boolean;
}): Promise<void> {
  const connection = exampleConnection(values, "temperature-alert");
  const sourceStream = values["source-stream"];
  const sinkStream = values["sink-stream"];
  if (sinkStream === undefined) throw new Error("--source-stream S needs --sink-stream T");
  if (executionRole() !== "slot") {
    if (values.load !== undefined) {
      const n = await loadSensorLines(connection, sourceStream, values.load);
      console.error(`loaded ${n} lines of ${values.load} into stream ${sourceStream}`);
    }
    await ensureStream(connection, sinkStream);
  }
  const result = await runOnJetStream({
    connection,
    sourceStream,
    sinkStream,
    threshold: Number(values.threshold),
    deadLetter: values["dead-letter"],
    unbounded: values.unbounded,
    ...(values["txn-bucket"] === undefined ? {} : { txnBucket: values["txn-bucket"] }),
  });
  console.log(result.summary);
  console.error(
    `alerts committed to stream ${sinkStream}: deno run -A cli.ts read --nats ${connection.servers} ` +
      `--stream ${sinkStream} --committed` +
      (values["txn-bucket"] === undefined ? "" : ` --txn-bucket ${values["txn-bucket"]}`),
  );
}

async function mainOnFile(
  values: { "dead-letter": boolean; threshold: string; socket?: string | undefined },
  positionals: string[],
): Promise<void> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  const readings = readSensors(env, {
    path: positionals[0] ?? "examples/data/sensors.csv",
    socket: values.socket,
    deadLetter: values["dead-letter"],
  });
  readings.getSideOutput(DEAD_LETTER).print({ target: "stderr", prefix: "dead-letter" });
  readings
    .keyBy((r) => r.id)
    .process(new TemperatureJumpAlert(Number(values.threshold)))
    .uid("temperature-jump-alert")
    .name("TemperatureJumpAlert")
    .print();
  const result = await env.execute("temperature alert").catch(exitWithError);
  console.log(result.summary);
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      "dead-letter": { type: "boolean", default: false },
      "threshold": { type: "string", default: "10" },
      nats: { type: "string" },
      jetstream: { type: "string" },
      "source-stream": { type: "string" },
      "sink-stream": { type: "string" },
      "txn-bucket": { type: "string" },
      load: { type: "string" },
      unbounded: { type: "boolean", default: false },
      socket: { type: "string" },
    },
  });
  const sourceStream = values["source-stream"];
  if (sourceStream !== undefined) {
    const run = mainOnJetStream({ ...values, "source-stream": sourceStream });
    // On a slot thread an error must reach the worker process (which reports it), not end it.
    if (executionRole() === "slot") await run;
    else await run.catch(exitWithError);
  } else {
    await mainOnFile(values, positionals);
  }
}
