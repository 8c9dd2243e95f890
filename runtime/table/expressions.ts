/**
 * Compiles SQL expressions (`sql_ast.ts`) into functions of a row's fields,
 * with their result types checked at planning time (Flink's code-generated
 * `Calc` expressions, here closures).
 *
 * ## Semantics
 *
 * - Three-valued logic: a comparison with NULL is NULL; `AND`/`OR`/`NOT` as
 *   SQL's truth tables; WHERE and HAVING keep a row only when TRUE.
 * - Arithmetic: NULL in gives NULL; `BIGINT op BIGINT` is BIGINT (integer
 *   division truncates toward zero, as Flink's); with a DOUBLE it is DOUBLE.
 *   Integer division or `%` by zero throws (Flink's `ArithmeticException`),
 *   which fails the job.
 * - Comparisons need both sides of one family (numbers with numbers,
 *   strings with strings...); anything else is a planning error.
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import { compareValues } from "./aggregates.ts";
import { exprText } from "./sql_text.ts";
import type { SqlValue } from "./row.ts";
import { compileCall, currentFunctionCatalog, type FunctionCatalog } from "./function_catalog.ts";
import { castFunction } from "./scalar_functions_cast.ts";
import { commonType } from "./scalar_function.ts";
import { timeAttributeMillis, timestampText } from "./time_attribute.ts";
import type { Expr } from "./sql_ast.ts";
import { type Column, type DataType, TYPES } from "./types.ts";

/** An expression compiled against an input schema. */
export interface CompiledExpr {
  /** Its value for a row's fields. */
  readonly evaluate: (fields: readonly SqlValue[]) => SqlValue;
  /** Its result type. */
  readonly type: DataType;
  /** Its SQL text, for plan descriptions. */
  readonly text: string;
}

/** What names mean while an expression is compiled. */
export interface Scope {
  /** The input's columns, by position. */
  readonly columns: readonly Column[];
  /** Names the input (`clicks`) in messages. */
  readonly inputName: string;
  /**
   * A whole subexpression that is already an input column (a GROUP BY key
   * or an aggregate's result after GROUP BY), by its SQL text.
   */
  readonly computed?: ReadonlyMap<string, number>;
  /** Where `name` first appears in the statement, for messages (`" at line 1, column 8"`). */
  readonly locate: (name: string) => string;
  /** Refuses an aggregate outside SELECT/HAVING of a grouped query, naming it. */
  readonly aggregatesAllowed: boolean;
  /**
   * Per column, the names that qualify it (`t.c`: its table's name or
   * alias). Absent: a qualifier is not checked. A name that more than one
   * column answers to is refused as ambiguous.
   */
  readonly qualifiers?: readonly (readonly string[])[];
  /**
   * Where function names resolve (built-ins and user-defined functions);
   * absent: the catalog of the planning call under way
   * (`function_catalog.ts`).
   */
  readonly functions?: FunctionCatalog;
}

const numeric = (t: DataType) => t.family === "BIGINT" || t.family === "DOUBLE";

/**
 * Compiles `expr` in `scope`.
 * @throws {PlanningError} for an unknown column, an unknown function, an
 *   aggregate where none is allowed, or operand types that do not fit,
 *   naming the expression and where it is.
 */
