/**
 * Runs the FlinkSQL grammar (`flink_sql_bundle.ts`) over a script and gives
 * its parse tree as plain data (`PNode`): rule nodes named by the grammar's
 * rules (`selectStatement`, `booleanExpression`...) and token nodes named by
 * the grammar's token names (`KW_SELECT`, `STRING_LITERAL`...), each with
 * its 0-based offsets in the script. The translation to `sql_ast.ts` walks
 * this tree, never ANTLR's objects.
 *
 * ## Errors
 *
 * The first lexical or syntax error is thrown as a {@link SqlParseError}
 * naming the line, the column, the offending token and what the grammar
 * expected there (ANTLR's own message, with long sets of expected tokens
 * cut to their first few). Parsing runs in ANTLR's fast SLL prediction
 * mode first and, only if that reports an error, again in full LL mode
 * (SLL may reject input that LL accepts; LL gives the true first error).
 *
 * ## Rewrites
 *
 * Two shapes of Flink SQL that the grammar lacks are rewritten in place
 * before parsing, keeping every offset (`grammar_rewrites.ts`): SESSION
 * window TVFs and `SUBSTRING(s FROM i [FOR n])`.
 *
 * @module
 */

import { loadFlinkSql } from "./flink_sql_bundle.ts";
import type {
  AntlrErrorListener,
  AntlrRecognizer,
  AntlrToken,
  AntlrTree,
} from "./flink_sql_bundle.ts";
import {
  codeUnitOffsets,
  explainGrammarGap,
  rewriteForGrammar,
  type SessionRewrite,
} from "./grammar_rewrites.ts";
import { positionOf, SqlParseError } from "./sql_parse_error.ts";

export type { SessionRewrite };

/** A token of the parse tree. */
export interface TokenNode {
  /** Always `null` (tells a token from a rule node). */
  readonly rule: null;
  /** The grammar's token name, e.g. `KW_SELECT`, `ID_LITERAL`, `STRING_LITERAL`. */
  readonly token: string;
  /** The text as written in the script. */
  readonly text: string;
  /** 0-based offset of its first character in the script. */
  readonly start: number;
  /** 0-based offset just past its last character. */
  readonly end: number;
}

/** A rule node of the parse tree. */
export interface RuleNode {
  /** The grammar rule, e.g. `selectStatement`. */
  readonly rule: string;
  /** Its children, in order. */
  readonly children: readonly PNode[];
  /** 0-based offset of its first character in the script (of the next token when it matched nothing). */
  readonly start: number;
  /** 0-based offset just past its last character. */
  readonly end: number;
}

/** A node of the parse tree. */
export type PNode = RuleNode | TokenNode;

/** A parsed script. */
export interface ParsedScript {
  /** The `program` rule node. */
  readonly tree: RuleNode;
  /** SESSION window calls that were rewritten, by the offset of their `SESSION` keyword. */
  readonly sessions: ReadonlyMap<number, SessionRewrite>;
  /** Keyword function names that were replaced by placeholders: the name, by offset. */
  readonly functions: ReadonlyMap<number, string>;
  /** Offsets of the `*` that stands for an aggregate's `FILTER (WHERE ...)`. */
  readonly filters: ReadonlySet<number>;
}

interface FirstError {
  readonly offset: number;
  readonly message: string;
  /** The offending token's text when it is a reserved keyword (a `KW_` token). */
  readonly keyword?: string;
}

const MAX_EXPECTED = 12;

/**
 * Parses `script` with the FlinkSQL grammar.
 * @throws {SqlParseError} at the first lexical or syntax error, naming the
 *   line, the column and what was expected.
 * @throws {Error} when the grammar cannot be loaded (see `loadFlinkSql`).
 */
