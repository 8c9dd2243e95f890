/**
 * Translates the FlinkSQL grammar's statements (`program` →
 * `singleStatement`s) into `sql_ast.ts`'s {@link Statement}s: CREATE
 * [TEMPORARY] TABLE, CREATE [TEMPORARY] VIEW, INSERT INTO ... SELECT /
 * VALUES, SELECT, EXPLAIN and SET. Every other statement the grammar knows
 * (SHOW, DROP, ALTER, USE, CREATE FUNCTION, STATEMENT SET...) is refused
 * with a {@link SqlParseError} naming it and where it starts.
 *
 * What CREATE TABLE accepts: physical columns of the types in `types.ts`,
 * computed columns (`c AS expr`), one `WATERMARK FOR c AS expr`, a primary
 * key (`PRIMARY KEY (a, b) NOT ENFORCED`, or on one column), comments
 * (documentation only, dropped), `NULL` (the default) and `WITH` options
 * (keys and values as strings). Refused: metadata columns, `NOT NULL`,
 * `IF NOT EXISTS`, `PARTITIONED BY`, `LIKE`, `CREATE TABLE ... AS`.
 *
 * @module
 */

import type {
  ColumnDefinition,
  Expr,
  SelectQuery,
  Statement,
  WatermarkDefinition,
} from "../sql_ast.ts";
import type { PNode, RuleNode } from "./parse_tree.ts";
import { translateQuery } from "./translate_query.ts";
import {
  child,
  children,
  identifierName,
  isRule,
  isToken,
  nameParts,
  need,
  stringValue,
  token,
  type TranslateContext,
} from "./translate_context.ts";
import { translateExpr } from "./translate_expr.ts";
import { dataType } from "./translate_literal.ts";

/**
 * Translates a whole `program`.
 * @returns the statements, in order.
 * @throws {SqlParseError} for what `sql_ast.ts` cannot express.
 */
export function translateProgram(ctx: TranslateContext, program: RuleNode): Statement[] {
  const statements = children(program, "singleStatement");
  // The grammar makes the `;` after a statement optional; Flink does not.
  statements.forEach((s, i) => {
    const next = statements[i + 1];
    if (
      next !== undefined && child(s, "sqlStatement") !== undefined &&
      token(s, "SEMICOLON") === undefined
    ) {
      ctx.fail(
        next,
        `expected ';' before ${firstWords(ctx, next)} (statements are separated by ';')`,
      );
    }
  });
  return statements
    .map((s) => child(s, "sqlStatement"))
    .filter((s): s is RuleNode => s !== undefined)
    .map((s) => statement(ctx, s));
}

function statement(ctx: TranslateContext, node: RuleNode): Statement {
  const inner = node.children[0] as RuleNode;
  switch (inner.rule) {
    case "ddlStatement":
      return ddl(ctx, inner.children[0] as RuleNode);
    case "dmlStatement":
      return dml(ctx, inner);
    case "explainStatement":
      return explain(ctx, inner);
    case "setStatement":
      return set(ctx, inner);
    default:
      return ctx.unsupported(inner, `the statement ${firstWords(ctx, inner)}`);
  }
}

/** The first two words of a statement, upper-cased, for messages. */
function firstWords(ctx: TranslateContext, node: PNode): string {
  return ctx.text(node).split(/\s+/).slice(0, 2).join(" ").toUpperCase();
}

function ddl(ctx: TranslateContext, node: RuleNode): Statement {
  if (node.rule === "createView") return createView(ctx, node);
  if (node.rule === "createTable") {
    const simple = child(node, "simpleCreateTable");
    if (simple === undefined) return ctx.unsupported(node, "CREATE TABLE ... AS SELECT");
    return createTable(ctx, simple);
  }
  return ctx.unsupported(node, `the statement ${firstWords(ctx, node)}`);
}

