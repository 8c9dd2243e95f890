/**
 * Random changelogs with retractions for the GROUP BY properties
 * (`group_aggregate_test.ts` over the pure operator,
 * `tests/sql_changelog_property_test.ts` over whole SQL jobs): operations
 * that insert a `(key, v)` row or retract a live one (as `-D`, or as a
 * `-U`/`+U` pair), the changelog they make with the rows left live, and
 * the batch GROUP BY over those rows (the seeds' "the result equals the
 * batch query over a snapshot"). Test code only.
 *
 * @module
 */

import fc from "npm:fast-check@4.11.0";
import { applyChange, type Row, type SqlValue } from "./row.ts";

/** A live row of the changelog's table: a key and a nullable integer. */
export interface LiveRow {
  /** The GROUP BY key. */
  readonly key: string;
  /** The aggregated value; `null` is SQL NULL. */
  readonly v: number | null;
}

/** One operation: insert a row, or retract the `index`-th live row (modulo their count). */
export type ChangeOp =
  | { readonly op: "insert"; readonly key: string; readonly v: number | null }
  | { readonly op: "delete"; readonly index: number }
  | { readonly op: "update"; readonly index: number; readonly v: number | null };

/** Random operations over `keys`, with values in `-bound..bound` or NULL. */
export function changeOperation(keys: readonly string[], bound: number): fc.Arbitrary<ChangeOp> {
  const value = fc.option(fc.integer({ min: -bound, max: bound }), { nil: null });
  return fc.oneof(
    fc.record({ op: fc.constant("insert" as const), key: fc.constantFrom(...keys), v: value }),
    fc.record({ op: fc.constant("delete" as const), index: fc.nat() }),
    fc.record({ op: fc.constant("update" as const), index: fc.nat(), v: value }),
  );
}

/**
 * The changelog `ops` make (`[key, v]` rows; a retraction with no live row
 * is skipped) and the rows live at its end.
 */
export function changelogOf(ops: readonly ChangeOp[]): { live: LiveRow[]; changes: Row[] } {
  const live: LiveRow[] = [];
  const changes: Row[] = [];
  for (const o of ops) {
    if (o.op === "insert") {
      live.push({ key: o.key, v: o.v });
      changes.push({ kind: "INSERT", fields: [o.key, o.v] });
    } else if (live.length > 0) {
      const i = o.index % live.length;
      const old = live[i]!;
      if (o.op === "delete") {
        live.splice(i, 1);
        changes.push({ kind: "DELETE", fields: [old.key, old.v] });
      } else {
        live[i] = { key: old.key, v: o.v };
        changes.push({ kind: "UPDATE_BEFORE", fields: [old.key, old.v] });
        changes.push({ kind: "UPDATE_AFTER", fields: [old.key, o.v] });
      }
    }
  }
  return { live, changes };
}

/**
 * The batch `SELECT key, COUNT(*), COUNT(v), COUNT(DISTINCT v), SUM(v),
 * AVG(v), MIN(v), MAX(v) GROUP BY key` over `rows`, written plainly (AVG of
 * integers truncates, as in Flink), as a multiset of result rows.
 */
export function batchGroupBy(rows: readonly LiveRow[]): Map<string, number> {
  const groups = new Map<string, (number | null)[]>();
  for (const r of rows) groups.set(r.key, [...(groups.get(r.key) ?? []), r.v]);
  const table = new Map<string, number>();
  for (const [key, vs] of groups) {
    const nn = vs.filter((v): v is number => v !== null);
    const sum = nn.reduce((a, b) => a + b, 0);
    const fields: SqlValue[] = [
      key,
      vs.length,
      nn.length,
      new Set(nn).size,
      nn.length === 0 ? null : sum,
      nn.length === 0 ? null : Math.trunc(sum / nn.length),
      nn.length === 0 ? null : Math.min(...nn),
      nn.length === 0 ? null : Math.max(...nn),
    ];
    applyChange(table, { kind: "INSERT", fields });
  }
  return table;
}
