/**
 * Core NATS connectors, at-most-once: a source ({@linkcode NatsSource})
 * that subscribes to a subject (with a queue group for parallelism above 1)
 * and a sink ({@linkcode NatsSink}) that publishes each record on a subject.
 *
 * ## Guarantee: at-most-once, and why
 *
 * Core NATS keeps no messages and acknowledges none. A message reaches only
 * the subscriptions that exist when it is published; one published while a
 * source was down, restarting or too slow is lost, and after a restore the
 * source cannot ask for the messages it read since the checkpoint. The sink
 * has no transaction to hide a replay, and learns of no loss. Checkpointing
 * improves neither: the source is at-most-once, and the sink accepts only
 * `deliveryGuarantee: "none"`. For replayable input and exactly-once output,
 * use the JetStream connectors (`connectors/jetstream`).
 *
 * @example
 * ```ts
 * import { NatsSink, NatsSource } from "./mod.ts";
 *
 * const connection = { servers: "nats://127.0.0.1:4222" };
 * const lines = new NatsSource({ connection, subject: "sensors.raw", queueGroup: "weir" });
 * const out = new NatsSink<string>({ connection, subject: (line) => `sensors.${line.split(",")[0]}` });
 * console.assert(lines.boundedness === "continuous-unbounded" && out.deliveryGuarantee === "none");
 * ```
 *
 * @module
 */

export {
  checkNatsSplit,
  DEFAULT_MAX_BUFFERED_MESSAGES,
  type NatsDeserializer,
  NatsSource,
  type NatsSourceOptions,
  NatsSourceOverflowError,
  type NatsSplit,
} from "./source.ts";
export { DEFAULT_FLUSH_EVERY_RECORDS, NatsSink, type NatsSinkOptions } from "./sink.ts";
export type { NatsConnectionOptions, NatsTlsOptions } from "../../runtime/actor/nats_connect.ts";
export type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitDiscoverer,
  SplitDiscovery,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";
export type {
  CheckpointingMode,
  CommitRequest,
  Committer,
  CommitterInitContext,
  DeliveryGuarantee,
  SinkV2,
  SinkWriter,
  WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
export type { Clock } from "../../runtime/time/clock.ts";
export type { WatermarkOutput } from "../../runtime/time/watermark.ts";
export type { OutputTag } from "../../runtime/api/output_tag.ts";
export { DeliveryGuaranteeError } from "../../runtime/api/sink_v2.ts";
export { SuppressRestartsError } from "../../runtime/failure.ts";
export type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
