import assert from "node:assert/strict";
import { PlanningError } from "./changelog_mode.ts";
import { compileExpr, type Scope } from "./expressions.ts";
import {
  BUILTIN_FUNCTION_CATALOG,
  currentFunctionCatalog,
  FunctionCatalog,
  withFunctionCatalog,
} from "./function_catalog.ts";
import type { Expr } from "./sql_ast.ts";
import { TYPES } from "./types.ts";
import { aggregateFunction, scalarFunction, tableFunction } from "./udf.ts";

const scope = (functions?: FunctionCatalog): Scope => ({
  columns: [
    { name: "name", type: TYPES.STRING },
    { name: "n", type: TYPES.BIGINT },
    { name: "ts", type: TYPES.TIMESTAMP },
    { name: "YEAR", type: TYPES.BIGINT },
  ],
  inputName: "table t",
  locate: () => " at line 1, column 8",
  aggregatesAllowed: false,
  ...(functions === undefined ? {} : { functions }),
});
const col = (name: string): Expr => ({ k: "column", table: null, name });
const lit = (value: string | number | boolean | null): Expr => ({ k: "literal", value });
const call = (name: string, ...args: Expr[]): Expr => ({ k: "call", name, args });
const row = ["Mary", 4, "2026-03-07 09:05:01.000", 1999];

const twice = scalarFunction({
  arguments: ["BIGINT"],
  result: "BIGINT",
  eval: (x) => (x === null ? null : Number(x) * 2),
});

Deno.test("a temporary system function shadows a built-in; a temporary function cannot", () => {
  const catalog = new FunctionCatalog();
  catalog.registerTemporarySystemFunction(
    "upper",
    scalarFunction({
      arguments: ["STRING"],
      result: "STRING",
      eval: (s) => `<${s}>`,
    }),
  );
  assert.equal(compileExpr(call("UPPER", col("name")), scope(catalog)).evaluate(row), "<Mary>");
  assert.equal(compileExpr(call("UPPER", col("name")), scope()).evaluate(row), "MARY");
  assert.throws(
    () => catalog.registerTemporaryFunction("lower", twice),
    (e) => e instanceof PlanningError && /LOWER|lower is a built-in function/.test(e.message),
  );
  catalog.registerTemporaryFunction("twice", twice);
  assert.equal(compileExpr(call("Twice", col("n")), scope(catalog)).evaluate(row), 8);
  assert.deepEqual(catalog.userFunctionNames(), ["TWICE", "UPPER"]);
  assert.equal(catalog.dropTemporarySystemFunction("UPPER"), true);
  assert.equal(catalog.dropTemporarySystemFunction("UPPER"), false);
  assert.equal(compileExpr(call("UPPER", col("name")), scope(catalog)).evaluate(row), "MARY");
});

Deno.test("registration refuses bad names, built-in aggregates, duplicates and non-definitions", () => {
  const catalog = new FunctionCatalog();
  const refused = (f: () => void, pattern: RegExp) =>
    assert.throws(f, (e) => e instanceof PlanningError && pattern.test(e.message));
  refused(() => catalog.registerTemporarySystemFunction("1x", twice), /not an identifier/);
  refused(
    () => catalog.registerTemporarySystemFunction("sum", twice),
    /SUM|sum is a built-in aggregate/,
  );
  catalog.registerTemporarySystemFunction("twice", twice);
  refused(() => catalog.registerTemporarySystemFunction("TWICE", twice), /already exists/);
  refused(
    () => catalog.registerTemporarySystemFunction("f", (() => 1) as unknown as typeof twice),
    /not a function definition/,
  );
});

