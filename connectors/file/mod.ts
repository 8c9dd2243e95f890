/**
 * File connectors: an exactly-once file sink ({@linkcode FileSink}, Flink's
 * `FileSink` with row formats: lines, JSON lines, CSV), its rolling
 * policies and bucket assigners, and an RFC 4180 CSV encoder and decoder
 * ({@linkcode encodeCsvRecord}, {@linkcode parseCsv},
 * {@linkcode decodeCsvLine}). The bounded line source, `FileSource`, is in
 * `file_source.ts` (exported by the root module).
 *
 * Part files go from in-progress (hidden) to pending at each checkpoint and
 * to finished when it completes; `file_sink.ts` gives the guarantee and the
 * simplifications, `file_sink_writer.ts` the clean-up at restore,
 * `file_sink_committer.ts` the commit decisions, `file_sink_state.ts` the
 * names and the checkpointed shapes.
 *
 * @example
 * ```ts
 * import { DefaultRollingPolicy, FileSink, jsonLinesEncoder } from "./mod.ts";
 *
 * const sink = new FileSink<{ sensor: string; celsius: number }>({
 *   path: "out/alerts",
 *   encoder: jsonLinesEncoder(),
 *   rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 1 << 20 }),
 * });
 * console.assert(sink.path === "out/alerts");
 * ```
 *
 * @module
 */

export {
  DEFAULT_BUCKET_CHECK_INTERVAL_MS,
  FileSink,
  FileSinkConfigurationError,
  type FileSinkOptions,
} from "./file_sink.ts";
export { FileSinkWriter, type FileSinkWriterOptions } from "./file_sink_writer.ts";
export {
  decideFileCommit,
  type FileCommitDecision,
  FileCommitError,
  type FileCommitFacts,
  FileSinkCommitter,
} from "./file_sink_committer.ts";
export {
  checkFileSinkCommittable,
  checkFileSinkWriterState,
  type FileSinkCommittable,
  type FileSinkWriterState,
  type PartFileNaming,
} from "./file_sink_state.ts";
export {
  DEFAULT_MAX_PART_SIZE_BYTES,
  DEFAULT_ROLLOVER_INTERVAL_MS,
  DefaultRollingPolicy,
  type DefaultRollingPolicyOptions,
  OnCheckpointRollingPolicy,
  type PartFileInfo,
  type RollingPolicy,
} from "./rolling_policy.ts";
export {
  csvEncoder,
  type CsvEncoderOptions,
  jsonLinesEncoder,
  lineEncoder,
  RecordEncodingError,
  type RowEncoder,
} from "./row_encoders.ts";
export {
  BasePathBucketAssigner,
  type BucketAssigner,
  type BucketAssignerContext,
  BucketIdError,
  checkBucketId,
  DateTimeBucketAssigner,
} from "./bucket_assigner.ts";
export {
  type CsvField,
  CsvParseError,
  type CsvReadOptions,
  decodeCsvLine,
  encodeCsvRecord,
  parseCsv,
} from "./csv.ts";
// Types of the runtime that this module's API refers to.
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
export type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
export type { Clock } from "../../runtime/time/clock.ts";
export { SuppressRestartsError } from "../../runtime/failure.ts";
