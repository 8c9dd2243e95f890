/**
 * How `weir sql` shows a SELECT's result, by the SQL client's result mode
 * (Flink's `sql-client.execution.result-mode`, set with `SET`):
 *
 * - `changelog` (the default): one line per change, `+I(Mary,1)`,
 *   `-U(Mary,1)`, `+U(Mary,2)`, `-D(...)`, as the seeds print changelogs;
 * - `tableau`: each change as a row of a table with an `op` column, as
 *   Flink's tableau mode prints it;
 * - `table`: the current result, materialized from the changelog (Flink's
 *   table mode): the whole table is printed again when it changed, at most
 *   every `refreshMs` (a terminal's screen is cleared first), and once more
 *   when the query ends.
 *
 * A view is a SinkFunction-style sink (`invoke`, `finish`) that the table
 * environment runs at parallelism 1 (`ScriptOptions.selectSink`), so it gets
 * the changelog in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MaterializedResult, renderTable } from "./_sql_result_view.ts";
 *
 * const result = new MaterializedResult();
 * result.apply({ kind: "INSERT", fields: ["Mary", 1] });
 * result.apply({ kind: "UPDATE_BEFORE", fields: ["Mary", 1] });
 * result.apply({ kind: "UPDATE_AFTER", fields: ["Mary", 2] });
 * assert.equal(
 *   renderTable(["user", "cnt"], result.rows()),
 *   "+------+-----+\n| user | cnt |\n+------+-----+\n| Mary |   2 |\n+------+-----+\n1 row in set",
 * );
 * ```
 *
 * @module
 */

import {
  formatRow,
  formatValue,
  type Row,
  shortString,
  type SqlValue,
} from "../runtime/table/row.ts";

/** The result modes of the SQL client. */
export type ResultMode = "changelog" | "table" | "tableau";

/**
 * A result table kept from its changelog: a multiset of rows in the order
 * they were first inserted. Pure.
 */
export class MaterializedResult {
  readonly #rows = new Map<string, { readonly fields: readonly SqlValue[]; count: number }>();

  /**
   * Applies one change: `+I`/`+U` add a copy of the row, `-U`/`-D` remove one.
   * @throws {Error} when a change retracts a row the result does not hold,
   *   naming it (the changelog is wrong).
   */
  apply(row: Row): void {
    const key = JSON.stringify(row.fields);
    const entry = this.#rows.get(key);
    if (row.kind === "INSERT" || row.kind === "UPDATE_AFTER") {
      if (entry === undefined) this.#rows.set(key, { fields: row.fields, count: 1 });
      else entry.count++;
      return;
    }
    if (entry === undefined) {
      throw new Error(`the changelog retracts ${formatRow(row)}, which the result does not hold`);
    }
    if (--entry.count === 0) this.#rows.delete(key);
  }

  /** The current rows, each as often as it is held, in first-insertion order. */
  rows(): SqlValue[][] {
    const out: SqlValue[][] = [];
    for (const { fields, count } of this.#rows.values()) {
      for (let i = 0; i < count; i++) out.push([...fields]);
    }
    return out;
  }
}

const isNumeric = (v: SqlValue) => typeof v === "number";

function line(widths: readonly number[]): string {
  return `+${widths.map((w) => "-".repeat(w + 2)).join("+")}+`;
}

function cells(values: readonly string[], widths: readonly number[], right: boolean[]): string {
  return `| ${
    values.map((v, i) => right[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)).join(" | ")
  } |`;
}

/**
 * A boxed table of `rows` (numbers right-aligned, as Flink's tableau), with
 * a last line `N rows in set` (`Empty set` for none).
 */
export function renderTable(columns: readonly string[], rows: readonly SqlValue[][]): string {
  const texts = rows.map((r) => r.map(formatValue));
  const widths = columns.map((c, i) => Math.max(c.length, ...texts.map((t) => t[i]!.length)));
  const right = columns.map((_, i) => rows.length > 0 && rows.every((r) => isNumeric(r[i]!)));
  const out = [line(widths), cells(columns, widths, columns.map(() => false)), line(widths)];
  for (const t of texts) out.push(cells(t, widths, right));
  if (rows.length > 0) out.push(line(widths));
  out.push(
    rows.length === 0 ? "Empty set" : `${rows.length} row${rows.length === 1 ? "" : "s"} in set`,
  );
  return out.join("\n");
}

/** What {@linkcode resultView} writes to and how often. */
export interface ResultViewOptions {
  /** Writes one block of text (a line, or a whole table); default `console.log`. */
  readonly write?: (text: string) => void;
  /** `table` mode: the least time between two prints of the table, in ms (default 500). */
  readonly refreshMs?: number;
  /** `table` mode: clear the terminal before each print (default: when stdout is a terminal). */
  readonly clearScreen?: boolean;
  /** The time now, in ms (default `Date.now`): when the table may print again. */
  readonly now?: () => number;
}

/**
 * A result view: a SinkFunction-style sink (so a job can write into it)
 * that the client can also feed by hand (rows from a cluster).
 */
export interface ResultView {
  /** Always `"simple"`. */
  readonly kind: "simple";
  /** Shows one change. */
  invoke(row: Row): void;
  /** The input ended: shows what is left to show. */
  finish(): void;
}

/**
 * The sink that shows a SELECT's changelog in `mode` (see the module docs).
 * @param columns the result's column names.
 * @param mode how to show it.
 */
export function resultView(
  columns: readonly string[],
  mode: ResultMode,
  options: ResultViewOptions = {},
): ResultView {
  const write = options.write ?? ((text: string) => console.log(text));
  if (mode === "changelog") {
    return { kind: "simple", invoke: (row) => write(formatRow(row)), finish() {} };
  }
  if (mode === "tableau") {
    const widths = columns.map((c) => Math.max(c.length, 12));
    const header = [
      line([2, ...widths]),
      cells(["op", ...columns], [2, ...widths], []),
      line([
        2,
        ...widths,
      ]),
    ];
    let changes = 0;
    return {
      kind: "simple",
      invoke(row) {
        if (changes++ === 0) write(header.join("\n"));
        const texts = row.fields.map(formatValue);
        write(cells([shortString(row.kind), ...texts], [2, ...widths], [
          false,
          ...row.fields.map(isNumeric),
        ]));
      },
      finish() {
        write(
          changes === 0
            ? "Empty set"
            : `${line([2, ...widths])}\nReceived a total of ${changes} row${
              changes === 1 ? "" : "s"
            }`,
        );
      },
    };
  }
  const result = new MaterializedResult();
  const refreshMs = options.refreshMs ?? 500;
  const now = options.now ?? Date.now;
  const clear = options.clearScreen ?? isTerminal();
  let printedAt = Number.NEGATIVE_INFINITY;
  let dirty = false;
  const print = () => {
    write((clear ? "\x1b[H\x1b[2J" : "") + renderTable(columns, result.rows()));
    printedAt = now();
    dirty = false;
  };
  return {
    kind: "simple",
    invoke(row) {
      result.apply(row);
      dirty = true;
      if (now() - printedAt >= refreshMs) print();
    },
    finish() {
      if (dirty || printedAt === Number.NEGATIVE_INFINITY) print();
    },
  };
}

function isTerminal(): boolean {
  try {
    return Deno.stdout.isTerminal();
  } catch {
    return false;
  }
}
