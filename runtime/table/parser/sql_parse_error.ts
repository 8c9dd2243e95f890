/**
 * The error of SQL that does not parse, and positions in a script: shared by
 * the parser's files and re-exported by `parser.ts`.
 *
 * @module
 */

/** A place in a script: 1-based line and column. */
export interface SourcePosition {
  /** 1-based line. */
  readonly line: number;
  /** 1-based column. */
  readonly column: number;
}

/**
 * SQL that cannot be parsed, or parses into something Weir's syntax tree
 * (`sql_ast.ts`) cannot express. The message names the line, the column and
 * what was expected or which feature is missing.
 */
export class SqlParseError extends Error {
  /** Always `"SqlParseError"`. */
  override readonly name = "SqlParseError";
  /** Where the problem is. */
  readonly position: SourcePosition;
  /**
   * Creates the error.
   * @param message what is wrong (the position is prefixed).
   * @param position where.
   */
  constructor(message: string, position: SourcePosition) {
    super(`SQL parse error at line ${position.line}, column ${position.column}: ${message}`);
    this.position = position;
  }
}

/**
 * The 1-based line and column of `offset` in `text` (offsets past the end
 * count as the end).
 */
export function positionOf(text: string, offset: number): SourcePosition {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split("\n");
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}
