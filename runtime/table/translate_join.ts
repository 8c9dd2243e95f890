/**
 * Translation of joins (see `translate.ts` for the table of every node):
 *
 * | plan node | DataStream operator | uid |
 * |---|---|---|
 * | `Join` | `left.connect(right).keyBy(equi-keys).process(StreamingJoinFunction)` | `<prefix>-join-<n>` |
 * | `IntervalJoin` (inner) | `left.keyBy(k).intervalJoin(right.keyBy(k)).between(...)` (the runtime's interval join on the rows' rowtimes) | `<prefix>-interval-join-<n>` |
 * | `IntervalJoin` (outer) | `connect(...).keyBy(keys).process(OuterIntervalJoinFunction)` (`interval_join.ts`, on the rowtime columns) | `<prefix>-interval-join-<n>` |
 * | `WindowJoin` | `connect(...).keyBy(keys, window_start, window_end).process(WindowJoinFunction)` | `<prefix>-window-join-<n>` |
 *
 * The interval join runs on the records' timestamps, which are the rowtimes
 * of the scans below it (a plain column reference keeps them; the planner
 * refuses an interval join on a computed time). Its state is dropped as
 * the watermark passes, and late rows are counted in its
 * `numLateRecordsDropped`.
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { Collector } from "../api/functions.ts";
import type { ProcessJoinContext } from "../api/interval_join.ts";
import { SuppressRestartsError } from "../failure.ts";
import type { CompiledExpr } from "./expressions.ts";
import { describeNode } from "./plan.ts";
import type { IntervalJoinNode, JoinNode, WindowJoinNode } from "./plan_join.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { joinKeyOf, type JoinShape, StreamingJoinFunction } from "./stream_join.ts";
import { WindowJoinFunction } from "./window_join.ts";
import { OuterIntervalJoinFunction } from "./interval_join.ts";

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
  if (node.joinType !== "InnerJoin") {
    return left.connect(right)
      .keyBy(joinKeyOf(node.leftKeys), joinKeyOf(node.rightKeys))
      .process(
        new OuterIntervalJoinFunction({
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
  const filter = node.filter;
  const leftKey = joinKeyOf(node.leftKeys);
  // l.rt - r.rt in [lower, upper]  <=>  r.rt in [l.rt - upper, l.rt - lower]
  return left.keyBy(leftKey)
    .intervalJoin(right.keyBy(joinKeyOf(node.rightKeys)))
    .between(-node.upper, -node.lower)
    .process({
      processElement(l: Row, r: Row, _ctx: ProcessJoinContext, out: Collector<Row>): void {
        if ((JSON.parse(leftKey(l)) as SqlValue[]).includes(null)) return;
        const fields = [...l.fields, ...r.fields];
        try {
          if (filter !== null && filter.evaluate(fields) !== true) return;
        } catch (error) {
          throw new SuppressRestartsError(
            `${name} failed on ${formatRow({ kind: "INSERT", fields })}: ${
              error instanceof Error ? error.message : String(error)
            }`,
            { cause: error },
          );
        }
        out.collect({ kind: "INSERT", fields });
      },
    })
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
