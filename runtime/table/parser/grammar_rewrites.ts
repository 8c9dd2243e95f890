/**
 * Rewrites two shapes of Flink SQL that dt-sql-parser's FlinkSQL grammar
 * lacks into shapes it parses, in place: every character keeps its offset
 * (and every newline its line), so positions in errors and `at` offsets
 * stay those of the user's script. The rewrites work on the lexer's
 * tokens, so strings and comments that look alike are never touched.
 *
 * - `TABLE(SESSION(TABLE t [PARTITION BY k1, k2], DESCRIPTOR(ts), gap))`:
 *   the grammar's window TVFs are TUMBLE, HOP and CUMULATE. `SESSION`
 *   becomes `TUMBLE ` and `PARTITION BY k1, k2` becomes spaces; the keys
 *   are returned by the offset of `SESSION`, and the translation restores
 *   a SESSION window from them.
 * - `SUBSTRING(s FROM i [FOR n])` and `EXTRACT(unit FROM t)`: the grammar
 *   parses `SUBSTRING(s, i[, n])` and `EXTRACT(unit, t)` as calls (the
 *   grammar's own EXTRACT rule wants a name, and units are keywords);
 *   `FROM` becomes `,   ` and `FOR` `,  `.
 * - `agg(...) FILTER (WHERE cond)`: the grammar has no FILTER clause.
 *   `FILTER` becomes `*     ` and `WHERE` spaces, so the grammar parses
 *   `agg(...) * (cond)`; the offset of the `*` is returned, and the
 *   translation turns that product back into a filtered aggregate.
 * - Functions whose names are keywords of the grammar that it does not
 *   accept as function names (`CHAR_LENGTH(s)`, `SQRT(x)`, ... the list
 *   {@link KEYWORD_FUNCTIONS}), when followed by `(`: the name becomes a
 *   placeholder name of the same length (`Z__________`), and the original
 *   name is returned by its offset.
 *
 * @module
 */

import type { AntlrToken, FlinkSqlApi } from "./flink_sql_bundle.ts";

/** The keys of one rewritten `SESSION(TABLE t PARTITION BY k1, k2, ...)` call. */
export interface SessionRewrite {
  /** The PARTITION BY keys, unquoted, in order. */
  readonly partitionBy: readonly string[];
}

/** A script ready for the grammar, and what was rewritten. */
export interface RewrittenScript {
  /** The text to parse: as long as the script, offsets unchanged. */
  readonly text: string;
  /** SESSION windows, by the offset of their `SESSION` keyword. */
  readonly sessions: Map<number, SessionRewrite>;
  /** Function names replaced by placeholders: the upper-cased name, by its offset. */
  readonly functions: Map<number, string>;
  /** Offsets of the `*` that stands for a `FILTER (WHERE ...)`. */
  readonly filters: Set<number>;
}

/**
 * Flink functions whose names the grammar lexes as keywords but does not
 * accept as function names.
 */
export const KEYWORD_FUNCTIONS: ReadonlySet<string> = new Set([
  "CHAR_LENGTH",
  "CHARACTER_LENGTH",
  "OCTET_LENGTH",
  "SQRT",
  "CONVERT",
  "TRANSLATE",
  "CORR",
  "COVAR_POP",
  "COVAR_SAMP",
  "NTH_VALUE",
  "PERCENTILE_CONT",
  "PERCENTILE_DISC",
  "ARRAY_AGG",
  "ARRAY_CONCAT_AGG",
  "STRING_AGG",
  "GROUP_CONCAT",
  "WIDTH_BUCKET",
  "DATE_DIFF",
  "DATE_TRUNC",
  "DATETIME_DIFF",
  "DATETIME_TRUNC",
  "TIME_DIFF",
  "TIME_TRUNC",
  "TIMESTAMP_TRUNC",
  "SAFE_CAST",
  "TRIM_ARRAY",
  "REGR_AVGX",
  "REGR_AVGY",
  "REGR_COUNT",
  "REGR_INTERCEPT",
  "REGR_R2",
  "REGR_SLOPE",
  "REGR_SXX",
  "REGR_SXY",
  "REGR_SYY",
  "SUBSTRING_REGEX",
  "POSITION_REGEX",
  "OCCURRENCES_REGEX",
  "TRANSLATE_REGEX",
  "FUSION",
  "INTERSECTION",
  "NORMALIZE",
  "USER",
  "SESSION_USER",
  "SYSTEM_USER",
]);

