/**
 * Instantiates a vertex's operator chain for one subtask and wires each
 * operator's output to the chained operators (direct calls, no
 * serialization) and to the record writers of its network edges.
 *
 * @module
 */

import type { JobGraph, JobVertex, OperatorOutput } from "../graph/job_graph.ts";
import type { OperatorEnvironment, Output, StreamOperator } from "./operators/operator.ts";
import type { RecordWriter } from "./record_writer.ts";
import { logger } from "../log.ts";
import type { WatermarkStatus } from "../time/watermark.ts";
import { SourceOperator } from "./operators/source_operator.ts";
import { TimestampsAndWatermarksOperator } from "./operators/timestamps_and_watermarks_operator.ts";
import { SimpleSinkOperator } from "./operators/sink_operators.ts";
import { SinkWriterOperator, subtaskSinkV2 } from "./operators/sink_writer_operator.ts";
import { WindowOperator } from "./operators/window_operator.ts";
import {
  CoFlatMapOperator,
  CoMapOperator,
  CoProcessOperator,
} from "./operators/co_process_operators.ts";
import { IntervalJoinOperator } from "./operators/interval_join_operator.ts";
import {
  BroadcastProcessOperator,
  KeyedBroadcastProcessOperator,
} from "./operators/broadcast_process_operators.ts";
import {
  AggregateOperator,
  FilterOperator,
  FlatMapOperator,
  KeyedProcessOperator,
  MapOperator,
  ProcessOperator,
  ReduceOperator,
} from "./operators/transform_operators.ts";

interface Target {
  collect(value: unknown, timestamp: number | undefined): void;
  watermark(watermark: number): void;
  status(status: WatermarkStatus): void;
}

const log = logger("task");

/**
 * Builds an {@linkcode Output} over main and side-output targets. Records of
 * a side output that nothing consumes are dropped, as in Flink, but never
 * silently: the first one of each tag logs a warning naming the operator.
 */
function makeOutput(main: Target[], side: Map<string, Target[]>, where: string): Output {
  const all = [...main, ...[...side.values()].flat()];
  const emitWatermark = (wm: number) => {
    for (const t of all) t.watermark(wm);
  };
  const emitWatermarkStatus = (status: WatermarkStatus) => {
    for (const t of all) t.status(status);
  };
  const warned = new Set<string>();
  const collectSide = (tagId: string, value: unknown, ts: number | undefined) => {
    const targets = side.get(tagId);
    if (targets === undefined) {
      if (!warned.has(tagId)) {
        warned.add(tagId);
        log.warn(
          `${where} emits to side output '${tagId}', which nothing consumes: its records are dropped ` +
            `(use getSideOutput(tag) to consume them)`,
        );
      }
      return;
    }
    for (const t of targets) t.collect(value, ts);
  };
  if (main.length === 1) {
    const only = main[0]!;
    return { collect: only.collect, collectSide, emitWatermark, emitWatermarkStatus }; // one call less per record
  }
  return {
    collect(value, ts) {
      for (const t of main) t.collect(value, ts);
    },
    collectSide,
    emitWatermark,
    emitWatermarkStatus,
  };
}

/** The operators of one subtask, head first, in topological order. */
export class OperatorChain {
  readonly operators: StreamOperator[];

