/**
 * Cutting SQL text into statements for `weir sql`: a script, or the lines a
 * REPL reads one by one, ends each statement with `;` (Flink's SQL client
 * does the same). A `;` inside a string literal (`'...'`, with `''` for a
 * quote), a quoted identifier (`"..."` or `` `...` ``) or a comment (`--`
 * to the end of the line, `/* ... *\/`) does not end a statement. Pure: no
 * I/O.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StatementReader } from "./_sql_statements.ts";
 *
 * const reader = new StatementReader();
 * assert.deepEqual(reader.push("SELECT 'a;b' -- c;\n"), []);
 * assert.deepEqual(reader.push("FROM t; SET 'x' = '1';\n"), [
 *   { text: "SELECT 'a;b' -- c;\nFROM t", line: 1, offset: 0 },
 *   { text: "SET 'x' = '1'", line: 2, offset: 27 },
 * ]);
 * assert.equal(reader.pending, "");
 * ```
 *
 * @module
 */

/** One complete statement, without its `;`, and where it starts. */
export interface SqlStatementText {
  /** The statement's text, trimmed, without the closing `;`. */
  readonly text: string;
  /** The 1-based line of its first character in everything pushed so far. */
  readonly line: number;
  /** The 0-based offset of its first character in everything pushed so far. */
  readonly offset: number;
}

type Mode = "code" | "string" | "doubleQuoted" | "backQuoted" | "lineComment" | "blockComment";

/**
 * Reads statements from text pushed in pieces (whole scripts or single
 * lines): each `push` returns the statements it completed.
 */
export class StatementReader {
  #buffer = "";
  #mode: Mode = "code";
  /** Line of the buffer's first character. */
  #line = 1;
  /** Offset of the buffer's first character in everything pushed. */
  #offset = 0;

  /** The text of the statement not yet ended by `;`, trimmed (`""` when none). */
  get pending(): string {
    return this.#buffer.trim();
  }

  /** Whether the text read so far ends inside a string, quoted identifier or block comment. */
  get inQuote(): boolean {
    return this.#mode !== "code" && this.#mode !== "lineComment";
  }

  /**
   * Adds text.
   * @returns the statements it completed, in order (empty ones, `;;`, skipped).
   */
  push(text: string): SqlStatementText[] {
    const out: SqlStatementText[] = [];
    let start = 0;
    const all = this.#buffer + text;
    let i = this.#buffer.length;
    while (i < all.length) {
      const c = all[i]!;
      const next = all[i + 1];
      switch (this.#mode) {
        case "code":
          if (c === "'") this.#mode = "string";
          else if (c === '"') this.#mode = "doubleQuoted";
          else if (c === "`") this.#mode = "backQuoted";
          else if (c === "-" && next === "-") {
            this.#mode = "lineComment";
            i++;
          } else if (c === "/" && next === "*") {
            this.#mode = "blockComment";
            i++;
          } else if (c === ";") {
            const raw = all.slice(start, i);
            const lead = raw.length - raw.trimStart().length;
            const line = this.#line + countLines(all.slice(0, start + lead));
            const stmt = raw.trim();
            if (stmt !== "") out.push({ text: stmt, line, offset: this.#offset + start + lead });
            start = i + 1;
          }
          break;
        case "string":
          if (c === "'") {
            if (next === "'") i++;
            else this.#mode = "code";
          }
          break;
        case "doubleQuoted":
          if (c === '"') this.#mode = "code";
          break;
        case "backQuoted":
          if (c === "`") this.#mode = "code";
          break;
        case "lineComment":
          if (c === "\n") this.#mode = "code";
          break;
        case "blockComment":
          if (c === "*" && next === "/") {
            this.#mode = "code";
            i++;
          }
          break;
      }
      i++;
    }
    this.#line += countLines(all.slice(0, start));
    this.#offset += start;
    this.#buffer = all.slice(start);
    return out;
  }
}

function countLines(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/**
 * Cuts a whole script into statements.
 * @returns the statements and the text after the last `;` (trimmed; `""`
 *   when the script ends with a `;`), which a script runner treats as a
 *   last statement.
 */
export function splitStatements(script: string): {
  readonly statements: SqlStatementText[];
  readonly rest: string;
} {
  const reader = new StatementReader();
  const statements = reader.push(script);
  return { statements, rest: reader.pending };
}

/** What kind of statement a text is, by its first keyword(s), comments skipped. */
export type StatementKind =
  | "select"
  | "insert"
  | "explain"
  | "create"
  | "set"
  | "other";

/** The kind of a statement text (see {@linkcode StatementKind}). */
export function statementKind(text: string): StatementKind {
  const code = text.replace(/--[^\n]*\n?/g, " ").replace(/\/\*[\s\S]*?\*\//g, " ").trimStart();
  const word = /^\(*\s*([A-Za-z]+)/.exec(code)?.[1]?.toUpperCase();
  switch (word) {
    case "SELECT":
    case "WITH":
    case "VALUES":
      return "select";
    case "INSERT":
      return "insert";
    case "EXPLAIN":
      return "explain";
    case "CREATE":
      return "create";
    case "SET":
    case "RESET":
      return "set";
    default:
      return "other";
  }
}
