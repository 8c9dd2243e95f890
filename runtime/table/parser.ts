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
 * is a one-time bundle build. Measured here (2 shared cores, load 5-10):
 * building the bundle 1.5-5 s once per machine; then per process, loading
 * the cached bundle about 70 ms, the first statement 60-130 ms (ANTLR
 * fills its prediction caches), later statements 2-25 ms (a Nexmark query
 * with joins and subqueries is the slow end).
 *
 * ## How
 *
 * `parser/parse_tree.ts` runs the grammar over the whole script and gives
 * the parse tree as plain data; its errors name the line, the column, the
 * offending token and what was expected (ANTLR's messages:
 * "SQL parse error at line 2, column 9: mismatched input 'FROM' expecting
 * ..."). `parser/translate_statement.ts`, `translate_query.ts` and
 * `translate_expr.ts` walk that tree into `sql_ast.ts`, refusing what it
 * cannot express with a {@link SqlParseError} that names the feature and
 * its place. Every node that carries `at` has the 0-based offset of its
 * keyword or name in the whole script.
 *
 * Grammar limits a user can meet (each a parse error naming the place):
 * `AVG(x) OVER (...)` needs `AS alias` in a SELECT list; `FILTER (WHERE
 * ...)` on aggregates is not in the grammar; a window TVF in FROM takes no
 * alias; named SESSION parameters (`GAP =>`) are not parsed; `dateTime`
 * and other keywords must be back-quoted as names.
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
