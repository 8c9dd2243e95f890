/**
 * Weir's public test kit: a scripted, checkpointable source
 * ({@linkcode TestSource}, with markers to fail on an attempt, wait for a
 * checkpoint, pause, stamp or end), an exactly-once collecting sink
 * ({@linkcode CollectingSink}, a `SinkV2`), the conformance suite every
 * exactly-once sink runs ({@linkcode exactlyOnceSinkConformanceSuite}), a
 * hand-driven clock ({@linkcode ManualClock})
 * and a reader output that records what a source reader emits
 * ({@linkcode RecordingReaderOutput}), so a job's exactly-once behaviour can
 * be tested under induced failures without real sleeps.
 *
 * A typical test runs a job from a `TestSource` whose `fail` marker crashes
 * the first attempt after a checkpoint, and asserts that the
 * `CollectingSink` committed exactly what a run without failure would have.
 * The pieces also work on their own, through the source and sink interfaces:
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CollectingSink, ManualClock, RecordingReaderOutput, TestSource } from "./testing.ts";
 *
 * const clock = new ManualClock();
 * const source = TestSource.of([1, 2, TestSource.pause(1_000), 3]);
 * const reader = source.createReader({
 *   subtaskIndex: 0,
 *   parallelism: 1,
 *   attempt: 0,
 *   operatorName: "numbers",
 *   currentProcessingTime: () => clock.now(),
 *   clock,
 * });
 * reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
 *
 * const sink = new CollectingSink<number>();
 * const init = { subtaskIndex: 0, parallelism: 1, attempt: 0, uid: "out", jobId: "example" };
 * const txn = sink.beginTransaction(init);
 * const output = new RecordingReaderOutput<number>();
 *
 * while (reader.pollNext(output) === "MORE_AVAILABLE");
 * clock.advance(1_000); // the pause ends
 * while (reader.pollNext(output) !== "END_OF_INPUT");
 *
 * for (const n of output.records) sink.invoke(txn, n, { timestamp: undefined });
 * sink.preCommit(txn);
 * assert.deepEqual(sink.committed(), []); // invisible until the checkpoint completes
 * sink.commit(txn);
 * assert.deepEqual(sink.committed(), [1, 2, 3]);
 * ```
 *
 * @module
 */

export {
  InducedFailure,
  type InducedFailureOptions,
  type TestItem,
  TestMarker,
  type TestMarkerSpec,
  TestSource,
  type TestSourceOptions,
  type TestSplit,
} from "./connectors/testing/test_source.ts";
export {
  CollectingSink,
  type CollectingSinkStats,
  type CollectingTxn,
} from "./connectors/testing/collecting_sink.ts";
export {
  CONFORMANCE_RECORD_COUNT,
  type ConformanceRecord,
  conformanceRecord,
  type ExactlyOnceSink,
  exactlyOnceSinkConformanceSuite,
  type ExactlyOnceSinkFixture,
} from "./connectors/testing/exactly_once_sink_conformance.ts";
export { ManualClock } from "./runtime/time/manual_clock.ts";
export {
  type ReaderOutputEvent,
  RecordingReaderOutput,
} from "./connectors/testing/reader_output.ts";
export type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "./runtime/api/source.ts";
export type { SinkContext, SinkInitContext, TwoPhaseCommitSink } from "./runtime/api/sink.ts";
export type {
  CheckpointingMode,
  CommitRequest,
  Committer,
  CommitterInitContext,
  DeliveryGuarantee,
  SinkV2,
  SinkWriter,
  WriterInitContext,
} from "./runtime/api/sink_v2.ts";
export type { Clock } from "./runtime/time/clock.ts";
export type { WatermarkOutput } from "./runtime/time/watermark.ts";
export type { FaultInjector, FaultPoint, FaultSite } from "./runtime/task/stream_task.ts";
export type { CoordinatorFaultPoint } from "./runtime/cluster/coordinator.ts";
export type { OutputTag } from "./runtime/api/output_tag.ts";
