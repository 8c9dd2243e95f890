/**
 * Plans `ORDER BY ... LIMIT n`, `LIMIT n` and `ORDER BY` alone (Flink's
 * `SortLimit`, `Limit` and `TemporalSort`, from its rules
 * `StreamPhysicalSortLimitRule`, `StreamPhysicalLimitRule` and
 * `StreamPhysicalTemporalSortRule`).
 *
 * {@linkcode planSortLimit} plans `ORDER BY x [DESC] LIMIT n` as Flink's
 * `SortLimit` and `LIMIT n` alone as its `Limit`: a `Rank` without
 * PARTITION BY (one key, so one subtask) keeping ranks `1..n`, without the
 * rank number (a {@linkcode RankNode} of `plan_rank.ts`, run by `rank.ts`).
 * `LIMIT n` alone over an append-only input keeps the first `n` rows to
 * arrive and is append-only; `ORDER BY ... LIMIT` retracts a row when a
 * better one comes. `ORDER BY` without LIMIT is Flink's `TemporalSort`: its
 * first key must be a rowtime attribute ascending; rows wait for the
 * watermark and leave in that order, append-only (planned as an
 * OverAggregate without calls, `over_aggregate.ts`).
 *
 * ## Simplifications
 *
 * - ORDER BY names columns of the SELECT list.
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import type { PlannerContext, Relation } from "./plan.ts";
import type { OverAggregateNode } from "./plan_over.ts";
import { orderItemText, type RankNode } from "./plan_rank.ts";
import type { SortKey } from "./rank.ts";
import type { SelectQuery } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";

/**
 * Plans `... ORDER BY ... LIMIT n` and `... LIMIT n` (see the module docs).
 *
 * @param query the query with its ORDER BY and LIMIT.
 * @param context the catalog.
 * @param planSelect plans a SELECT (here the query without ORDER BY and LIMIT).
 * @returns the relation of the limited query.
 * @throws {PlanningError} for ORDER BY without LIMIT not led by a rowtime
 *   attribute ascending, `LIMIT 0`, or an ORDER BY item that is not a
 *   column of the SELECT list.
 */
export function planSortLimit(
  query: SelectQuery,
  context: PlannerContext,
  planSelect: (query: SelectQuery) => Relation,
): Relation {
  if (query.limit !== null && (!Number.isSafeInteger(query.limit) || query.limit < 1)) {
    throw new PlanningError(
      `LIMIT must be an integer >= 1: current value is ${query.limit}${context.locate("LIMIT")}`,
    );
  }
  const rel = planSelect({ ...query, orderBy: [], limit: null });
  const input = rel.node;
  const sortKeys = query.orderBy.map((o) => {
    const text = exprText(o.expr);
    let index = o.expr.k === "column"
      ? input.columns.findIndex((c) => c.name === (o.expr as { name: string }).name)
      : -1;
    if (index === -1) {
      index = query.items.findIndex((i) => i.k === "expr" && exprText(i.expr) === text);
      if (index !== -1 && query.items.some((i) => i.k === "star")) index = -1;
    }
    if (index === -1) {
      throw new PlanningError(
        `ORDER BY ${text} must name a column of the SELECT list (columns: ${
          input.columns.map((c) => c.name).join(", ")
        })${context.locate("ORDER")}`,
      );
    }
    return { index, descending: o.descending };
  });
  if (query.limit === null) return temporalSort(query, rel, sortKeys, context);
  const node: RankNode = {
    op: "Rank",
    input,
    partitionKeys: [],
    spec: {
      sortKeys,
      rankStart: 1,
      rankEnd: query.limit,
      outputRankNumber: false,
      appendOnlyInput: input.mode === "append",
      generateUpdateBefore: true,
    },
    orderText: query.orderBy.map(orderItemText).join(", "),
    columns: input.columns,
    mode: sortKeys.length === 0 && input.mode === "append" ? "append" : "retract",
    display: sortKeys.length === 0 ? "Limit" : "SortLimit",
  };
  return { node, qualifiers: input.columns.map(() => []), window: null };
}

/**
 * `ORDER BY rowtime [, more] ` without LIMIT: Flink's `TemporalSort`, an
 * OverAggregate without calls (rows wait for the watermark, then leave in
 * rowtime order, rows of one rowtime sorted by the further keys).
 * @throws {PlanningError} unless the first key is a rowtime attribute
 *   ascending over an append-only input.
 */
function temporalSort(
  query: SelectQuery,
  rel: Relation,
  sortKeys: readonly SortKey[],
  context: PlannerContext,
): Relation {
  const input = rel.node;
  const first = sortKeys[0]!;
  const column = input.columns[first.index]!;
  if (column.type.timeAttribute !== "rowtime" || first.descending || input.mode !== "append") {
    throw new PlanningError(
      `ORDER BY without LIMIT must sort by a rowtime attribute ascending first, over an append-only input (Flink's temporal sort), got ${
        query.orderBy.map(orderItemText).join(", ")
      }${input.mode === "append" ? "" : " over an updating input"}; add LIMIT n for a Top-N${
        context.locate("ORDER")
      }`,
    );
  }
  const node: OverAggregateNode = {
    op: "OverAggregate",
    input,
    partitionKeys: [],
    spec: {
      rowtimeIndex: first.index,
      rowtimeName: column.name,
      frame: { unit: "ROWS", preceding: null },
      calls: [],
      peerOrder: sortKeys.slice(1),
    },
    windowText: query.orderBy.map(orderItemText).join(", "),
    updating: false,
    display: "TemporalSort",
    columns: input.columns,
    mode: "append",
  };
  return { node, qualifiers: input.columns.map(() => []), window: null };
}