/**
 * Applies the rewrites of the module docs to `script`.
 * @param flink the grammar (its lexer finds the tokens).
 */
export function rewriteForGrammar(flink: FlinkSqlApi, script: string): RewrittenScript {
  const sessions = new Map<number, SessionRewrite>();
  const functions = new Map<number, string>();
  const filters = new Set<number>();
  if (!/\w\s*\(/.test(script)) return { text: script, sessions, functions, filters };
  const lexer = flink.createLexer(script);
  lexer.removeErrorListeners(); // lexical errors are reported by the parse itself
  const vocabulary = lexer.vocabulary;
  const tokens: AntlrToken[] = lexer.getAllTokens().filter((t) => t.channel === 0);
  const u = codeUnitOffsets(script); // keys are offsets in the script as JS counts them
  const name = (i: number) => {
    const t = tokens[i];
    return t === undefined ? "" : vocabulary.getSymbolicName(t.type) ?? "";
  };
  const chars = Array.from(script); // by code point, as ANTLR counts offsets
  const put = (at: number, text: string) => {
    for (let i = 0; i < text.length; i++) chars[at + i] = text[i]!;
  };
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (chars[i] !== "\n" && chars[i] !== "\r") chars[i] = " ";
  };
  for (let i = 0; i < tokens.length; i++) {
    const keyword = name(i).slice(3);
    if (
      name(i).startsWith("KW_") && KEYWORD_FUNCTIONS.has(keyword) && name(i + 1) === "LR_BRACKET"
    ) {
      const t = tokens[i]!;
      put(t.start, "Z" + "_".repeat(t.stop - t.start));
      functions.set(u(t.start), keyword);
      continue;
    }
    if (
      name(i) === "KW_FILTER" && name(i - 1) === "RR_BRACKET" && name(i + 1) === "LR_BRACKET" &&
      name(i + 2) === "KW_WHERE"
    ) {
      const t = tokens[i]!;
      put(t.start, "*" + " ".repeat(t.stop - t.start));
      blank(tokens[i + 2]!.start, tokens[i + 2]!.stop + 1);
      filters.add(u(t.start));
      continue;
    }
    if ((name(i) === "KW_SUBSTRING" || name(i) === "KW_EXTRACT") && name(i + 1) === "LR_BRACKET") {
      let depth = 0;
      for (let j = i + 1; j < tokens.length; j++) {
        const n = name(j);
        if (n === "LR_BRACKET") depth += 1;
        else if (n === "RR_BRACKET" && --depth === 0) break;
        else if (depth === 1 && (n === "KW_FROM" || n === "KW_FOR")) {
          put(tokens[j]!.start, n === "KW_FROM" ? ",   " : ",  ");
        }
      }
      continue;
    }
    if (
      name(i) !== "KW_SESSION" || name(i - 1) !== "LR_BRACKET" || name(i - 2) !== "KW_TABLE" ||
      name(i + 1) !== "LR_BRACKET" || name(i + 2) !== "KW_TABLE"
    ) continue;
    const session = tokens[i]!;
    // TABLE name[.name]* [PARTITION BY key (, key)*] , ...
    let j = i + 3;
    while (name(j + 1) === "DOT") j += 2;
    j += 1;
    const partitionBy: string[] = [];
    if (name(j) === "KW_PARTITION" && name(j + 1) === "KW_BY") {
      const from = tokens[j]!.start;
      j += 2;
      for (;;) {
        const key = tokens[j];
        if (key === undefined || name(j) === "COMMA" || name(j) === "RR_BRACKET") break;
        partitionBy.push(unquote(key.text ?? ""));
        j += 1;
        const after = name(j + 1);
        if (
          name(j) !== "COMMA" || after === "KW_DESCRIPTOR" || after === "KW_INTERVAL" ||
          name(j + 2) === "DOUBLE_RIGHT_ARROW"
        ) break;
        j += 1;
      }
      blank(from, tokens[j - 1]!.stop + 1);
    }
    put(session.start, "TUMBLE ");
    sessions.set(u(session.start), { partitionBy });
  }
  return { text: chars.join(""), sessions, functions, filters };
}