export function parseTree(script: string): ParsedScript {
  const flink = loadFlinkSql();
  const { text, sessions, functions, filters } = rewriteForGrammar(flink, script);
  let tree = run(text, 0);
  if ("message" in tree) tree = run(text, 1);
  if ("message" in tree) {
    const gap = explainGrammarGap(flink, script, tree.offset) ?? tree;
    const hint = gap === tree ? reservedWordHint(tree) : "";
    throw new SqlParseError(gap.message + hint, positionOf(script, gap.offset));
  }
  return { tree, sessions, functions, filters };

  /** Parses `input`, SLL first, then full LL when SLL fails. */
  function parse(input: string): RuleNode | FirstError {
    const first = run(input, 0);
    return "message" in first ? run(input, 1) : first;
  }

  /**
   * `; 'out' is a reserved word: back-quote it as \`out\`` when the
   * offending token is a reserved keyword in a name position, else `""`.
   * A name position: back-quoted, the statement parses past the word, and
   * without the word it does not parse to its end (so `SELECT a, FROM t`,
   * where FROM is the clause and an item is missing, gets no hint).
   */
  function reservedWordHint(error: FirstError): string {
    const word = error.keyword;
    if (word === undefined || text.slice(error.offset, error.offset + word.length) !== word) {
      return "";
    }
    const at = error.offset;
    const after = at + word.length;
    const quoted = parse(`${text.slice(0, at)}\`${word}\`${text.slice(after)}`);
    if ("message" in quoted && quoted.offset <= after + 2) return "";
    const statementEnd = text.indexOf(";", after);
    const removed = parse(`${text.slice(0, at)}${" ".repeat(word.length)}${text.slice(after)}`);
    if (!("message" in removed)) return "";
    if (statementEnd !== -1 && removed.offset > statementEnd) return "";
    return `; '${word}' is a reserved word: back-quote it as \`${word}\``;
  }

  function run(input: string, predictionMode: number): RuleNode | FirstError {
    let first: FirstError | undefined;
    const lineStarts = lineOffsets(input); // ANTLR counts code points, not UTF-16 units
    const u = codeUnitOffsets(input);
    const parser = flink.createParser(input, (_parseError, original) => {
      first ??= {
        offset: u((lineStarts[original.line - 1] ?? 0) + original.charPositionInLine),
        message: original.msg,
      };
    });
    const listener: AntlrErrorListener = {
      syntaxError(recognizer, offendingSymbol, line, column, msg) {
        if (first !== undefined) return;
        const offset = offendingSymbol !== null && offendingSymbol.type !== -1
          ? offendingSymbol.start
          : (lineStarts[line - 1] ?? 0) + column;
        const symbol = offendingSymbol === null || offendingSymbol.type === -1
          ? ""
          : recognizer.vocabulary.getSymbolicName(offendingSymbol.type) ?? "";
        first = {
          offset: u(offset),
          message: describe(recognizer, offendingSymbol, msg),
          ...(symbol.startsWith("KW_") ? { keyword: offendingSymbol!.text ?? "" } : {}),
        };
      },
      reportAmbiguity() {},
      reportAttemptingFullContext() {},
      reportContextSensitivity() {},
    };
    parser.removeErrorListeners();
    parser.addErrorListener(listener);
    parser.buildParseTrees = true;
    parser.interpreter.predictionMode = predictionMode;
    const root = parser.program();
    if (first !== undefined) return first;
    const names = parser.ruleNames;
    const vocabulary = parser.vocabulary;
    const convert = (node: AntlrTree, next: number): PNode => {
      if (node.symbol !== undefined) {
        const t = node.symbol;
        return {
          rule: null,
          token: vocabulary.getSymbolicName(t.type) ?? String(t.type),
          text: t.text ?? "",
          start: u(t.start),
          end: u(t.type === -1 ? t.start : t.stop + 1),
        };
      }
      const children: PNode[] = [];
      let at = node.start == null ? next : u(node.start.start);
      for (const child of node.children ?? []) {
        const c = convert(child, at);
        children.push(c);
        at = c.end;
      }
      const start = children[0]?.start ?? at;
      const end = children.length === 0 ? start : children[children.length - 1]!.end;
      return { rule: names[node.ruleIndex ?? -1] ?? "?", children, start, end };
    };
    return convert(root, 0) as RuleNode;
  }
}