function createTable(ctx: TranslateContext, node: RuleNode): Statement {
  const ifNotExists = child(node, "ifNotExists");
  if (ifNotExists !== undefined) return ctx.unsupported(ifNotExists, "IF NOT EXISTS");
  for (
    const [rule, feature] of [
      ["partitionDefinition", "PARTITIONED BY"],
      ["likeDefinition", "CREATE TABLE ... LIKE"],
      ["selfDefinitionClause", "PERIOD FOR SYSTEM_TIME"],
    ] as const
  ) {
    const found = child(node, rule);
    if (found !== undefined) return ctx.unsupported(found, feature);
  }
  const name = nameParts(ctx, need(node, "tablePathCreate")).join(".");
  const columns: ColumnDefinition[] = [];
  let primaryKey: string[] | null = null;
  const setKey = (at: PNode, key: string[]) => {
    if (primaryKey !== null) ctx.fail(at, `table ${name} has more than one PRIMARY KEY`);
    primaryKey = key;
  };
  for (const definition of children(node, "columnOptionDefinition")) {
    const column = definition.children[0] as RuleNode;
    const columnName = columnNameOf(ctx, need(column, "columnNameCreate"));
    if (columns.some((c) => c.name === columnName)) {
      ctx.fail(column, `table ${name} has two columns named ${columnName}`);
    }
    if (column.rule === "metadataColumnDefinition") {
      return ctx.unsupported(column, `the metadata column ${columnName}`);
    }
    if (column.rule === "computedColumnDefinition") {
      const expr = translateExpr(ctx, need(column, "computedColumnExpression"));
      columns.push({ name: columnName, type: null, computed: expr });
      continue;
    }
    const type = dataType(ctx, need(column, "columnType"), `column ${columnName}`);
    const constraint = child(column, "columnConstraint");
    if (constraint !== undefined) {
      if (token(constraint, "KW_PRIMARY") !== undefined) {
        if (token(constraint, "KW_ENFORCED") === undefined) {
          ctx.fail(
            constraint,
            `PRIMARY KEY of ${columnName} must be NOT ENFORCED (Flink does not enforce keys)`,
          );
        }
        setKey(constraint, [columnName]);
      } else if (token(constraint, "KW_NOT") !== undefined) {
        return ctx.unsupported(constraint, `NOT NULL (column ${columnName})`);
      }
    }
    columns.push({ name: columnName, type, computed: null });
  }
  const constraint = child(node, "tableConstraint");
  if (constraint !== undefined) {
    const list = need(constraint, "columnNameList");
    setKey(constraint, children(list, "columnName").map((c) => nameParts(ctx, c).join(".")));
  }
  const watermarkNode = child(node, "watermarkDefinition");
  let watermark: WatermarkDefinition | null = null;
  if (watermarkNode !== undefined) {
    const columnExpr = translateExpr(ctx, need(watermarkNode, "columnName"));
    if (columnExpr.k !== "column" || columnExpr.table !== null) {
      return ctx.fail(watermarkNode, "WATERMARK FOR needs a column of this table");
    }
    watermark = {
      column: columnExpr.name,
      expr: translateExpr(ctx, need(watermarkNode, "expression")),
      at: watermarkNode.start,
    };
  }
  return {
    k: "createTable",
    name,
    columns,
    watermark,
    primaryKey,
    options: options(ctx, need(node, "withOption")),
    at: node.start,
  };
}

function columnNameOf(ctx: TranslateContext, node: RuleNode): string {
  const uid = child(node, "uid");
  const parts = uid === undefined ? [] : nameParts(ctx, uid);
  if (parts.length !== 1) return ctx.fail(node, `${ctx.text(node)} is not a column name`);
  return parts[0]!;
}

/** `WITH ('k' = 'v', ...)` as strings; a key twice or without a value is an error. */
function options(ctx: TranslateContext, node: RuleNode): Record<string, string> {
  const out: Record<string, string> = {};
  for (const property of children(need(node, "tablePropertyList"), "tableProperty")) {
    const [key, value] = property_(ctx, property);
    if (value === null) return ctx.fail(property, `the option '${key}' has no value`);
    if (Object.hasOwn(out, key)) return ctx.fail(property, `the option '${key}' is given twice`);
    out[key] = value;
  }
  return out;
}