/**
 * Maps ANTLR's offsets in `text` (code points) to JS string offsets (UTF-16
 * units); the identity when `text` has no characters beyond the BMP.
 */
export function codeUnitOffsets(text: string): (codePoint: number) => number {
  if (!/[\uD800-\uDFFF]/.test(text)) return (cp) => cp;
  const map: number[] = [];
  let unit = 0;
  for (const ch of text) {
    map.push(unit);
    unit += ch.length;
  }
  map.push(unit);
  return (cp) => map[Math.max(0, Math.min(cp, map.length - 1))]!;
}

/**
 * A clearer message for a syntax error that comes from a gap of the
 * grammar rather than from the SQL. `errorOffset` is the UTF-16 offset of
 * the error. The gaps:
 *
 * - an OVER aggregation without `AS alias` in a SELECT list (the grammar
 *   requires the alias);
 * - a comparison after `x IN (...)` (`x IN (1, 2) = y`), and a comparison
 *   of two BETWEEN, LIKE or IN predicates (`a LIKE b = c LIKE d`): Flink
 *   binds the predicates tighter than the comparison, but the grammar
 *   parses neither; parentheses around the predicates mend both.
 * @returns the offset and message to report, or `undefined`.
 */
export function explainGrammarGap(
  flink: FlinkSqlApi,
  script: string,
  errorOffset: number,
): { offset: number; message: string } | undefined {
  return predicateComparisonGap(flink, script, errorOffset) ??
    overAliasGap(flink, script, errorOffset);
}

const COMPARISON_TOKENS = new Set([
  "EQUAL_SYMBOL",
  "GREATER_SYMBOL",
  "LESS_SYMBOL",
  "EXCLAMATION_SYMBOL",
]);

/** Tokens that end the operand of a comparison when looking back from it. */
const OPERAND_LIMITS = new Set([
  "KW_OR",
  "COMMA",
  "KW_SELECT",
  "KW_WHERE",
  "KW_HAVING",
  "KW_ON",
  "KW_WHEN",
  "KW_THEN",
  "KW_ELSE",
  "SEMICOLON",
]);

