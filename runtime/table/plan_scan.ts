/**
 * Planning of a FROM item that names a table or view: a view's plan is
 * read in place; a table becomes a `TableSourceScan`, and its `WATERMARK
 * FOR c AS c - INTERVAL ...` makes `c` a rowtime attribute (its type
 * marked `timeAttribute: "rowtime"`) with the scan's event time
 * ({@linkcode ScanWatermark}: the highest rowtime seen minus the delay).
 *
 * The watermark expression is `c`, `c - INTERVAL ...` or `c + INTERVAL
 * ...` (a simplification: Flink takes any expression).
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import type { PlannerContext, Relation, ScanNode, ScanWatermark } from "./plan.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, TableRef, WatermarkDefinition } from "./sql_ast.ts";
import type { Column } from "./types.ts";

/** Plans a table or view of the catalog by name (its alias and name qualify its columns). */
/** Plans a table or view named in FROM (see the module docs). @throws {PlanningError} for an unknown table or a bad watermark. */
export function planTable(
  ref: Extract<TableRef, { k: "table" }>,
  context: PlannerContext,
): Relation {
  const table = context.lookup(ref.name);
  if (table === undefined) {
    throw new PlanningError(`Object '${ref.name}' not found${context.locate(ref.name)}`);
  }
  const qualifiers = ref.alias === null ? [ref.name] : [ref.alias, ref.name];
  if (table.plan !== undefined) {
    return {
      node: table.plan,
      qualifiers: table.plan.columns.map(() => qualifiers),
      window: null,
    };
  }
  let columns = table.columns;
  let watermark: ScanWatermark | undefined;
  if (table.watermark != null) {
    watermark = {
      ...scanWatermark(ref.name, table.columns, table.watermark, context),
      emit: table.watermarkEmit ?? "on-periodic",
    };
    const rowtime = watermark.rowtime;
    columns = columns.map((c, i) =>
      i === rowtime ? { name: c.name, type: { ...c.type, timeAttribute: "rowtime" } } : c
    );
  }
  const scan: ScanNode = {
    op: "TableSourceScan",
    table: ref.name,
    columns,
    mode: table.mode ?? "append",
    ...(watermark === undefined ? {} : { watermark }),
  };
  return { node: scan, qualifiers: columns.map(() => qualifiers), window: null };
}

/**
 * The scan's event time from `WATERMARK FOR c AS expr`: `expr` is `c`,
 * `c - INTERVAL ...` or `c + INTERVAL ...` (a simplification: Flink takes
 * any expression).
 */
function scanWatermark(
  table: string,
  columns: readonly Column[],
  watermark: WatermarkDefinition,
  context: PlannerContext,
): Omit<ScanWatermark, "emit"> {
  const rowtime = columns.findIndex((c) => c.name === watermark.column);
  if (rowtime === -1) {
    throw new PlanningError(
      `WATERMARK FOR ${watermark.column} of table ${table}: no such column (columns: ${
        columns.map((c) => c.name).join(", ")
      })${context.locate("WATERMARK")}`,
    );
  }
  const type = columns[rowtime]!.type;
  if (type.family !== "TIMESTAMP" && type.family !== "BIGINT") {
    throw new PlanningError(
      `WATERMARK FOR ${watermark.column} of table ${table} needs a TIMESTAMP column (or BIGINT epoch milliseconds), got ${type.name}${
        context.locate("WATERMARK")
      }`,
    );
  }
  const e = watermark.expr;
  const text = exprText(e);
  const isRowtime = (x: Expr) => x.k === "column" && x.name === watermark.column;
  let delay: number | null = null;
  if (isRowtime(e)) delay = 0;
  else if (
    e.k === "binary" && (e.op === "-" || e.op === "+") && isRowtime(e.left) &&
    e.right.k === "interval"
  ) {
    delay = e.op === "-" ? e.right.millis : -e.right.millis;
  }
  if (delay === null || delay < 0) {
    throw new PlanningError(
      `WATERMARK FOR ${watermark.column} AS ${text} of table ${table}: the watermark must be ${watermark.column} or ${watermark.column} - INTERVAL '...' <unit> (a bounded delay)${
        context.locate("WATERMARK")
      }`,
    );
  }
  return { rowtime, delayMillis: delay, text };
}
