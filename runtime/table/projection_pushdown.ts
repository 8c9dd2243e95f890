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
 * - a table a `*` can expand to (`SELECT *`, `t.*`; `COUNT(*)` is not
 *   one) is read whole, since the `*` makes the output depend on its
 *   whole schema: the tables of the star's FROM, through joins, window
 *   TVFs and subqueries whose own SELECT list has a `*` (a subquery with
 *   an explicit list stops it: Nexmark q6's `SELECT * FROM (SELECT A.id,
 *   ... FROM auction A, bid B)` prunes both);
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
import type { SelectQuery, TableRef } from "./sql_ast.ts";

/** What a statement references: see {@linkcode referencedColumns}. */
export interface References {
  /** Column names as written, plus their lower-case forms. */
  readonly names: ReadonlySet<string>;
  /** Tables a `*` can expand to, by the name in FROM: read whole. */
  readonly whole: ReadonlySet<string>;
}

/** The tables a `*` of a query over `ref` expands to (see the module docs). */
function starReach(ref: TableRef, into: Set<string>): void {
  switch (ref.k) {
    case "table":
      into.add(ref.name);
      return;
    case "join":
      starReach(ref.left, into);
      starReach(ref.right, into);
      return;
    case "windowTvf":
      starReach(ref.input, into);
      return;
    case "subquery":
      if (ref.query.items.some((item) => item.k === "star")) starReach(ref.query.from, into);
      return;
    case "lateral":
      return;
  }
}

/**
 * The column names a query references anywhere and the tables its `*`
 * items expand to (see the module docs).
 * @param query a parsed SELECT (sql_ast.ts).
 * @returns the references.
 */
export function referencedColumns(query: SelectQuery): References {
  const names = new Set<string>();
  const whole = new Set<string>();
  const add = (name: string): void => {
    names.add(name);
    names.add(name.toLowerCase());
  };
  const walk = (node: unknown): void => {
    if (node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    const record = node as Record<string, unknown>;
    const items = record.items;
    if (
      Array.isArray(items) && items.some((item) => item?.k === "star") &&
      typeof record.from === "object" && record.from !== null
    ) {
      starReach(record.from as TableRef, whole);
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
  return { names, whole };
}

/**
 * The columns of a table a statement reads after push-down.
 * @param columns the table's physical columns, in order.
 * @param referenced {@linkcode referencedColumns}' names of the statement.
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