  /**
   * @param writers record writers by edge index, for this vertex's output edges.
   * @param autoWatermarkIntervalMs period of periodic watermarks (sources and
   *   `assignTimestampsAndWatermarks`), in ms.
   */
  constructor(options: {
    graph: JobGraph;
    vertex: JobVertex;
    env: OperatorEnvironment;
    writers: Map<number, RecordWriter>;
    autoWatermarkIntervalMs: number;
  }) {
    const { vertex, env, writers } = options;
    const ops: StreamOperator[] = new Array(vertex.operators.length);
    // Children have higher indices than parents: build from the end.
    for (let i = vertex.operators.length - 1; i >= 0; i--) {
      const spec = vertex.operators[i]!;
      const main: Target[] = [];
      const side = new Map<string, Target[]>();
      for (const out of spec.outputs) {
        const target = this.#target(out, ops, writers);
        if (out.sideOutput === undefined) main.push(target);
        else {(side.get(out.sideOutput) ?? side.set(out.sideOutput, []).get(out.sideOutput)!).push(
            target,
          );}
      }
      const output = makeOutput(
        main,
        side,
        `Operator '${spec.name}' (uid ${spec.uid}) subtask ${env.subtaskIndex} of job ${env.jobId}`,
      );
      const common = {
        uid: spec.uid,
        name: spec.name,
        env,
        output,
        keySelector: spec.keySelector,
      };
      const s = spec.spec;
      switch (s.kind) {
        case "source":
          ops[i] = new SourceOperator({
            uid: spec.uid,
            name: spec.name,
            source: s.source,
            watermarkStrategy: s.watermarkStrategy,
            env,
            output,
            autoWatermarkIntervalMs: options.autoWatermarkIntervalMs,
          });
          break;
        case "map":
          ops[i] = new MapOperator({ ...common, fn: s.fn });
          break;
        case "filter":
          ops[i] = new FilterOperator({ ...common, fn: s.fn });
          break;
        case "flatMap":
          ops[i] = new FlatMapOperator({ ...common, fn: s.fn });
          break;
        case "process":
          ops[i] = new ProcessOperator({ ...common, fn: s.fn });
          break;
        case "keyedProcess":
          ops[i] = new KeyedProcessOperator({ ...common, fn: s.fn });
          break;
        case "reduce":
          ops[i] = new ReduceOperator({ ...common, fn: s.fn });
          break;
        case "aggregate":
          ops[i] = new AggregateOperator({ ...common, fn: s.fn });
          break;
        case "window":
          ops[i] = new WindowOperator({ ...common, spec: s.window });
          break;
        case "coMap":
          ops[i] = new CoMapOperator({ ...common, keySelector2: spec.keySelector2, fn: s.fn });
          break;
        case "coFlatMap":
          ops[i] = new CoFlatMapOperator({ ...common, keySelector2: spec.keySelector2, fn: s.fn });
          break;
        case "coProcess":
        case "keyedCoProcess":
          ops[i] = new CoProcessOperator({ ...common, keySelector2: spec.keySelector2, fn: s.fn });
          break;
        case "broadcastProcess":
          ops[i] = new BroadcastProcessOperator({
            ...common,
            keySelector2: undefined,
            fn: s.fn,
            descriptors: s.descriptors,
          });
          break;
        case "intervalJoin":
          ops[i] = new IntervalJoinOperator({
            ...common,
            keySelector2: spec.keySelector2,
            spec: s,
          });
          break;
        case "keyedBroadcastProcess":
          ops[i] = new KeyedBroadcastProcessOperator({
            ...common,
            keySelector2: undefined,
            fn: s.fn,
            descriptors: s.descriptors,
          });
          break;
        case "timestampsAndWatermarks":
          ops[i] = new TimestampsAndWatermarksOperator({
            ...common,
            fn: s.fn,
            autoWatermarkIntervalMs: options.autoWatermarkIntervalMs,
          });
          break;
        case "sink":
          ops[i] = s.sink.kind === "simple"
            ? new SimpleSinkOperator({ ...common, fn: s.sink })
            : new SinkWriterOperator({
              uid: spec.uid,
              name: spec.name,
              sink: subtaskSinkV2(s.sink),
              env,
            });
          break;
      }
    }
    this.operators = ops;
  }

  #target(out: OperatorOutput, ops: StreamOperator[], writers: Map<number, RecordWriter>): Target {
    if (out.kind === "chained") {
      const op = ops[out.operator]!;
      return {
        collect: (v, ts) => op.processElement(v, ts),
        watermark: (wm) => op.processWatermark(wm),
        status: (status) => op.processWatermarkStatus?.(status),
      };
    }
    const writer = writers.get(out.edge)!;
    return {
      collect: (v, ts) => writer.emit(v, ts),
      watermark: (wm) => writer.broadcastEvent({ k: "wm", wm }),
      status: (s) => writer.broadcastEvent({ k: "status", s }),
    };
  }

  /** The head operator. */
  get head(): StreamOperator {
    return this.operators[0]!;
  }

  /** Awaits every operator's queued asynchronous work, head first. @throws its first error. */
  async quiesce(): Promise<void> {
    for (const op of this.operators) await op.quiesce();
  }

  /**
   * The counters of operators that keep their own, by uid
   * (`StreamOperator.metrics`); an operator reporting no counter is left out.
   */
  metrics(): Record<string, Readonly<Record<string, number>>> {
    return Object.fromEntries(
      this.operators.flatMap((op) => {
        const counters = op.metrics?.();
        return counters === undefined || Object.keys(counters).length === 0
          ? []
          : [[op.uid, counters]];
      }),
    );
  }

  /** Closes every operator, even after one throws. @throws the first error. */
  async close(): Promise<void> {
    let first: unknown;
    for (const op of this.operators) {
      try {
        await op.close();
      } catch (error) {
        first ??= error;
      }
    }
    if (first !== undefined) throw first;
  }
}
