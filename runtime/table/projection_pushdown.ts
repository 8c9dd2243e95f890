/**
 * Projection push-down into table sources (Flink's
 * `SupportsProjectionPushDown` and the planner's `ProjectPushDownSpec`):
 * a source whose connector can read any subset of its columns
 * (`TableConnector.supportsProjection`, e.g. `nexmark`) reads only the
 * columns the statement can use, so the columns nobody reads are neither
 * built, carried across exchanges, kept in join state nor snapshotted.
 *
 * ## Which columns are kept (a simplification of Flink's)
 *
 * Flink prunes per plan node, following each node's input references
 * upward from the sink. Here the planner's expressions are compiled
 * closures that do not list the columns they read, so pruning is decided
 * on the statement's syntax instead, before planning, and is conservative:
 *
 * - a table's column is kept when its name (exactly, or ignoring case) is
 *   referenced anywhere in the statement: as a column of any expression,
 *   a window TVF's `DESCRIPTOR(...)` or `PARTITION BY`, under any
 *   qualifier, in any subquery; and its `WATERMARK FOR` column always is;
 * - nothing is pruned when the statement has a `*` anywhere (`SELECT *`,
 *   `t.*`; `COUNT(*)` is not one), since `*` makes a query's output
 *   depend on the table's whole schema;
 * - tables with computed columns, and every table of a connector without
 *   projection support, are read whole;
 * - views are planned from their own query and read their tables whole.
 *
 * So a column is pruned only if no expression could name it, and the plan
 * over the pruned schema is the plan of the same statement (every
 * reference resolves by name), only narrower: a query's output is the
 * same with and without push-down. Where Flink would also prune a column
 * named only under another table's qualifier, this keeps it.
 *
 * @module
 */

import type { Column } from "./types.ts";
import type { SelectQuery } from "./sql_ast.ts";

/**
 * The column names a query references anywhere (see the module docs), or
 * `null` when it has a `*` item, so no table may be pruned.
 * @param query a parsed SELECT (sql_ast.ts).
 * @returns the names as written, plus their lower-case forms.
 */
export function referencedColumns(query: SelectQuery): ReadonlySet<string> | null {
  const names = new Set<string>();
  const add = (name: string): void => {
    names.add(name);
    names.add(name.toLowerCase());
  };
  let star = false;
  const walk = (node: unknown): void => {
    if (star || node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    const record = node as Record<string, unknown>;
    if (record.k === "star") {
      star = true;
      return;
    }
    if (record.k === "column" && typeof record.name === "string") add(record.name);
    if (record.k === "windowTvf") {
      if (typeof record.timeColumn === "string") add(record.timeColumn);
      for (const p of (record.partitionBy ?? []) as unknown[]) {
        if (typeof p === "string") add(p);
      }
    }
    for (const value of Object.values(record)) walk(value);
  };
  walk(query);
  return star ? null : names;
}

/**
 * The columns of a table a statement reads after push-down.
 * @param columns the table's physical columns, in order.
 * @param referenced {@linkcode referencedColumns} of the statement.
 * @param keep columns always read (the `WATERMARK FOR` column).
 * @returns the kept columns in the table's order; the first column when
 *   none is referenced (a row must carry something: `SELECT COUNT(*)`).
 */
export function projectedColumns(
  columns: readonly Column[],
  referenced: ReadonlySet<string>,
  keep: readonly string[],
): readonly Column[] {
  const kept = columns.filter((c) =>
    referenced.has(c.name) || referenced.has(c.name.toLowerCase()) || keep.includes(c.name)
  );
  return kept.length === 0 ? columns.slice(0, 1) : kept;
}
