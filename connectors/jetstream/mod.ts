/**
 * JetStream connectors: a replayable source ({@linkcode JetStreamSource},
 * read-committed by default), an exactly-once transactional sink
 * ({@linkcode JetStreamSink}, a SinkV2: Kafka's transactions emulated on
 * JetStream, or plain at-least-once / fire-and-forget publishing), record
 * batches ({@linkcode RecordBatchBuilder}, {@linkcode decodeRecordBatch}),
 * and a read-committed reader ({@linkcode readCommitted},
 * {@linkcode runReadCommand}). The protocol, which any NATS client can
 * follow, is documented in `protocol.ts`.
 *
 * @example
 * ```ts
 * import { JetStreamSink, JetStreamSource } from "./mod.ts";
 *
 * const connection = { servers: "nats://127.0.0.1:4222" };
 * const readings = new JetStreamSource<{ id: string; t: number }>({ connection, stream: "readings" });
 * const alerts = new JetStreamSink<{ id: string }>({ connection, stream: "alerts", subject: "alerts.new" });
 * console.assert(readings.boundedness === "continuous-unbounded" && alerts.stream === "alerts");
 * ```
 *
 * @module
 */

export {
  DEFAULT_DISCOVERY_INTERVAL_MS,
  JETSTREAM_DEAD_LETTER,
  type JetStreamDeadLetter,
  JetStreamDeserializationError,
  JetStreamSource,
  type JetStreamSourceOptions,
  type JetStreamSplit,
  JetStreamSplitStateError,
  type MessageMeta,
  type StartPosition,
} from "./source.ts";
export { isStreamNotFound, JetStreamStreamNotFoundError } from "./stream_not_found.ts";
export { JetStreamSubjectNotStoredError } from "./subject_check.ts";
export {
  DEFAULT_LINGER_MS,
  DEFAULT_MAX_BATCH_BYTES,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_MAX_IN_FLIGHT_BYTES,
  JetStreamSink,
  type JetStreamSinkOptions,
  MAX_BATCH_BYTES_LIMIT,
} from "./sink.ts";
export {
  type BatchLocation,
  decodeRecordBatch,
  encodeRecordBatch,
  RECORD_BATCH_HEADER,
  RecordBatchBuilder,
  RecordBatchError,
  RecordTooLargeError,
} from "./record_batch.ts";
export { TransactionLostError } from "./retention_check.ts";
export {
  checkDuplicateWindow,
  DuplicateWindowTooShortError,
  MIN_DUPLICATE_WINDOW_MS,
} from "./duplicate_window.ts";
export type { JetStreamTxn } from "./producer.ts";
export {
  DEFAULT_MAX_BUFFERED,
  printableValue,
  type ReadCommandOptions,
  readCommitted,
  type ReadOptions,
  type ReadRecord,
  runReadCommand,
} from "./reader.ts";
export {
  DEFAULT_TXN_BUCKET,
  MSG_ID_HEADER,
  ProducerFencedError,
  type ProducerRecord,
  TransactionStateError,
  TXN_HEADER,
  type TxnRecord,
  type TxnState,
} from "./protocol.ts";
export type { FeedMessage, MessageHeaders } from "./feed.ts";
export {
  type Isolation,
  type KnownState,
  ReadCommittedBuffer,
  type Sequenced,
  type Step,
} from "./read_committed.ts";
// Types of the runtime and of the NATS client that this module's API refers to.
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
export type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
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
export { OutputTag } from "../../runtime/api/output_tag.ts";
export { SuppressRestartsError } from "../../runtime/cluster/restart_strategy.ts";
