/**
 * What the translation from the FlinkSQL parse tree (`parse_tree.ts`) to
 * Weir's syntax tree (`sql_ast.ts`) shares: reading rule and token nodes,
 * unquoting identifiers and strings, and refusing what `sql_ast.ts` cannot
 * express with a {@link SqlParseError} at the node's position.
 *
 * @module
 */

import type { PNode, RuleNode, SessionRewrite, TokenNode } from "./parse_tree.ts";
import { positionOf, SqlParseError } from "./sql_parse_error.ts";

/** The script being translated and the ways to read its parse tree. */
export class TranslateContext {
  /** The whole script (offsets in nodes are offsets in it). */
  readonly script: string;
  /** SESSION windows rewritten before parsing, by the offset of `SESSION`. */
  readonly sessions: ReadonlyMap<number, SessionRewrite>;
  /** Keyword function names replaced by placeholders before parsing, by offset. */
  readonly functions: ReadonlyMap<number, string>;
  /** Offsets of the `*` that stands for an aggregate's `FILTER (WHERE ...)`. */
  readonly filters: ReadonlySet<number>;

  /**
   * Creates the context of one script.
   * @param script the whole script.
   * @param parsed what `parseTree` rewrote.
   */
  constructor(
    script: string,
    parsed: {
      readonly sessions: ReadonlyMap<number, SessionRewrite>;
      readonly functions: ReadonlyMap<number, string>;
      readonly filters: ReadonlySet<number>;
    },
  ) {
    this.script = script;
    this.sessions = parsed.sessions;
    this.functions = parsed.functions;
    this.filters = parsed.filters;
  }

  /** Throws a {@link SqlParseError} with `message` at `node`'s start (or an offset). */
  fail(at: PNode | number, message: string): never {
    const offset = typeof at === "number" ? at : at.start;
    throw new SqlParseError(message, positionOf(this.script, offset));
  }

  /** Refuses `feature` at `node`: "<feature> is not supported". */
  unsupported(at: PNode | number, feature: string): never {
    return this.fail(at, `${feature} is not supported`);
  }

  /** The script's text of `node`, as written. */
  text(node: PNode): string {
    return this.script.slice(node.start, node.end);
  }
}

/** Whether `node` is a rule node named `rule`. */
export function isRule<N extends string>(
  node: PNode | undefined,
  rule: N,
): node is RuleNode & { readonly rule: N } {
  return node !== undefined && node.rule === rule;
}

/** Whether `node` is a token named `token`. */
export function isToken<N extends string>(
  node: PNode | undefined,
  token: N,
): node is TokenNode & { readonly token: N } {
  return node !== undefined && node.rule === null && node.token === token;
}

/** The children of a rule node (none for a token). */
export function kids(node: PNode): readonly PNode[] {
  return node.rule === null ? [] : node.children;
}

/** The first child rule node named `rule`, or `undefined`. */
export function child(node: PNode, rule: string): RuleNode | undefined {
  return kids(node).find((c): c is RuleNode => c.rule === rule);
}

/** Every child rule node named `rule`. */
export function children(node: PNode, rule: string): RuleNode[] {
  return kids(node).filter((c): c is RuleNode => c.rule === rule);
}

/** The first child token named `token`, or `undefined`. */
export function token(node: PNode, name: string): TokenNode | undefined {
  return kids(node).find((c): c is TokenNode => c.rule === null && c.token === name);
}

/** The first child rule node named `rule`; a translation bug when missing. */
export function need(node: PNode, rule: string): RuleNode {
  const found = child(node, rule);
  if (found === undefined) {
    throw new Error(
      `SQL parser: ${node.rule ?? "token"} has no ${rule} (a bug in Weir's translation)`,
    );
  }
  return found;
}

/**
 * The name an `identifier` (or `uid` part) denotes: back-quoted names are
 * unquoted (`` `user` `` is `user`, a doubled back quote is one), others are
 * kept as written (Flink's identifiers are case-sensitive).
 * @throws {SqlParseError} for a name in single or double quotes.
 */
export function identifierName(ctx: TranslateContext, node: PNode): string {
  const text = ctx.text(node).trim();
  if (text.startsWith("`")) return text.slice(1, -1).replaceAll("``", "`");
  if (text.startsWith("'") || text.startsWith('"')) {
    return ctx.fail(
      node,
      `${text} is not a name: double and single quotes are not allowed here; quote names with back quotes (\`name\`)`,
    );
  }
  return text;
}

/** The parts of a dotted name (`uid`, `tablePath`...: identifiers separated by dots). */
export function nameParts(ctx: TranslateContext, node: PNode): string[] {
  const ids = collectIdentifiers(node);
  return ids.map((id) => identifierName(ctx, id));
}

function collectIdentifiers(node: PNode): PNode[] {
  if (node.rule === "identifier") return [node];
  if (node.rule === null) return node.token === "DOT" ? [] : [node];
  return node.children.flatMap(collectIdentifiers);
}

/**
 * The value of a single-quoted SQL string literal's text (`'it''s'` is
 * `it's`; Flink's SQL has no backslash escapes).
 * @throws {SqlParseError} for double-quoted text or a back-quoted name in
 *   a place where a string is needed.
 */
export function stringValue(ctx: TranslateContext, node: PNode): string {
  const text = ctx.text(node).trim();
  if (!text.startsWith("'")) {
    return ctx.fail(
      node,
      `expected a string in single quotes, got ${text} (double quotes and back quotes are for names)`,
    );
  }
  return text.slice(1, -1).replaceAll("''", "'");
}
