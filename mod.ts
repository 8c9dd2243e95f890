/**
 * Weir: exactly-once, stateful stream processing for Deno.
 *
 * A job builds a dataflow with Apache Flink's DataStream model and runs it as
 * actors (one per operator subtask) with consistent checkpoints: aligned
 * barriers, replayable sources and two-phase-commit sinks.
 *
 * @example
 * ```ts
 * import { StreamExecutionEnvironment } from "./mod.ts";
 *
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * env.enableCheckpointing(1000);
 * const seen: string[] = [];
 * env.fromCollection(["a", "b", "a"])
 *   .keyBy((word) => word)
 *   .map((word) => word.toUpperCase())
 *   .sinkTo({ kind: "simple", invoke: (w) => { seen.push(w); } });
 * await env.execute("upper");
 * ```
 *
 * @module
 */

// Registers the default job executor (local run, cluster submission, slot thread)
// that `StreamExecutionEnvironment.execute()` hands jobs to (DESIGN §16).
import "./runtime/cluster/default_executor.ts";

export { StreamExecutionEnvironment } from "./runtime/api/environment.ts";
export type {
  CheckpointingOptions,
  JobClient,
  ResumeOptions,
  SavepointRestoreSettings,
  StateBackendKind,
  StateBackendOptions,
} from "./runtime/api/environment.ts";
export type { RestoreMode } from "./runtime/api/executor.ts";
export {
  DataStream,
  DataStreamSink,
  KeyedStream,
  SingleOutputStreamOperator,
} from "./runtime/api/datastream.ts";
export type { StreamGraphOwner, StreamInput } from "./runtime/api/datastream.ts";
export {
  ConnectedStreams,
  KeyedConnectedStreams,
  type TwoInputRequest,
  type TwoInputTransform,
} from "./runtime/api/connected_streams.ts";
export { BroadcastConnectedStream, BroadcastStream } from "./runtime/api/broadcast_stream.ts";
export type {
  BroadcastContext,
  BroadcastProcessFunction,
  BroadcastReadOnlyContext,
  BroadcastState,
  KeyedBroadcastContext,
  KeyedBroadcastOnTimerContext,
  KeyedBroadcastProcessFunction,
  KeyedBroadcastReadOnlyContext,
  KeyedStateDescriptor,
  KeyedStateFunction,
  KeyedStateOf,
  ReadOnlyBroadcastState,
} from "./runtime/api/broadcast_functions.ts";
export type {
  AggregateFunction,
  CheckpointedFunction,
  CheckpointListener,
  CoFlatMapFunction,
  Collector,
  CoMapFunction,
  CoProcessFunction,
  FilterFunction,
  FlatMapFunction,
  FunctionHooks,
  FunctionInitializationContext,
  FunctionSnapshotContext,
  KeyedCoProcessFunction,
  KeyedProcessContext,
  KeyedProcessFunction,
  MapFunction,
  OnTimerContext,
  ProcessContext,
  ProcessFunction,
  ReduceFunction,
  RichFunction,
  RuntimeContext,
  TimerService,
  Timestamp,
} from "./runtime/api/functions.ts";
export { OutputTag } from "./runtime/api/output_tag.ts";
export {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "./runtime/api/state.ts";
export type {
  AggregatingState,
  ListState,
  MapState,
  OperatorStateStore,
  ReducingState,
  StateDescriptor,
  StateKind,
  StateTtlConfig,
  ValueState,
} from "./runtime/api/state.ts";
export type { AggregationField } from "./runtime/api/comparable_aggregator.ts";
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
} from "./runtime/api/source.ts";
export { ownedSplits, splitOwner } from "./runtime/api/split_assignment.ts";
export type {
  Sink,
  SinkContext,
  SinkFunction,
  SinkInitContext,
  TwoPhaseCommitSink,
} from "./runtime/api/sink.ts";
export { checkSink } from "./runtime/api/sink.ts";
export {
  checkDeliveryGuarantee,
  DELIVERY_GUARANTEES,
  DeliveryGuaranteeError,
  SinkStateError,
} from "./runtime/api/sink_v2.ts";
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
export { adaptTwoPhaseCommitSink } from "./runtime/api/two_phase_commit_adapter.ts";
export { CollectionSource } from "./runtime/api/collection_source.ts";
export type { CollectionSplit } from "./runtime/api/collection_source.ts";
export { PrintSink } from "./runtime/api/print_sink.ts";
export type { PrintSinkOptions } from "./runtime/api/print_sink.ts";
export {
  LineSplitter,
  LineTooLongError,
  SOCKET_SOURCE_MAX_LINE_LENGTH,
  SOCKET_SOURCE_QUEUE_LINES,
  SocketSourceError,
  SocketTextSource,
} from "./runtime/api/socket_source.ts";
export type { SocketSplit, SocketTextSourceOptions } from "./runtime/api/socket_source.ts";
export { MAX_WATERMARK, MIN_WATERMARK, WatermarkStrategy } from "./runtime/time/watermark.ts";
export type {
  TimestampAssigner,
  WatermarkGenerator,
  WatermarkGeneratorContext,
  WatermarkGeneratorSupplier,
  WatermarkOutput,
  WatermarkStatus,
} from "./runtime/time/watermark.ts";
export {
  AbstractWindowedStream,
  AllWindowedStream,
  WindowedStream,
} from "./runtime/api/windowed_stream.ts";
export {
  JoinedEqualTo,
  JoinedStreams,
  JoinedWhere,
  JoinedWithWindow,
} from "./runtime/api/joined_streams.ts";
export type { FlatJoinFunction, JoinFunction } from "./runtime/api/joined_streams.ts";
export {
  CoGroupedEqualTo,
  CoGroupedStreams,
  CoGroupedWhere,
  CoGroupedWithWindow,
  CoGroupWindowFunction,
} from "./runtime/api/co_grouped_streams.ts";
export type { CoGroupFunction } from "./runtime/api/co_grouped_streams.ts";
export {
  TwoInputEqualTo,
  type TwoInputFirstKey,
  type TwoInputKeys,
  TwoInputStreams,
  TwoInputWhere,
  TwoInputWithWindow,
} from "./runtime/api/two_input_window.ts";
export type { TwoInputWindowSettings } from "./runtime/api/two_input_window.ts";
export { keyedTaggedUnion } from "./runtime/api/tagged_union.ts";
export { IntervalJoin, IntervalJoined } from "./runtime/api/interval_join.ts";
export type {
  IntervalJoinOperatorSpec,
  ProcessJoinContext,
  ProcessJoinFunction,
} from "./runtime/api/interval_join.ts";
export type { KeyedTaggedUnionOptions, TaggedUnion } from "./runtime/api/tagged_union.ts";
export type {
  WindowFunctionSpec,
  WindowOperatorSpec,
  WindowProcessSpec,
  WindowTransform,
} from "./runtime/api/windowed_stream.ts";
export type {
  KeyedStateStore,
  ProcessAllWindowFunction,
  ProcessWindowContext,
  ProcessWindowFunction,
} from "./runtime/api/window_functions.ts";
export { END_OF_TIME, GlobalWindow, TimeWindow } from "./runtime/time/windows/window.ts";
export type { Window } from "./runtime/time/windows/window.ts";
export {
  isMergingWindowAssigner,
  MergingWindowAssigner,
  WindowAssigner,
} from "./runtime/time/windows/window_assigner.ts";
export { TimeWindowAssigner } from "./runtime/time/windows/time_window_assigner.ts";
export type { TimeDomain } from "./runtime/time/windows/time_window_assigner.ts";
export type {
  MergeCallback,
  WindowAssignerContext,
} from "./runtime/time/windows/window_assigner.ts";
export {
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
} from "./runtime/time/windows/tumbling_windows.ts";
export {
  SlidingEventTimeWindows,
  SlidingProcessingTimeWindows,
} from "./runtime/time/windows/sliding_windows.ts";
export { CumulativeEventTimeWindows } from "./runtime/time/windows/cumulative_windows.ts";
export {
  DynamicEventTimeSessionWindows,
  DynamicProcessingTimeSessionWindows,
  EventTimeSessionWindows,
  ProcessingTimeSessionWindows,
  SessionWindowAssigner,
} from "./runtime/time/windows/session_windows.ts";
export type { SessionWindowTimeGapExtractor } from "./runtime/time/windows/session_windows.ts";
export { GlobalWindows } from "./runtime/time/windows/global_windows.ts";
export { isFire, isPurge, TriggerResult } from "./runtime/time/windows/trigger.ts";
export type {
  MergeableStateDescriptor,
  OnMergeContext,
  PartitionedStateStore,
  Trigger,
  TriggerContext,
} from "./runtime/time/windows/trigger.ts";
export {
  ContinuousEventTimeTrigger,
  CountTrigger,
  EventTimeTrigger,
  NeverTrigger,
  ProcessingTimeTrigger,
  PurgingTrigger,
} from "./runtime/time/windows/triggers.ts";
export type { Evictor, EvictorContext, TimestampedValue } from "./runtime/time/windows/evictor.ts";
export { CountEvictor, DeltaEvictor, TimeEvictor } from "./runtime/time/windows/evictors.ts";
export type { DeltaFunction } from "./runtime/time/windows/evictors.ts";
export { SystemClock, systemClock } from "./runtime/time/clock.ts";
export type { Clock } from "./runtime/time/clock.ts";
export { RestartStrategies, SuppressRestartsError } from "./runtime/cluster/restart_strategy.ts";
export type { RestartStrategyConfig } from "./runtime/cluster/restart_strategy.ts";
export type { FailoverStrategy } from "./runtime/api/restart_strategy_config.ts";
export {
  classifyFailure,
  InvalidConfigurationError,
  JobGraphMismatchError,
  JobModuleLoadError,
} from "./runtime/failure.ts";
export type {
  FailureClassification,
  JobModuleLoadErrorOptions,
  ThrowableType,
} from "./runtime/failure.ts";
export {
  CheckpointFailureThresholdError,
  ClusterRequestError,
  JobFailedError,
} from "./runtime/cluster/job_result.ts";
export { ResumeError } from "./runtime/cluster/local_executor.ts";
export { SavepointError } from "./runtime/cluster/savepoints.ts";
export { executionRole } from "./runtime/cluster/role.ts";
export type { ExecutionRole } from "./runtime/cluster/role.ts";