function predicateComparisonGap(
  flink: FlinkSqlApi,
  script: string,
  errorOffset: number,
): { offset: number; message: string } | undefined {
  if (!/\b(in|like|between)\b/i.test(script)) return undefined;
  const lexer = flink.createLexer(script);
  lexer.removeErrorListeners();
  const vocabulary = lexer.vocabulary;
  const tokens = lexer.getAllTokens().filter((t) => t.channel === 0);
  const u = codeUnitOffsets(script);
  const name = (i: number) => {
    const t = tokens[i];
    return t === undefined ? "" : vocabulary.getSymbolicName(t.type) ?? "";
  };
  const at = tokens.findIndex((t) => u(t.start) === errorOffset);
  if (at <= 0) return undefined;
  /** The index of the `(` that the `)` at `close` closes, or -1. */
  const opening = (close: number) => {
    let depth = 0;
    for (let i = close; i >= 0; i--) {
      if (name(i) === "RR_BRACKET") depth += 1;
      else if (name(i) === "LR_BRACKET" && --depth === 0) return i;
    }
    return -1;
  };
  /** Walks back from `from` over one level of nesting to a token in `wanted`; -1 if none. */
  const back = (from: number, wanted: ReadonlySet<string>) => {
    for (let i = from; i >= 0; i--) {
      const n = name(i);
      if (wanted.has(n)) return i;
      if (n === "RR_BRACKET") i = opening(i);
      else if (n === "LR_BRACKET" || OPERAND_LIMITS.has(n)) return -1;
    }
    return -1;
  };
  /** The text of the comparison operator whose tokens include `i` (`<>` is two tokens). */
  const operator = (i: number) => {
    let from = i;
    let to = i;
    while (COMPARISON_TOKENS.has(name(from - 1))) from -= 1;
    while (COMPARISON_TOKENS.has(name(to + 1))) to += 1;
    return { from, text: tokens.slice(from, to + 1).map((t) => t.text).join("") };
  };
  const advice = "the FlinkSQL grammar Weir uses cannot parse it; Flink reads it the same with " +
    "parentheses around the predicate";
  if (COMPARISON_TOKENS.has(name(at)) && name(at - 1) === "RR_BRACKET") {
    const open = opening(at - 1);
    if (open > 0 && name(open - 1) === "KW_IN") {
      return {
        offset: errorOffset,
        message: `a comparison after x IN (...) needs parentheses: write (x IN (...)) ${
          operator(at).text
        } ... (${advice})`,
      };
    }
  }
  const predicate = name(at) === "KW_NOT" ? name(at + 1) : name(at);
  if (predicate !== "KW_BETWEEN" && predicate !== "KW_LIKE" && predicate !== "KW_IN") {
    return undefined;
  }
  const found = back(at - 1, COMPARISON_TOKENS);
  if (found === -1) return undefined;
  const comparison = operator(found);
  const before = back(comparison.from - 1, new Set(["KW_BETWEEN", "KW_LIKE", "KW_IN"]));
  if (before === -1) return undefined;
  return {
    offset: errorOffset,
    message: `a comparison of two BETWEEN, LIKE or IN predicates needs parentheses: write ` +
      `(a ${tokens[before]!.text?.toUpperCase()} ...) ${comparison.text} (b ${
        tokens[predicate === name(at) ? at : at + 1]!.text?.toUpperCase()
      } ...) (${advice}s)`,
  };
}

function overAliasGap(
  flink: FlinkSqlApi,
  script: string,
  errorOffset: number,
): { offset: number; message: string } | undefined {
  if (!/\bover\b/i.test(script)) return undefined;
  const lexer = flink.createLexer(script);
  lexer.removeErrorListeners();
  const vocabulary = lexer.vocabulary;
  const tokens = lexer.getAllTokens().filter((t) => t.channel === 0);
  const u = codeUnitOffsets(script);
  const name = (i: number) => {
    const t = tokens[i];
    return t === undefined ? "" : vocabulary.getSymbolicName(t.type) ?? "";
  };
  for (let i = 0; i < tokens.length; i++) {
    if (
      name(i) !== "KW_OVER" || name(i + 1) !== "LR_BRACKET" || u(tokens[i]!.start) > errorOffset
    ) continue;
    let depth = 0;
    let j = i + 1;
    for (; j < tokens.length; j++) {
      if (name(j) === "LR_BRACKET") depth += 1;
      else if (name(j) === "RR_BRACKET" && --depth === 0) break;
    }
    if (
      name(j + 1) !== "KW_AS" &&
      (tokens[j + 1] === undefined || u(tokens[j + 1]!.start) >= errorOffset)
    ) {
      return {
        offset: u(tokens[i]!.start),
        message: "an OVER aggregation needs a name here: write ... OVER (...) AS name " +
          "(the FlinkSQL grammar Weir uses requires the alias)",
      };
    }
  }
  return undefined;
}

function unquote(text: string): string {
  return text.startsWith("`") && text.endsWith("`") && text.length >= 2
    ? text.slice(1, -1).replaceAll("``", "`")
    : text;
}
