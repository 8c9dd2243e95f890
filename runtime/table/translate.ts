/**
 * Turns a plan (`plan.ts`) into DataStream operators, as Flink's
 * `ExecNode`s translate into transformations:
 *
 * | plan node | DataStream operator | uid |
 * |---|---|---|
 * | `TableSourceScan` | the table's source stream | the source's own |
 * | `Calc` | `flatMap` (stateless) | `<prefix>-calc-<n>` |
 * | `GroupAggregate` | `keyBy(JSON of the keys).process(GroupAggregateFunction)` | `<prefix>-group-aggregate-<n>` |
 * | `Join`, `IntervalJoin`, `WindowJoin` | see `translate_join.ts` | `<prefix>-join-<n>`... |
 * | `WindowTableFunction`, `WindowAggregate`, a scan's watermarks | see `translate_window.ts` | `<prefix>-window-aggregate-<n>`... |
 * | `Rank`, `Deduplicate`, `WindowRank`, `OverAggregate` | see `translate_over.ts` | `<prefix>-rank-<n>`... |
 *
 * Uids are numbered from the sources up, under the prefix the table
 * environment gives each query (`sql-1`, `sql-2`...), so the same program
 * rebuilds the same uids and restores its state after a restart.
 *
 * An expression that fails on a row (a CAST of a bad value, an integer
 * division by zero) or a changelog a GroupAggregate cannot apply ends the
 * job at once with a `SuppressRestartsError` naming the operator and the
 * row: the same row would fail again after any restart.
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { Collector } from "../api/functions.ts";
import { GroupAggregateFunction, groupKeyOf } from "./group_aggregate.ts";
import { describeNode, type PlanNode } from "./plan.ts";
import type { Column } from "./types.ts";
import { formatRow, type Row } from "./row.ts";
import { SuppressRestartsError } from "../failure.ts";
import { translateIntervalJoin, translateJoin, translateWindowJoin } from "./translate_join.ts";
import { keepInputParallelism } from "./translate_parallelism.ts";
import {
  translateWindowAggregate,
  translateWindowTableFunction,
  withScanWatermarks,
} from "./translate_window.ts";
import { overFamilyFunction, overFamilyUidName } from "./translate_over.ts";
import { translateCorrelate } from "./translate_lateral.ts";

const errorText = (error: unknown) => error instanceof Error ? error.message : String(error);

/**
 * How the translation reaches a scan's source: `columns` are the scan's
 * columns, a subset of a connector table's after projection push-down
 * (`projection_pushdown.ts`).
 */
export type ScanSource = (table: string, columns?: readonly Column[]) => DataStream<Row>;

/** Options of {@linkcode translatePlan}. */
export interface TranslateOptions {
  /**
   * Idle state retention of the stateful operators in ms (`table.exec.state.ttl`);
   * 0 (the default) keeps state forever.
   */
  readonly stateTtlMs?: number;
  /**
   * After how many ms without records a scan's split is marked idle, so
   * the watermark advances without it (`table.exec.source.idle-timeout`);
   * 0 (the default) never.
   */
  readonly sourceIdleTimeoutMs?: number;
}

/**
 * Translates `root` into a stream of changes.
 * @param root the plan.
 * @param scan gives the stream of a scanned table.
 * @param uidPrefix the query's uid prefix.
 * @param options idle state retention.
 * @returns the stream of the root's changes.
 */
export function translatePlan(
  root: PlanNode,
  scan: ScanSource,
  uidPrefix: string,
  options: TranslateOptions = {},
): DataStream<Row> {
  const stateTtlMs = options.stateTtlMs ?? 0;
  let n = 0;
  const walk = (node: PlanNode): DataStream<Row> => {
    switch (node.op) {
      case "WatermarkAssigner":
        return withScanWatermarks(
          walk(node.input),
          node,
          `${uidPrefix}-watermarks-${++n}`,
          options.sourceIdleTimeoutMs ?? 0,
        );
      case "TableSourceScan": {
        const source = scan(node.table, node.columns);
        if (node.watermark === undefined) return source;
        return withScanWatermarks(
          source,
          node,
          `${uidPrefix}-watermarks-${++n}`,
          options.sourceIdleTimeoutMs ?? 0,
        );
      }
      case "Calc": {
        const input = walk(node.input);
        const { projections, filter } = node;
        const name = describeNode(node);
        return keepInputParallelism(
          input,
          input.flatMap((row: Row, out: Collector<Row>) => {
            let fields;
            try {
              if (filter !== null && filter.evaluate(row.fields) !== true) return;
              fields = projections.map((p) => p.evaluate(row.fields));
            } catch (error) {
              throw new SuppressRestartsError(
                `${name} failed on ${formatRow(row)}: ${errorText(error)}`,
                {
                  cause: error,
                },
              );
            }
            out.collect({ kind: row.kind, fields });
          }),
        ).uid(`${uidPrefix}-calc-${++n}`).name(describeNode(node));
      }
      case "GroupAggregate": {
        const input = walk(node.input);
        return input.keyBy(groupKeyOf(node.keys))
          .process(
            new GroupAggregateFunction(
              node.keys,
              node.aggregates,
              node.generateUpdateBefore,
              stateTtlMs,
            ),
          )
          .uid(`${uidPrefix}-group-aggregate-${++n}`)
          .name(describeNode(node));
      }
      case "Rank":
      case "Deduplicate":
      case "WindowRank":
      case "OverAggregate": {
        const input = walk(node.input);
        return input.keyBy(groupKeyOf(node.partitionKeys))
          .process(overFamilyFunction(node, stateTtlMs))
          .uid(`${uidPrefix}-${overFamilyUidName(node)}-${++n}`)
          .name(describeNode(node));
      }
      case "Join":
        return translateJoin(
          walk(node.left),
          walk(node.right),
          node,
          `${uidPrefix}-join-${++n}`,
          stateTtlMs,
        );
      case "IntervalJoin":
        return translateIntervalJoin(
          walk(node.left),
          walk(node.right),
          node,
          `${uidPrefix}-interval-join-${++n}`,
        );
      case "WindowJoin":
        return translateWindowJoin(
          walk(node.left),
          walk(node.right),
          node,
          `${uidPrefix}-window-join-${++n}`,
        );
      case "WindowTableFunction":
        return translateWindowTableFunction(
          walk(node.input),
          node,
          `${uidPrefix}-window-tvf-${++n}`,
        );
      case "WindowAggregate":
        return translateWindowAggregate(
          walk(node.input),
          node,
          `${uidPrefix}-window-aggregate-${++n}`,
        );
      case "Correlate":
        return translateCorrelate(walk(node.input), node, `${uidPrefix}-correlate-${++n}`);
    }
  };
  return walk(root);
}