export type { JobExecutionResult, VertexMetrics } from "./runtime/cluster/job_result.ts";
export { InvalidJobGraphError } from "./runtime/graph/job_graph.ts";
export { assignToKeyGroup, DEFAULT_MAX_PARALLELISM, keyHash } from "./runtime/state/key_group.ts";
export type { Key } from "./runtime/state/key_group.ts";
export {
  DEAD_LETTER,
  DeserializationError,
  FileNotReadableError,
  FileSource,
} from "./connectors/file/file_source.ts";
export type { DeadLetter, FileSplit } from "./connectors/file/file_source.ts";
export { SequenceSource } from "./connectors/datagen/sequence_source.ts";
export type { SequenceSplit } from "./connectors/datagen/sequence_source.ts";
export { setLogLevel } from "./runtime/log.ts";
export type { LogLevel } from "./runtime/log.ts";
export type {
  ChainedOperator,
  JobEdge,
  JobGraph,
  JobVertex,
  OperatorOutput,
} from "./runtime/graph/job_graph.ts";
export { StreamGraph } from "./runtime/graph/stream_graph.ts";
export type {
  KeySelector,
  OperatorSpec,
  Partitioner,
  StreamEdge,
  StreamNode,
  TwoInputOperatorSpec,
} from "./runtime/graph/stream_graph.ts";
export type { FaultInjector, FaultPoint, FaultSite } from "./runtime/task/stream_task.ts";
export type { CoordinatorFaultPoint } from "./runtime/cluster/coordinator.ts";
export type { SyncWriter } from "./runtime/api/print_sink.ts";
export type {
  ExponentialDelayOptions,
  FailureRateOptions,
} from "./runtime/cluster/restart_strategy.ts";
export type {
  CheckpointKind,
  CheckpointStats,
  CompletedCheckpointStats,
} from "./runtime/checkpoint/pending.ts";
export type { CheckpointCounts } from "./runtime/checkpoint/tracker.ts";
export type { KeyPart } from "./runtime/state/key_group.ts";
export type { CheckpointFailureCode, CheckpointId } from "./runtime/checkpoint/types.ts";
export { StreamTableEnvironment } from "./runtime/table/table_environment.ts";
export type {
  FromDataStreamOptions,
  SchemaColumn,
  SchemaWatermark,
  ScriptOptions,
} from "./runtime/table/table_environment.ts";
export { Table } from "./runtime/table/table.ts";
export type { ResultKind, TableResult } from "./runtime/table/table.ts";
export { formatRow, shortString } from "./runtime/table/row.ts";
export type { Row, RowKind, SqlValue } from "./runtime/table/row.ts";
export { PlanningError } from "./runtime/table/changelog_mode.ts";
export type { ChangelogMode } from "./runtime/table/changelog_mode.ts";
export { SqlParseError } from "./runtime/table/parser.ts";
export type { SourcePosition } from "./runtime/table/parser.ts";
export type { Column, DataType, TypeFamily } from "./runtime/table/types.ts";
export { TableConnectorRegistry } from "./runtime/table/table_connectors.ts";
export type {
  ComputedColumn,
  ConnectorTable,
  TableConnector,
  TableSink,
} from "./runtime/table/table_connectors.ts";
export type { Expr, OrderItem, OverFrame, WatermarkDefinition } from "./runtime/table/sql_ast.ts";
export type { AggregateName } from "./runtime/table/aggregates.ts";
export {
  booleanOption,
  checkTableOptions,
  choiceOption,
  integerOption,
  numberOption,
  stringOption,
} from "./runtime/table/connector_options.ts";
export {
  formatDuration,
  parseDuration,
  TABLE_OPTIONS,
  TableConfig,
  TableConfigError,
} from "./runtime/table/table_config.ts";
export type {
  ResultMode,
  TableOptionDefinition,
  TableOptionEntry,
  TableOptionKey,
  TableOptionValues,
} from "./runtime/table/table_config.ts";
export { aggregateFunction, scalarFunction, tableFunction } from "./runtime/table/udf.ts";
export type {
  AggregateFunctionDefinition,
  AggregateFunctionOptions,
  ResultTypeSpec,
  ScalarFunctionDefinition,
  ScalarFunctionOptions,
  TableFunctionDefinition,
  TableFunctionOptions,
  UserDefinedFunction,
} from "./runtime/table/udf.ts";
export { formatTableResult } from "./runtime/table/statements.ts";
