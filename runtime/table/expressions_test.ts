import assert from "node:assert/strict";
import { PlanningError } from "./changelog_mode.ts";
import { parseScript } from "./parser.ts";
import { type CalcNode, planQuery } from "./plan.ts";
import type { SqlValue } from "./row.ts";
import { type Column, TYPES } from "./types.ts";

const COLUMNS: Column[] = [
  { name: "name", type: TYPES.STRING },
  { name: "n", type: TYPES.BIGINT },
  { name: "x", type: TYPES.DOUBLE },
  { name: "ok", type: TYPES.BOOLEAN },
];

/** Plans `SELECT <select> FROM t [WHERE <where>]` and runs its Calc over `rows`. */
function select(select: string, rows: SqlValue[][], where?: string): SqlValue[][] {
  const [statement] = parseScript(
    `SELECT ${select} FROM t${where === undefined ? "" : ` WHERE ${where}`}`,
  );
  if (statement?.k !== "select") throw new Error("not a SELECT");
  const plan = planQuery(statement.query, {
    lookup: () => ({ columns: COLUMNS }),
    locate: () => "",
  }) as CalcNode;
  return rows
    .filter((r) => plan.filter === null || plan.filter.evaluate(r) === true)
    .map((r) => plan.projections.map((p) => p.evaluate(r)));
}

const ROWS: SqlValue[][] = [
  ["Mary", 7, 2.5, true],
  ["bob", -3, null, false],
  [null, null, 0.5, null],
];

Deno.test("arithmetic: BIGINT stays integral (division truncates), with a DOUBLE it is DOUBLE, NULL in gives NULL", () => {
  assert.deepEqual(select("n + 1, n * 2 - 1, n / 2, n % 4, x * 2, n + x, -n", ROWS), [
    [8, 13, 3, 3, 5, 9.5, -7],
    [-2, -7, -1, -3, null, null, 3],
    [null, null, null, null, 1, null, null],
  ]);
});

Deno.test("comparisons and three-valued AND/OR/NOT; WHERE keeps only TRUE", () => {
  assert.deepEqual(select("n > 0, n = 7, name <> 'bob', NOT ok, ok AND n > 0, ok OR n > 0", ROWS), [
    [true, true, true, false, true, true],
    [false, false, false, true, false, false],
    [null, null, null, null, null, null],
  ]);
  assert.deepEqual(select("name", ROWS, "(n > 0 OR x < 1) AND NOT name IS NULL"), [["Mary"]]);
  assert.deepEqual(select("name", ROWS, "name IS NULL OR n < 0"), [["bob"], [null]]);
});

Deno.test("CAST, CASE, COALESCE and the string functions", () => {
  assert.deepEqual(
    select(
      "CAST(n AS VARCHAR), CAST(x AS INT), CASE WHEN n > 0 THEN 'pos' WHEN n < 0 THEN 'neg' ELSE 'none' END, " +
        "CASE n WHEN 7 THEN 'seven' END, COALESCE(name, 'anonymous'), UPPER(name), LOWER(name), " +
        "CHAR_LENGTH(name), CONCAT(name, '!', n), SUBSTRING(name, 2, 2), SUBSTRING(name FROM 2)",
      ROWS,
    ),
    [
      ["7", 2, "pos", "seven", "Mary", "MARY", "mary", 4, "Mary!7", "ar", "ary"],
      ["-3", null, "neg", null, "bob", "BOB", "bob", 3, "bob!-3", "ob", "ob"],
      [null, 0, "none", null, "anonymous", null, null, null, null, null, null],
    ],
  );
});

Deno.test("planning errors name the column, function or types, and where", () => {
  const [statement] = parseScript("SELECT nope FROM t");
  if (statement?.k !== "select") throw new Error("not a SELECT");
  assert.throws(
    () =>
      planQuery(statement.query, {
        lookup: () => ({ columns: COLUMNS }),
        locate: (n) => ` at ${n}`,
      }),
    (e: unknown) =>
      e instanceof PlanningError &&
      /Column 'nope' not found in table t \(columns: name, n, x, ok\) at nope/.test(e.message),
  );
  assert.throws(
    () => select("name + 1", ROWS),
    /\+ needs numbers, got STRING and BIGINT in \(name \+ 1\)/,
  );
  assert.throws(() => select("SOUNDEX(name)", ROWS), /No function named SOUNDEX/);
  assert.throws(() => select("name", ROWS, "n"), /WHERE needs a BOOLEAN condition, got BIGINT/);
  assert.throws(() => select("name = n", ROWS), /cannot compare STRING with BIGINT/);
  assert.throws(
    () => select("n", ROWS, "COUNT(n) > 1"),
    /the aggregate COUNT\(n\) is not allowed here/,
  );
  assert.throws(
    () => select("SUBSTRING(name, 'a')", ROWS),
    /argument 2 of SUBSTRING is STRING, expected BIGINT/,
  );
});

Deno.test("CAST of a bad value and integer division by zero throw, naming the value", () => {
  assert.throws(() => select("CAST(name AS INT)", [["x", 1, 1, true]]), /cannot cast "x" to INT/);
  assert.throws(() => select("n / 0", [["x", 1, 1, true]]), /division by zero in \(n \/ 0\)/);
});

Deno.test("CASE takes its branches' common type: a NULL branch fits, BIGINT with DOUBLE is DOUBLE", () => {
  const typeOf = (sql: string) => {
    const [statement] = parseScript(`SELECT ${sql} FROM t`);
    if (statement?.k !== "select") throw new Error("not a SELECT");
    return planQuery(statement.query, { lookup: () => ({ columns: COLUMNS }), locate: () => "" })
      .columns[0]!.type.family;
  };
  assert.equal(typeOf("CASE WHEN ok THEN NULL ELSE n END"), "BIGINT");
  assert.equal(typeOf("CASE WHEN ok THEN n ELSE x END"), "DOUBLE");
  assert.deepEqual(select("CASE WHEN n > 0 THEN NULL ELSE n END", ROWS), [[null], [-3], [null]]);
  assert.throws(
    () => typeOf("CASE WHEN ok THEN n ELSE name END"),
    /branch 2 of CASE is STRING, which does not fit branch 1's BIGINT in CASE WHEN ok THEN n ELSE name END/,
  );
});

Deno.test("a comparison with a NULL literal is NULL, whatever the other side's type", () => {
  assert.deepEqual(select("n = NULL, name <> NULL", ROWS.slice(0, 1)), [[null, null]]);
  assert.deepEqual(select("n", ROWS, "n = NULL"), []);
});
