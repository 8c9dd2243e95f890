/**
 * Planning of a user-defined table function joined to the rows on its
 * left (Flink's `Correlate`, from `LogicalCorrelate` of
 * `LATERAL TABLE(f(...))`):
 *
 * ```sql
 * SELECT id, word FROM docs, LATERAL TABLE(split(body)) AS T(word, len)
 * SELECT id, word FROM docs CROSS JOIN LATERAL TABLE(split(body)) AS T(word, len)
 * SELECT id, word FROM docs LEFT JOIN LATERAL TABLE(split(body)) AS T(word, len) ON TRUE
 * ```
 *
 * ## Semantics
 *
 * - Per left row, the function is called with the arguments evaluated over
 *   that row; each row it yields is appended to the left row's fields.
 * - INNER (comma, `CROSS JOIN`, `JOIN ... ON cond`): a left row the
 *   function yields nothing for gives nothing; `ON` (or the WHERE of a
 *   comma join) filters the joined rows.
 * - LEFT: a left row the function yields nothing for gives one row padded
 *   with NULLs; `ON TRUE` is the only condition (as in Flink).
 * - Stateless: each output row carries its input row's kind, so an updating
 *   input gives an updating output (the function is deterministic, so a
 *   retraction yields the rows its insertion yielded). The node's
 *   changelog mode is its input's.
 * - Output columns: the left's, then the function's, renamed by
 *   `AS T(a, b, ...)` (their count must match) and qualified by `T`.
 *
 * RIGHT and FULL joins with a table function are refused, as in Flink.
 * Pure code; `translate_lateral.ts` runs the node.
 *
 * @module
 */

import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import { currentFunctionCatalog } from "./function_catalog.ts";
import type { PlannerContext, PlanNode, Relation } from "./plan.ts";
import type { Expr, TableRef } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";
import type { Column } from "./types.ts";
import { type TableFunctionCall, tableFunctionCall } from "./udf.ts";

/** A table function joined to each row of its input (Flink's `Correlate`). */
export interface CorrelateNode {
  /** The node kind. */
  readonly op: "Correlate";
  /** The left input. */
  readonly input: PlanNode;
  /** The function's name, upper-case. */
  readonly fn: string;
  /** Its arguments, over the input's rows. */
  readonly args: readonly CompiledExpr[];
  /** The planned call: its rows per argument list. */
  readonly call: TableFunctionCall;
  /** `INNER` or `LEFT`. */
  readonly joinType: "INNER" | "LEFT";
  /** A filter over the output row (INNER only), or `null`. */
  readonly condition: CompiledExpr | null;
  /** The output columns: the input's, then the function's. */
  readonly columns: readonly Column[];
  /** The input's mode. */
  readonly mode: ChangelogMode;
}

const isTrue = (e: Expr | null) => e === null || (e.k === "literal" && e.value === true);

/**
 * Plans `left [CROSS|INNER|LEFT] JOIN LATERAL TABLE(f(...)) AS T(...) [ON ...]`.
 * @param ref the join whose right side is the lateral table function.
 * @param planInput plans the left side.
 * @throws {PlanningError} for an unknown function or one that is not a
 *   table function, arguments that do not fit, a column alias list of the
 *   wrong length, RIGHT/FULL joins, or LEFT JOIN with a condition other than TRUE.
 */
export function planLateralJoin(
  ref: Extract<TableRef, { k: "join" }>,
  context: PlannerContext,
  planInput: (ref: TableRef, context: PlannerContext) => Relation,
): Relation {
  const lateral = ref.right;
  if (lateral.k !== "lateral") {
    throw new PlanningError(`planLateralJoin needs a LATERAL TABLE on the right of the join`);
  }
  const where = context.locate(lateral.fn);
  if (ref.kind === "RIGHT" || ref.kind === "FULL") {
    throw new PlanningError(
      `${ref.kind} JOIN with the table function ${lateral.fn} is not supported (only INNER, CROSS and LEFT JOIN LATERAL)${where}`,
    );
  }
  if (ref.kind === "LEFT" && !isTrue(ref.on)) {
    throw new PlanningError(
      `LEFT JOIN LATERAL TABLE(${lateral.fn}(...)) takes only ON TRUE, got ON ${
        exprText(ref.on!)
      }${where}`,
    );
  }
  const found = currentFunctionCatalog().lookup(lateral.fn);
  if (found === undefined) {
    throw new PlanningError(
      `No table function named ${lateral.fn} (register one with createTemporarySystemFunction)${where}`,
    );
  }
  if (found.kind !== "table") {
    throw new PlanningError(
      `${lateral.fn} is a ${found.kind} function, not a table function: LATERAL TABLE(...) needs one${where}`,
    );
  }
  const left = planInput(ref.left, context);
  const leftScope: Scope = {
    columns: left.node.columns,
    qualifiers: left.qualifiers,
    inputName: "the left input of LATERAL TABLE",
    locate: context.locate,
    aggregatesAllowed: false,
  };
  const args = lateral.args.map((a) => compileExpr(a, leftScope));
  let call: TableFunctionCall;
  try {
    call = tableFunctionCall(found.name, found.definition, args.map((a) => a.type));
  } catch (error) {
    if (error instanceof PlanningError) throw new PlanningError(`${error.message}${where}`);
    throw error;
  }
  const names = lateral.columnAliases.length === 0
    ? call.columns.map((c) => c.name)
    : lateral.columnAliases;
  if (names.length !== call.columns.length) {
    throw new PlanningError(
      `${lateral.alias ?? lateral.fn}(${
        names.join(", ")
      }) names ${names.length} column(s), but ${found.name} yields ${call.columns.length} (${
        call.columns.map((c) => c.name).join(", ")
      })${where}`,
    );
  }
  const fnColumns = call.columns.map((c, i) => ({ name: names[i]!, type: c.type }));
  const columns = [...left.node.columns, ...fnColumns];
  const fnQualifier = lateral.alias === null ? [] : [lateral.alias];
  const qualifiers = [...left.qualifiers, ...fnColumns.map(() => fnQualifier)];
  const condition = ref.kind === "LEFT" || isTrue(ref.on) ? null : compileExpr(ref.on!, {
    columns,
    qualifiers,
    inputName: "the join with LATERAL TABLE",
    locate: context.locate,
    aggregatesAllowed: false,
  });
  if (condition !== null && condition.type.family !== "BOOLEAN") {
    throw new PlanningError(
      `ON needs a BOOLEAN condition, got ${condition.type.name} (${condition.text})${where}`,
    );
  }
  const node: CorrelateNode = {
    op: "Correlate",
    input: left.node,
    fn: found.name,
    args,
    call,
    joinType: ref.kind === "LEFT" ? "LEFT" : "INNER",
    condition,
    columns,
    mode: left.node.mode,
  };
  return { node, qualifiers, window: null };
}

/** A Correlate node as Flink's plan prints it (without the mode). */
export function describeCorrelate(node: CorrelateNode): string {
  return `Correlate(invocation=[${node.fn}(${node.args.map((a) => a.text).join(", ")})], select=[${
    node.columns.map((c) => c.name).join(", ")
  }], joinType=[${node.joinType}]${
    node.condition === null ? "" : `, condition=[${node.condition.text}]`
  })`;
}
