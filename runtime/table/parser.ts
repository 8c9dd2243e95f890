/**
 * Parses a Flink SQL script into Weir's syntax tree (`sql_ast.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript } from "./parser.ts";
 *
 * const [statement] = parseScript("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`");
 * assert.equal(statement!.k, "select");
 * ```
 *
 * ## Why dt-sql-parser
 *
 * Two well-kept parsers were measured on this machine (`FACTS.md`):
 *
 * - `node-sql-parser@5.4.0`'s `flinksql` dialect loads directly from npm,
 *   but lacks what Flink's DDL and windowing need: the `STRING` type,
 *   `WATERMARK FOR`, `HOP`, `ROW_NUMBER() OVER` in a derived table,
 *   `CREATE VIEW`, `EXPLAIN`, `SET`; and it groups `AND` and `OR` left to
 *   right without precedence (`a OR b AND c` as `(a OR b) AND c`), so mixed
 *   conditions had to be refused.
 * - `dt-sql-parser@4.5.1`'s FlinkSQL grammar (ANTLR 4) covers Flink SQL:
 *   all of the above, window TVFs, OVER windows with frames, joins,
 *   `LATERAL TABLE`, with correct precedence. Its ESM build cannot be
 *   imported by Deno, so it is bundled into a cache at first use
 *   (`parser/flink_sql_bundle.ts`).
 *
 * Weir uses dt-sql-parser: the SQL slices need the features, and the cost
 * is a one-time bundle build per machine plus ANTLR's warm-up per process.
 * Measured here (2 shared cores; a process that parses the clicks query
 * twice, a DDL with WATERMARK, then Nexmark q5 and q4 twice each):
 *
 * | step | load ~17 | load ~5 |
 * |---|---|---|
 * | build the bundle (once per machine) | 4-9 s | 1.2-1.5 s |
 * | load the cached bundle (once per process) | 230-350 ms | 70 ms |
 * | first statement (ANTLR fills its prediction caches) | 740-920 ms | 130 ms |
 * | first Nexmark q5 (joins, subqueries, HOP) | 1.5-1.6 s | - |
 * | the same statements again | 2-20 ms | 2-5 ms |
 *
 * A statement of a new shape pays part of the warm-up again (a first
 * CREATE TABLE with WATERMARK after a SELECT: 180-230 ms at load ~17).
 *
 * ## How
 *
 * `parser/parse_tree.ts` runs the grammar over the whole script and gives
 * the parse tree as plain data; its errors name the line, the column, what
 * was found and what was expected ("SQL parse error at line 3, column 6:
 * unexpected end of input (the statement is incomplete); expecting an
 * expression or name, ..."). `parser/grammar_rewrites.ts` first rewrites,
 * offsets kept, the shapes of Flink SQL the grammar lacks: SESSION window
 * TVFs, aggregate `FILTER (WHERE ...)`, `SUBSTRING(s FROM i FOR n)` /
 * `EXTRACT(unit FROM t)`, and functions whose names are keywords
 * (`CHAR_LENGTH`, `SQRT`...).
 * `parser/translate_statement.ts`, `translate_query.ts`,
 * `translate_expr.ts`, `translate_over.ts` and `translate_interval.ts`
 * walk the tree into `sql_ast.ts`, refusing what it cannot express with a
 * {@link SqlParseError} that names the feature and its place; they also
 * repair two groupings where the grammar differs from Flink: `||` binds
 * like `*` (the grammar binds it like `+`), and `SELECT a * -b` (the
 * grammar reads `a` and a stray `(*) - b`) is `a * (-b)`. Every node
 * that carries `at` has the 0-based offset (in UTF-16 units) of its
 * keyword or name in the whole script.
 *
 * Limits of the grammar a user can meet (each a parse error naming the
 * place): `agg(x) OVER (...)` needs `AS alias` in a SELECT list (the
 * error says so); a window TVF in FROM takes no alias;
 * named SESSION parameters (`GAP =>`) are not parsed; `INSERT ... VALUES`
 * takes constants only (no negative decimals, no expressions); unquoted
 * `SET` keys cannot contain keywords (`SET 'table.exec.state.ttl' = ...`
 * works); keywords used as names (`dateTime`, `user`, `out`, `rows`) must
 * be back-quoted; a statement needs `;` before the next.
 *
 * @module
 */

import { exprText } from "./sql_text.ts";
import type { Statement } from "./sql_ast.ts";
import { parseTree } from "./parser/parse_tree.ts";
import { TranslateContext } from "./parser/translate_context.ts";
import { translateProgram } from "./parser/translate_statement.ts";

export { positionOf, SqlParseError } from "./parser/sql_parse_error.ts";
export type { SourcePosition } from "./parser/sql_parse_error.ts";

/** A statement's text and its offset in the script. */
export interface StatementText {
  /** The statement, without its `;`. */
  readonly text: string;
  /** Offset of its first character in the script. */
  readonly offset: number;
}

/**
 * Splits a script at `;` outside '...' strings, `...` and "..." names,
 * `--` line comments and block comments; blank statements (only white
 * space and comments) are skipped. (For tools that show statements one by
 * one; {@link parseScript} parses the whole script at once.)
 */
export function splitStatements(script: string): StatementText[] {
  const out: StatementText[] = [];
  let start = 0;
  let i = 0;
  const push = (end: number) => {
    const raw = script.slice(start, end);
    const lead = raw.length - raw.trimStart().length;
    const body = raw.trim();
    if (body !== "" && !/^(--[^\n]*\n?\s*|\/\*[\s\S]*?\*\/\s*)+$/.test(body)) {
      out.push({ text: body, offset: start + lead });
    }
  };
  while (i < script.length) {
    const c = script[i]!;
    if (c === "'" || c === "`" || c === '"') {
      const end = script.indexOf(c, i + 1);
      i = end === -1 ? script.length : end + 1;
    } else if (c === "-" && script[i + 1] === "-") {
      const end = script.indexOf("\n", i);
      i = end === -1 ? script.length : end + 1;
    } else if (c === "/" && script[i + 1] === "*") {
      const end = script.indexOf("*/", i + 2);
      i = end === -1 ? script.length : end + 2;
    } else if (c === ";") {
      push(i);
      start = i + 1;
      i += 1;
    } else {
      i += 1;
    }
  }
  push(script.length);
  return out;
}

/**
 * Parses a script of `;`-separated statements (the first use in a process
 * loads the grammar, building it into the cache on the first use on a
 * machine: see `parser/flink_sql_bundle.ts`).
 * @returns the statements, in order.
 * @throws {SqlParseError} for SQL that does not parse, or that Weir's
 *   syntax tree cannot express, naming the line and column in `script`
 *   and what was expected or which feature is missing.
 * @throws {Error} when the grammar cannot be built or loaded (no
 *   permission to run `deno bundle` or to write the cache; the message
 *   says which).
 */
export function parseScript(script: string): Statement[] {
  const parsed = parseTree(script);
  return translateProgram(new TranslateContext(script, parsed), parsed.tree);
}

export { exprText };