/** A `tableProperty`'s key and value (`null` when it has none). */
function property_(ctx: TranslateContext, node: RuleNode): [string, string | null] {
  const keyNode = need(node, "tablePropertyKey");
  const keyText = ctx.text(keyNode);
  const key = keyText.startsWith("'")
    ? stringValue(ctx, keyNode)
    : keyText.startsWith("`")
    ? identifierName(ctx, keyNode)
    : keyText.startsWith('"')
    ? ctx.fail(keyNode, `${keyText}: write option keys in single quotes`)
    : keyText;
  const valueNode = child(node, "tablePropertyValue");
  if (valueNode === undefined) return [key, null];
  const valueText = ctx.text(valueNode);
  const value = valueText.startsWith("'")
    ? stringValue(ctx, valueNode)
    : /^["`]/.test(valueText)
    ? ctx.fail(valueNode, `${valueText}: write option values in single quotes`)
    : valueText;
  return [key, value];
}

function createView(ctx: TranslateContext, node: RuleNode): Statement {
  const ifNotExists = child(node, "ifNotExists");
  if (ifNotExists !== undefined) return ctx.unsupported(ifNotExists, "IF NOT EXISTS");
  const columns = child(node, "columnNameList");
  if (columns !== undefined) return ctx.unsupported(columns, "a column list in CREATE VIEW");
  return {
    k: "createView",
    name: nameParts(ctx, need(node, "viewPathCreate")).join("."),
    query: translateQuery(ctx, need(node, "queryStatement")),
    at: node.start,
  };
}

function dml(ctx: TranslateContext, node: RuleNode): Statement {
  const query = child(node, "queryStatement");
  if (query !== undefined) {
    return { k: "select", query: translateQuery(ctx, query), at: query.start };
  }
  const insert = need(node, "insertStatement");
  const simple = child(insert, "insertSimpleStatement");
  if (simple === undefined) {
    return ctx.unsupported(insert, "STATEMENT SET (several INSERTs in one job)");
  }
  return insertStatement(ctx, simple);
}

function insertStatement(ctx: TranslateContext, node: RuleNode): Statement {
  if (token(node, "KW_OVERWRITE") !== undefined) return ctx.unsupported(node, "INSERT OVERWRITE");
  const partition = child(node, "insertPartitionDefinition");
  if (partition !== undefined) return ctx.unsupported(partition, "INSERT ... PARTITION");
  const columns = child(node, "columnNameList");
  if (columns !== undefined) return ctx.unsupported(columns, "INSERT INTO with a column list");
  const table = nameParts(ctx, need(node, "tablePath")).join(".");
  const at = node.start;
  const values = child(node, "valuesDefinition");
  if (values !== undefined) {
    const rows = children(values, "valuesRowDefinition").map((row) =>
      children(row, "valueDefinition").map((v) => translateExpr(ctx, v))
    );
    return { k: "insertValues", table, rows, at };
  }
  const query = need(node, "queryStatement");
  const valuesClause = child(query, "valuesClause");
  if (valuesClause !== undefined) {
    const rows: Expr[][] = children(valuesClause, "expression").map((e) => [translateExpr(ctx, e)]);
    return { k: "insertValues", table, rows, at };
  }
  const select: SelectQuery = translateQuery(ctx, query);
  return { k: "insertSelect", table, query: select, at };
}

function explain(ctx: TranslateContext, node: RuleNode): Statement {
  const details = child(node, "explainDetails");
  for (const detail of details === undefined ? [] : children(details, "explainDetail")) {
    if (!isToken(detail.children[0], "KW_CHANGELOG_MODE")) {
      return ctx.unsupported(
        detail,
        `EXPLAIN ${ctx.text(detail).toUpperCase()} (only CHANGELOG_MODE)`,
      );
    }
  }
  const inner = child(node, "dmlStatement") ?? child(node, "insertSimpleStatement");
  if (inner === undefined) return ctx.unsupported(node, "EXPLAIN of a STATEMENT SET");
  const statement = isRule(inner, "dmlStatement") ? dml(ctx, inner) : insertStatement(ctx, inner);
  return { k: "explain", statement, at: node.start };
}

function set(ctx: TranslateContext, node: RuleNode): Statement {
  const property = child(node, "tableProperty");
  if (property === undefined) return { k: "set", key: null, value: null, at: node.start };
  const [key, value] = property_(ctx, property);
  return { k: "set", key, value, at: node.start };
}
