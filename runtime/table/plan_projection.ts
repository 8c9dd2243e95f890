/**
 * Column bookkeeping of the planner: which input column a compiled plain
 * reference reads ({@linkcode columnSource}), how a SELECT list becomes
 * projections with output names (`project`, {@linkcode uniqueNames}),
 * where window columns are after a projection (`keptWindow`), conditions
 * checked to be BOOLEAN, and time attributes materialized by computation.
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import type { PlannerContext } from "./plan.ts";
import type { WindowProperties } from "./plan_window.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, SelectQuery } from "./sql_ast.ts";
import type { Column, DataType } from "./types.ts";

/** The name a plain column reference gives its output column (`t.c` gives `c`), or `null`. */
export function columnName(e: Expr): string | null {
  return e.k === "column" ? e.name : null;
}

/** Where the input column a GROUP BY column key reads is, or `null`. */
export function sourceOf(keys: readonly CompiledExpr[], e: Expr): number | null {
  const key = keys.find((k) => k.text === exprText(e));
  return key === undefined ? null : columnSource(key);
}

const POSITIONS: readonly number[] = Array.from({ length: 4096 }, (_, i) => i);

/**
 * The input position a compiled plain column reference reads (found by
 * evaluating it over the positions themselves), or `null`.
 */
export function columnSource(expr: CompiledExpr): number | null {
  try {
    const v = expr.evaluate(POSITIONS);
    return typeof v === "number" && Number.isInteger(v) && POSITIONS[v] === v ? v : null;
  } catch {
    return null;
  }
}

/** The window properties of an input, as positions after a projection reading `sources`. */
export function keptWindow(
  window: WindowProperties | null,
  sources: readonly (number | null)[],
): WindowProperties | null {
  if (window === null) return null;
  const start = sources.indexOf(window.start);
  const end = sources.indexOf(window.end);
  if (start === -1 || end === -1) return null;
  const time = window.time === null ? -1 : sources.indexOf(window.time);
  return { ...window, start, end, time: time === -1 ? null : time, tvf: null };
}

/** A computed value's type: an expression over a time attribute is a plain TIMESTAMP (Flink materializes it). */
export function materialized(type: DataType): DataType {
  if (type.timeAttribute === undefined) return type;
  return { family: type.family, name: type.name };
}

/**
 * Compiles a condition and checks it is BOOLEAN.
 * @throws {PlanningError} naming the clause otherwise.
 */
export function condition(
  expr: Expr,
  scope: Scope,
  clause: string,
  context: PlannerContext,
): CompiledExpr {
  const compiled = compileExpr(expr, scope);
  if (compiled.type.family !== "BOOLEAN") {
    throw new PlanningError(
      `${clause} needs a BOOLEAN condition, got ${compiled.type.name} (${compiled.text})${
        context.locate(clause)
      }`,
    );
  }
  return compiled;
}

/** The SELECT list as projections over `scope`, with output names and the input column each plain reference reads. @throws {PlanningError} for `*` in a grouped query, an unknown `t.*` or a name given twice. */
export function project(
  query: SelectQuery,
  scope: Scope,
  context: PlannerContext,
): { projections: CompiledExpr[]; columns: Column[]; sources: (number | null)[] } {
  const projections: CompiledExpr[] = [];
  const columns: Column[] = [];
  const sources: (number | null)[] = [];
  for (const item of query.items) {
    if (item.k === "star") {
      if (scope.computed !== undefined) {
        throw new PlanningError(`SELECT * in a grouped query is not allowed${context.locate("*")}`);
      }
      const names = uniqueNames(scope.columns.map((c) => c.name));
      const table = item.table;
      const picked = scope.columns.map((_, i) => i).filter((i) =>
        table === undefined || scope.qualifiers?.[i]?.includes(table) === true
      );
      if (picked.length === 0) {
        throw new PlanningError(
          `${table}.* names no table of the FROM clause${context.locate(`${table}`)}`,
        );
      }
      for (const i of picked) {
        const c = scope.columns[i]!;
        projections.push({ evaluate: (f) => f[i] ?? null, type: c.type, text: c.name });
        columns.push({ name: table === undefined ? names[i]! : c.name, type: c.type });
        sources.push(i);
      }
      continue;
    }
    const compiled = compileExpr(item.expr, scope);
    projections.push(compiled);
    const name = item.alias ??
      (item.expr.k === "column" ? item.expr.name : `EXPR$${columns.length}`);
    const plain = item.expr.k === "column" ? columnSource(compiled) : null;
    columns.push({ name, type: plain === null ? materialized(compiled.type) : compiled.type });
    sources.push(plain);
  }
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) {
      throw new PlanningError(
        `the SELECT list names column '${c.name}' twice; give one an alias${
          context.locate(c.name)
        }`,
      );
    }
    seen.add(c.name);
  }
  return { projections, columns, sources };
}

/** Names made unique as Calcite does for `SELECT *` over a join: a repeated `k` becomes `k0`, `k1`... */
export function uniqueNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let n = 0; taken.has(unique); n++) unique = `${name}${n}`;
    taken.add(unique);
    return unique;
  });
}