/**
 * The message of a syntax error: what was found (ANTLR's "mismatched input
 * 'X'" or "extraneous input 'X'"; "unexpected 'X'" where ANTLR says "no
 * viable alternative at input <whole prefix>") and what was expected there,
 * summarized (see {@link summarizeExpected}).
 */
function describe(recognizer: AntlrRecognizer, token: AntlrToken | null, msg: string): string {
  const eof = token !== null && token.type === -1;
  const found = token === null ? null : eof ? "end of input" : `'${token.text ?? ""}'`;
  const listed = /^(.*?)\s*expecting\s+(\{.*\}|\S+)\s*$/s.exec(msg);
  let head = listed === null ? msg : listed[1]!;
  if ((/^no viable alternative/.test(head) || /failed predicate/.test(head)) && found !== null) {
    head = `unexpected ${found}`;
  }
  head = head.replace("input '<EOF>'", "end of input");
  if (eof) head += " (the statement is incomplete)";
  if (token !== null && /^['"`]$/.test(token.text ?? "")) {
    head += " (a quote that is never closed?)";
  }
  let expected: string[] = [];
  if (listed !== null) {
    const list = listed[2]!;
    expected = list.startsWith("{") ? list.slice(1, -1).split(", ") : [list];
  } else if (recognizer.getExpectedTokens !== undefined) {
    try {
      expected = recognizer.getExpectedTokens().toArray()
        .map((t) => t === -1 ? "<EOF>" : recognizer.vocabulary.getDisplayName(t));
    } catch {
      expected = [];
    }
  }
  const summary = summarizeExpected(expected);
  return summary === "" ? head : `${head}; expecting ${summary}`;
}

const TOKEN_WORDS: Readonly<Record<string, string>> = {
  "<EOF>": "end of input",
  EOF: "end of input",
  ID_LITERAL: "",
  BIT_STRING: "",
  DIG_LITERAL: "a number",
  REAL_LITERAL: "a number",
  STRING_LITERAL: "a 'string' or a `name`",
};

/**
 * A readable list of expected tokens: grammar token names become words
 * ("a number"), and when a name is among them, the name and the hundreds
 * of keywords that can also start one or an expression (function names,
 * non-reserved words, and the follow set ANTLR adds at an error) become
 * "an expression or name"; at most 12 items are shown.
 */
function summarizeExpected(names: readonly string[]): string {
  const nameExpected = names.includes("ID_LITERAL");
  const out: string[] = [];
  let folded = 0;
  for (const n of names) {
    // ANTLR's set at a failed decision also holds what could follow the
    // enclosing rule; where a name is expected, the end is not the point.
    if (nameExpected && (n === "<EOF>" || n === "EOF" || n === "';'")) continue;
    const word = TOKEN_WORDS[n];
    if (word !== undefined) {
      if (word !== "" && !out.includes(word)) out.push(word);
      continue;
    }
    const keyword = /^'([A-Z_]+)'$/.exec(n)?.[1];
    if (nameExpected && keyword !== undefined) {
      folded += 1;
      continue;
    }
    out.push(n);
  }
  if (nameExpected) out.unshift(folded > 0 ? "an expression or name" : "a name");
  if (out.length <= MAX_EXPECTED) return out.join(", ");
  return `${out.slice(0, MAX_EXPECTED).join(", ")} (or ${out.length - MAX_EXPECTED} more)`;
}

/** The code-point offset where each line starts. */
function lineOffsets(text: string): number[] {
  const starts = [0];
  let i = 0;
  for (const ch of text) {
    i += 1;
    if (ch === "\n") starts.push(i);
  }
  return starts;
}