Deno.test("the catalog of the planning call under way resolves calls without a Scope catalog", () => {
  const catalog = new FunctionCatalog();
  catalog.registerTemporarySystemFunction("twice", twice);
  const compiled = withFunctionCatalog(
    catalog,
    () => compileExpr(call("TWICE", col("n")), scope()),
  );
  assert.equal(compiled.evaluate(row), 8);
  assert.equal(currentFunctionCatalog(), BUILTIN_FUNCTION_CATALOG);
  assert.throws(
    () => compileExpr(call("TWICE", col("n")), scope()),
    (e) =>
      e instanceof PlanningError && /No function named TWICE \(built-in: UPPER/.test(e.message),
  );
});

Deno.test("unknown, clock-reading, table and aggregate functions are refused in expressions, naming them", () => {
  const catalog = new FunctionCatalog();
  catalog.registerTemporarySystemFunction(
    "split",
    tableFunction({
      columns: [{ name: "word", type: "STRING" }],
      *eval(s) {
        for (const w of String(s).split(" ")) yield [w];
      },
    }),
  );
  catalog.registerTemporarySystemFunction(
    "my_sum",
    aggregateFunction({
      result: "BIGINT",
      createAccumulator: () => ({ sum: 0 }),
      accumulate: (acc, v) => {
        acc.sum += Number(v);
      },
      getValue: (acc) => acc.sum,
    }),
  );
  const refusal = (e: Expr) => {
    try {
      compileExpr(e, scope(catalog));
    } catch (error) {
      assert.ok(error instanceof PlanningError);
      return error.message;
    }
    assert.fail("compiled");
  };
  assert.match(
    refusal(call("NOPE", col("n"))),
    /^No function named NOPE \(built-in: .*; user-defined: MY_SUM, SPLIT\) at line 1, column 8$/,
  );
  assert.match(refusal(call("NOW")), /NOW is not supported: it reads the clock or a random source/);
  assert.match(refusal(call("RAND")), /RAND is not supported/);
  assert.match(
    refusal(call("SPLIT", col("name"))),
    /SPLIT is a table function: call it in FROM, as LATERAL TABLE\(SPLIT\(\.\.\.\)\)/,
  );
  assert.match(
    refusal(call("MY_SUM", col("n"))),
    /the aggregate function MY_SUM is not allowed here/,
  );
  assert.match(refusal(call("TWICE_NOT")), /No function named TWICE_NOT/);
});

Deno.test("a time-unit name at a unit position is a unit, elsewhere a column", () => {
  const extract = call("EXTRACT", col("YEAR"), col("ts"));
  assert.equal(compileExpr(extract, scope()).evaluate(row), 2026);
  assert.equal(compileExpr(call("ABS", col("YEAR")), scope()).evaluate(row), 1999);
  const floor = call("FLOOR", col("ts"), col("hour"));
  assert.equal(compileExpr(floor, scope()).evaluate(row), "2026-03-07 09:00:00.000");
  const trim = call("TRIM", col("LEADING"), lit("M"), col("name"));
  assert.equal(compileExpr(trim, scope()).evaluate(row), "ary");
});

Deno.test("LIKE and NOT LIKE as binary operators, with NULL giving NULL", () => {
  const like = (op: string, pattern: string | null): Expr => ({
    k: "binary",
    op,
    left: col("name"),
    right: lit(pattern),
  });
  assert.equal(compileExpr(like("LIKE", "M%"), scope()).evaluate(row), true);
  assert.equal(compileExpr(like("NOT LIKE", "M%"), scope()).evaluate(row), false);
  assert.equal(compileExpr(like("LIKE", "_ary"), scope()).evaluate(row), true);
  assert.equal(compileExpr(like("LIKE", null), scope()).evaluate(row), null);
  assert.equal(compileExpr(like("NOT LIKE", null), scope()).evaluate(row), null);
  assert.equal(compileExpr(like("LIKE", "M%"), scope()).text, "(name LIKE 'M%')");
});

Deno.test("CAST converts between the families and refuses what never converts, naming both types", () => {
  const cast = (e: Expr, name: keyof typeof TYPES): Expr => ({
    k: "cast",
    expr: e,
    type: TYPES[name],
  });
  assert.equal(compileExpr(cast(col("ts"), "BIGINT"), scope()).evaluate(row), 1772874301);
  assert.equal(
    compileExpr(cast(col("n"), "TIMESTAMP"), scope()).evaluate(row),
    "1970-01-01 00:00:04.000",
  );
  assert.equal(
    compileExpr(cast(lit("2026-01-01T10:00"), "TIMESTAMP"), scope()).evaluate(row),
    "2026-01-01 10:00:00.000",
  );
  assert.equal(
    compileExpr(cast(col("ts"), "STRING"), scope()).evaluate(row),
    "2026-03-07 09:05:01.000",
  );
  assert.equal(compileExpr(cast(lit(" 42 "), "BIGINT"), scope()).evaluate(row), 42);
  assert.equal(compileExpr(cast(lit(2.9), "BIGINT"), scope()).evaluate(row), 2);
  assert.equal(compileExpr(cast(lit(null), "TIMESTAMP"), scope()).evaluate(row), null);
  assert.throws(
    () => compileExpr(cast(lit("soon"), "TIMESTAMP"), scope()).evaluate(row),
    /cannot cast "soon" to TIMESTAMP\(3\)/,
  );
  assert.throws(
    () => compileExpr(cast(lit(true), "TIMESTAMP"), scope()),
    (e) =>
      e instanceof PlanningError &&
      /cannot cast BOOLEAN to TIMESTAMP\(3\) in CAST\(TRUE AS TIMESTAMP\(3\)\)/.test(e.message),
  );
});

Deno.test("IF and COALESCE evaluate only the arguments they need, as SQL's conditionals", () => {
  const divide: Expr = { k: "binary", op: "/", left: lit(10), right: col("zero") };
  const zeroScope: Scope = { ...scope(), columns: [{ name: "zero", type: TYPES.BIGINT }] };
  const isZero: Expr = { k: "binary", op: "=", left: col("zero"), right: lit(0) };
  assert.equal(compileExpr(call("IF", isZero, lit(-1), divide), zeroScope).evaluate([0]), -1);
  assert.equal(compileExpr(call("IF", isZero, lit(-1), divide), zeroScope).evaluate([5]), 2);
  assert.equal(compileExpr(call("COALESCE", lit(7), divide), zeroScope).evaluate([0]), 7);
  assert.throws(
    () => compileExpr(call("COALESCE", lit(null), divide), zeroScope).evaluate([0]),
    /division by zero/,
  );
});