export function compileExpr(expr: Expr, scope: Scope): CompiledExpr {
  const text = exprText(expr);
  const hit = scope.computed?.get(text);
  if (hit !== undefined) {
    return {
      evaluate: (f) => f[hit] ?? null,
      type: scope.columns[hit]!.type,
      text: scope.columns[hit]!.name,
    };
  }
  const fail = (message: string, name: string): never => {
    throw new PlanningError(`${message}${scope.locate(name)}`);
  };
  switch (expr.k) {
    case "column": {
      const index = resolveColumn(expr, scope, fail);
      return { evaluate: (f) => f[index] ?? null, type: scope.columns[index]!.type, text };
    }
    case "literal": {
      const v = expr.value;
      const type = typeof v === "number"
        ? (Number.isInteger(v) ? TYPES.BIGINT : TYPES.DOUBLE)
        : typeof v === "boolean"
        ? TYPES.BOOLEAN
        : TYPES.STRING;
      return { evaluate: () => v, type, text };
    }
    case "not": {
      const inner = compileExpr(expr.expr, scope);
      if (inner.type.family !== "BOOLEAN") {
        fail(`NOT needs a BOOLEAN, got ${inner.type.name} in ${text}`, "NOT");
      }
      return {
        evaluate: (f) => {
          const v = inner.evaluate(f);
          return v === null ? null : !v;
        },
        type: TYPES.BOOLEAN,
        text,
      };
    }
    case "negate": {
      const inner = compileExpr(expr.expr, scope);
      if (!numeric(inner.type)) {
        fail(`unary minus needs a number, got ${inner.type.name} in ${text}`, "-");
      }
      return {
        evaluate: (f) => {
          const v = inner.evaluate(f);
          return v === null ? null : -Number(v);
        },
        type: inner.type,
        text,
      };
    }
    case "isNull": {
      const inner = compileExpr(expr.expr, scope);
      return {
        evaluate: (f) => (inner.evaluate(f) === null) !== expr.negated,
        type: TYPES.BOOLEAN,
        text,
      };
    }
    case "cast": {
      const inner = compileExpr(expr.expr, scope);
      const cast = castFunction(inner.type, expr.type);
      if (typeof cast === "string") return fail(`${cast} in ${text}`, "CAST");
      return { evaluate: (f) => cast(inner.evaluate(f)), type: expr.type, text };
    }
    case "case":
      return compileCase(expr, scope, text);
    case "call":
      return compileCall(expr, {
        catalog: scope.functions ?? currentFunctionCatalog(),
        compile: (e) => compileExpr(e, scope),
        fail,
        text,
      });
    case "aggregate":
      return fail(
        scope.aggregatesAllowed
          ? `${text} is neither a GROUP BY key nor an aggregate of this query`
          : `the aggregate ${text} is not allowed here (only in SELECT and HAVING)`,
        expr.fn === "COUNT_STAR" ? "COUNT" : expr.fn,
      );
    case "binary":
      return compileBinary(expr, scope, text, fail);
    case "interval":
      // A day-time interval is its length in milliseconds (Flink's
      // INTERVAL SECOND(3) is a BIGINT of milliseconds at run time too).
      return { evaluate: () => expr.millis, type: TYPES.BIGINT, text };
    case "in": {
      const probe = compileExpr(expr.expr, scope);
      const list = expr.list.map((e) => compileExpr(e, scope));
      return {
        evaluate(f) {
          const v = probe.evaluate(f);
          if (v === null) return null;
          let sawNull = false;
          for (const item of list) {
            const w = item.evaluate(f);
            if (w === null) sawNull = true;
            else if (w === v) return !expr.negated;
          }
          return sawNull ? null : expr.negated; // SQL's three-valued IN
        },
        type: TYPES.BOOLEAN,
        text,
      };
    }
    case "between": {
      const range: Expr = {
        k: "binary",
        op: "AND",
        left: { k: "binary", op: ">=", left: expr.expr, right: expr.low },
        right: { k: "binary", op: "<=", left: expr.expr, right: expr.high },
      };
      const inner = compileExpr(expr.negated ? { k: "not", expr: range } : range, scope);
      return { ...inner, text };
    }
    case "over":
      return fail(
        `the OVER aggregation ${text} is only allowed as a SELECT item that the planner turns into an OverAggregate, Rank or Deduplicate`,
        expr.fn,
      );
  }
}

/**
 * The position of column `expr` (`name` or `table.name`) in `scope`.
 * @throws {PlanningError} when no column or more than one answers to it.
 */
function resolveColumn(
  expr: Extract<Expr, { k: "column" }>,
  scope: Scope,
  fail: (message: string, name: string) => never,
): number {
  const qualifiers = scope.qualifiers;
  const hits: number[] = [];
  scope.columns.forEach((c, i) => {
    if (c.name !== expr.name) return;
    if (expr.table !== null && qualifiers !== undefined && !qualifiers[i]?.includes(expr.table)) {
      return;
    }
    hits.push(i);
  });
  const named = expr.table === null ? expr.name : `${expr.table}.${expr.name}`;
  if (hits.length === 0) {
    const repeated = (name: string) => scope.columns.filter((c) => c.name === name).length > 1;
    const known = scope.columns.map((c, i) => {
      const q = qualifiers?.[i]?.[0];
      return q === undefined || !repeated(c.name) ? c.name : `${q}.${c.name}`;
    });
    return fail(
      `Column '${named}' not found in ${scope.inputName} (columns: ${known.join(", ")})`,
      expr.name,
    );
  }
  if (hits.length > 1) {
    const sides = hits.map((i) => qualifiers?.[i]?.[0] ?? "?");
    return fail(
      `Column '${named}' is ambiguous: it is a column of ${sides.join(" and ")}; qualify it (e.g. ${
        sides[0]
      }.${expr.name})`,
      expr.name,
    );
  }
  return hits[0]!;
}

function compileCase(expr: Extract<Expr, { k: "case" }>, scope: Scope, text: string): CompiledExpr {
  const operand = expr.operand === null ? null : compileExpr(expr.operand, scope);
  const whens = expr.whens.map((w) => ({
    when: compileExpr(w.when, scope),
    then: compileExpr(w.then, scope),
  }));
  const otherwise = expr.otherwise === null ? null : compileExpr(expr.otherwise, scope);
  // The branches' common type (Flink's least restrictive type): a NULL
  // branch fits any, BIGINT and DOUBLE make DOUBLE, other mixes are refused.
  const branches = [
    ...expr.whens.map((w) => w.then),
    ...(expr.otherwise === null ? [] : [expr.otherwise]),
  ];
  const type = commonType(
    "CASE",
    [...whens.map((w) => w.then.type), ...(otherwise === null ? [] : [otherwise.type])],
    0,
    branches.map((b) => (b.k === "literal" ? b.value : undefined)),
  );
  if (typeof type === "string") {
    throw new PlanningError(
      `${
        type.replace(/argument (\d+) of CASE/, "branch $1 of CASE").replace(
          /argument (\d+)'s/,
          "branch $1's",
        )
      } in ${text}${scope.locate("CASE")}`,
    );
  }
  return {
    evaluate(f) {
      const subject = operand === null ? null : operand.evaluate(f);
      for (const w of whens) {
        const v = w.when.evaluate(f);
        const hit = operand === null
          ? v === true
          : v !== null && subject !== null && compareValues(subject, v) === 0;
        if (hit) return w.then.evaluate(f);
      }
      return otherwise === null ? null : otherwise.evaluate(f);
    },
    type,
    text,
  };
}

