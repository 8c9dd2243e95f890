/**
 * Plans `SELECT DISTINCT` as Flink does: a `GroupAggregate` keyed by every
 * output column, with no aggregate calls (Calcite's
 * `AggregateRemoveRule`/`SqlToRelConverter` turn DISTINCT into
 * `GROUP BY` all columns).
 *
 * The GroupAggregate emits a row's `+I` when its first copy arrives and
 * its `-D` when its last copy is retracted, nothing in between. Over an
 * append-only input nothing is ever retracted, so the result is append-only
 * too (one `+I` per distinct row; Weir derives `append` there, where Flink
 * derives an updating mode); over an updating input it is `retract`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript } from "./parser.ts";
 * import { explainPlan, planQuery } from "./plan.ts";
 * import { TYPES } from "./types.ts";
 *
 * const [statement] = parseScript("SELECT DISTINCT `user` FROM clicks");
 * if (statement?.k !== "select") throw new Error("a SELECT");
 * const plan = planQuery(statement.query, {
 *   lookup: () => ({ columns: [{ name: "user", type: TYPES.STRING }, { name: "url", type: TYPES.STRING }] }),
 *   locate: () => "",
 * });
 * assert.equal(plan.mode, "append");
 * assert.match(explainPlan(plan), /GroupAggregate\(groupBy=\[user\], select=\[user\]/);
 * ```
 *
 * @module
 */

import type { GroupAggregateNode, Relation } from "./plan.ts";
import { materialized } from "./plan.ts";

/**
 * The relation of `SELECT DISTINCT ...` given the relation of the same
 * SELECT without DISTINCT.
 * @returns a GroupAggregate over every column of `relation`, with no aggregates.
 */
export function planDistinct(relation: Relation): Relation {
  const input = relation.node;
  const node: GroupAggregateNode = {
    op: "GroupAggregate",
    input,
    keys: input.columns.map((c, i) => ({
      evaluate: (f) => f[i] ?? null,
      type: c.type,
      text: c.name,
    })),
    aggregates: [],
    columns: input.columns.map((c) => ({ name: c.name, type: materialized(c.type) })),
    mode: input.mode === "append" ? "append" : "retract",
    generateUpdateBefore: true,
  };
  return { node, qualifiers: node.columns.map(() => []), window: null };
}
