/**
 * Translation of joins (see `translate.ts` for the table of every node):
 *
 * | plan node | DataStream operator | uid |
 * |---|---|---|
 * | `Join` | `left.connect(right).keyBy(equi-keys).process(StreamingJoinFunction)` | `<prefix>-join-<n>` |
 * | `IntervalJoin` | `connect(...).keyBy(keys).process(RowTimeIntervalJoinFunction)` (`interval_join.ts`, on the rowtime columns) | `<prefix>-interval-join-<n>` |
 * | `WindowJoin` | `connect(...).keyBy(keys, window_start, window_end).process(WindowJoinFunction)` | `<prefix>-window-join-<n>` |
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { CompiledExpr } from "./expressions.ts";
import { describeNode } from "./plan.ts";
import type { IntervalJoinNode, JoinNode, WindowJoinNode } from "./plan_join.ts";
import type { Row } from "./row.ts";
import { joinKeyOf, type JoinShape, StreamingJoinFunction } from "./stream_join.ts";
import { WindowJoinFunction } from "./window_join.ts";
import { RowTimeIntervalJoinFunction } from "./interval_join.ts";

function shapeOf(node: JoinNode | IntervalJoinNode | WindowJoinNode): JoinShape {
  const filter = node.filter;
  return {
    joinType: node.joinType,
    filter: filter === null ? null : (fields) => filter.evaluate(fields),
    leftArity: node.left.columns.length,
    rightArity: node.right.columns.length,
  };
}

/** A regular join with retraction. */
export function translateJoin(
  left: DataStream<Row>,
  right: DataStream<Row>,
  node: JoinNode,
  uid: string,
  stateTtlMs = 0,
): DataStream<Row> {
  const name = describeNode(node);
  return left.connect(right)
    .keyBy(joinKeyOf(node.leftKeys), joinKeyOf(node.rightKeys))
    .process(new StreamingJoinFunction(shapeOf(node), name, stateTtlMs))
    .uid(uid)
    .name(name);
}

/** An event-time interval join (append-only). */
export function translateIntervalJoin(
  left: DataStream<Row>,
  right: DataStream<Row>,
  node: IntervalJoinNode,
  uid: string,
): DataStream<Row> {
  const name = describeNode(node);
  return left.connect(right)
    .keyBy(joinKeyOf(node.leftKeys), joinKeyOf(node.rightKeys))
    .process(
      new RowTimeIntervalJoinFunction({
        ...shapeOf(node),
        leftTime: node.leftTime,
        rightTime: node.rightTime,
        lower: node.lower,
        upper: node.upper,
      }, name),
    )
    .uid(uid)
    .name(name);
}

function windowKeyOf(keys: readonly CompiledExpr[], start: number, end: number) {
  return (row: Row) =>
    JSON.stringify([
      ...keys.map((k) => k.evaluate(row.fields)),
      row.fields[start],
      row.fields[end],
    ]);
}

/** A window join (append-only, at each window's end). */
export function translateWindowJoin(
  left: DataStream<Row>,
  right: DataStream<Row>,
  node: WindowJoinNode,
  uid: string,
): DataStream<Row> {
  const name = describeNode(node);
  const lw = node.leftWindow;
  const rw = node.rightWindow;
  return left.connect(right)
    .keyBy(
      windowKeyOf(node.leftKeys, lw.start, lw.end),
      windowKeyOf(node.rightKeys, rw.start, rw.end),
    )
    .process(
      new WindowJoinFunction(
        { ...shapeOf(node), leftWindowEnd: lw.end, rightWindowEnd: rw.end },
        name,
      ),
    )
    .uid(uid)
    .name(name);
}