function compileBinary(
  expr: Extract<Expr, { k: "binary" }>,
  scope: Scope,
  text: string,
  fail: (message: string, name: string) => never,
): CompiledExpr {
  const op = expr.op;
  if (op === "LIKE" || op === "NOT LIKE") {
    const like: Expr = { k: "call", name: "LIKE", args: [expr.left, expr.right] };
    const inner = compileExpr(op === "LIKE" ? like : { k: "not", expr: like }, scope);
    return { ...inner, text };
  }
  const l = compileExpr(expr.left, scope);
  const r = compileExpr(expr.right, scope);
  if (op === "AND" || op === "OR") {
    if (l.type.family !== "BOOLEAN" || r.type.family !== "BOOLEAN") {
      fail(`${op} needs BOOLEAN operands, got ${l.type.name} and ${r.type.name} in ${text}`, op);
    }
    const and = op === "AND";
    return {
      evaluate(f) {
        const a = l.evaluate(f);
        if (and ? a === false : a === true) return a;
        const b = r.evaluate(f);
        if (and ? b === false : b === true) return b;
        return a === null || b === null ? null : and;
      },
      type: TYPES.BOOLEAN,
      text,
    };
  }
  if (op === "||") {
    return {
      evaluate(f) {
        const a = l.evaluate(f);
        const b = r.evaluate(f);
        return a === null || b === null ? null : String(a) + String(b);
      },
      type: TYPES.STRING,
      text,
    };
  }
  const comparison = ["=", "<>", "<", "<=", ">", ">="].includes(op);
  if (comparison) {
    // A NULL literal compares with anything (to NULL), as in Flink.
    const isNull = (e: Expr) => e.k === "literal" && e.value === null;
    const sameFamily = l.type.family === r.type.family || (numeric(l.type) && numeric(r.type)) ||
      isNull(expr.left) || isNull(expr.right);
    if (!sameFamily) {
      fail(`cannot compare ${l.type.name} with ${r.type.name} in ${text}`, op);
    }
    const test: (c: number) => boolean = op === "="
      ? (c) => c === 0
      : op === "<>"
      ? (c) => c !== 0
      : op === "<"
      ? (c) => c < 0
      : op === "<="
      ? (c) => c <= 0
      : op === ">"
      ? (c) => c > 0
      : (c) => c >= 0;
    return {
      evaluate(f) {
        const a = l.evaluate(f);
        const b = r.evaluate(f);
        return a === null || b === null ? null : test(compareValues(a, b));
      },
      type: TYPES.BOOLEAN,
      text,
    };
  }
  if (
    (op === "+" || op === "-") && l.type.family === "TIMESTAMP" && expr.right.k === "interval"
  ) {
    // TIMESTAMP +/- INTERVAL: a TIMESTAMP(3) again (not a time attribute).
    const sign = op === "+" ? 1 : -1;
    const column = exprText(expr.left);
    return {
      evaluate(f) {
        const a = l.evaluate(f);
        const b = r.evaluate(f);
        if (a === null || b === null) return null;
        return timestampText(timeAttributeMillis(a, column) + sign * (b as number));
      },
      type: TYPES.TIMESTAMP,
      text,
    };
  }
  if (!numeric(l.type) || !numeric(r.type)) {
    fail(`${op} needs numbers, got ${l.type.name} and ${r.type.name} in ${text}`, op);
  }
  const integral = l.type.family === "BIGINT" && r.type.family === "BIGINT";
  const apply = arithmetic(op, integral, text);
  return {
    evaluate(f) {
      const a = l.evaluate(f);
      const b = r.evaluate(f);
      return a === null || b === null ? null : apply(a as number, b as number);
    },
    type: integral ? TYPES.BIGINT : TYPES.DOUBLE,
    text,
  };
}

function arithmetic(op: string, integral: boolean, text: string): (a: number, b: number) => number {
  switch (op) {
    case "+":
      return (a, b) => a + b;
    case "-":
      return (a, b) => a - b;
    case "*":
      return (a, b) => a * b;
    case "/":
    case "%":
      return (a, b) => {
        if (integral && b === 0) throw new RangeError(`division by zero in ${text}`);
        if (op === "%") return a % b;
        return integral ? Math.trunc(a / b) : a / b;
      };
    default:
      throw new PlanningError(`the operator ${op} is not supported yet, in ${text}`);
  }
}
