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
import type {
  CalcNode,
  CatalogTableInfo,
  PlannerContext,
  Relation,
  ScanNode,
  ScanWatermark,
  WatermarkAssignerNode,
} from "./plan.ts";
import { type CompiledExpr, compileExpr } from "./expressions.ts";
import { materialized } from "./plan_projection.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, TableRef, WatermarkDefinition } from "./sql_ast.ts";
import type { Column } from "./types.ts";

/**
 * Plans a table or view named in FROM (see the module docs); its alias and
 * name qualify its columns.
 * @throws {PlanningError} for an unknown table, a computed column that
 *   does not compile, or a bad watermark.
 */
export function planTable(
  ref: Extract<TableRef, { k: "table" }>,
  context: PlannerContext,
): Relation {
  const table = context.lookup(ref.name);
  if (table === undefined) {
    const names = context.names?.();
    const known = names === undefined
      ? ""
      : names.length === 0
      ? " (the catalog has no tables or views; CREATE TABLE or createTemporaryView first)"
      : ` (tables and views: ${names.join(", ")})`;
    throw new PlanningError(`Object '${ref.name}' not found${known}${context.locate(ref.name)}`);
  }
  const qualifiers = ref.alias === null ? [ref.name] : [ref.alias, ref.name];
  if (table.plan !== undefined) {
    return {
      node: table.plan,
      qualifiers: table.plan.columns.map(() => qualifiers),
      window: null,
    };
  }
  if (table.computed !== undefined && table.computed.length > 0) {
    return planComputed(ref.name, table, qualifiers, context);
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
 * A table with computed columns: the scan of its physical columns, a Calc
 * giving the declared schema (physical columns and `name AS expr` ones in
 * their order), then, for a WATERMARK, a WatermarkAssigner on it (Flink's
 * plan of a computed rowtime).
 */
function planComputed(
  name: string,
  table: CatalogTableInfo,
  qualifiers: readonly string[],
  context: PlannerContext,
): Relation {
  const physical = table.columns;
  const scan: ScanNode = {
    op: "TableSourceScan",
    table: name,
    columns: physical,
    mode: table.mode ?? "append",
  };
  const scope = {
    columns: physical,
    qualifiers: physical.map(() => qualifiers),
    inputName: `the physical columns of ${name}`,
    locate: context.locate,
    aggregatesAllowed: false,
  };
  const computed = table.computed ?? [];
  const total = physical.length + computed.length;
  const projections: CompiledExpr[] = [];
  const columns: Column[] = [];
  let next = 0;
  for (let position = 0; position < total; position++) {
    const virtual = computed.find((c) => c.position === position);
    if (virtual === undefined) {
      const i = next++;
      const c = physical[i]!;
      projections.push({ evaluate: (f) => f[i] ?? null, type: c.type, text: c.name });
      columns.push(c);
      continue;
    }
    const compiled = compileExpr(virtual.expr, scope);
    projections.push(compiled);
    columns.push({ name: virtual.name, type: materialized(compiled.type) });
  }
  const calc: CalcNode = {
    op: "Calc",
    input: scan,
    projections,
    filter: null,
    columns,
    mode: scan.mode,
  };
  if (table.watermark == null) {
    return { node: calc, qualifiers: columns.map(() => qualifiers), window: null };
  }
  const watermark: ScanWatermark = {
    ...scanWatermark(name, columns, table.watermark, context),
    emit: table.watermarkEmit ?? "on-periodic",
  };
  const marked = columns.map((c, i) =>
    i === watermark.rowtime
      ? { name: c.name, type: { ...c.type, timeAttribute: "rowtime" as const } }
      : c
  );
  const node: WatermarkAssignerNode = {
    op: "WatermarkAssigner",
    input: calc,
    table: name,
    watermark,
    columns: marked,
    mode: calc.mode,
  };
  return { node, qualifiers: marked.map(() => qualifiers), window: null };
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
