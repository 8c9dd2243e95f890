/**
 * Relational planning: aliases, qualified columns, subqueries, views,
 * ambiguity errors, and which join node a condition becomes; syntax trees
 * are built directly (the parser is another slice).
 *
 * @module
 */

import assert from "node:assert/strict";
import { PlanningError } from "./changelog_mode.ts";
import { explainPlan, type PlannerContext, planQuery } from "./plan.ts";
import type { Expr, SelectItem, SelectQuery, TableRef } from "./sql_ast.ts";
import { type Column, TYPES } from "./types.ts";

const col = (name: string, table: string | null = null): Expr => ({ k: "column", table, name });
const item = (expr: Expr, alias: string | null = null): SelectItem => ({ k: "expr", expr, alias });
const eq = (left: Expr, right: Expr): Expr => ({ k: "binary", op: "=", left, right });
const and = (left: Expr, right: Expr): Expr => ({ k: "binary", op: "AND", left, right });
const table = (name: string, alias: string | null = null): TableRef => ({
  k: "table",
  name,
  alias,
  at: 0,
});

function select(from: TableRef, items: SelectItem[], rest: Partial<SelectQuery> = {}): SelectQuery {
  return {
    items,
    distinct: false,
    from,
    where: null,
    groupBy: [],
    having: null,
    orderBy: [],
    limit: null,
    ...rest,
  };
}

const ORDERS: Column[] = [
  { name: "id", type: TYPES.BIGINT },
  { name: "customer", type: TYPES.BIGINT },
  { name: "amount", type: TYPES.DOUBLE },
  { name: "ts", type: TYPES.TIMESTAMP },
];
const CUSTOMERS: Column[] = [
  { name: "id", type: TYPES.BIGINT },
  { name: "name", type: TYPES.STRING },
  { name: "ts", type: TYPES.TIMESTAMP },
];

function context(extra: Record<string, ReturnType<PlannerContext["lookup"]>> = {}): PlannerContext {
  const tables: Record<string, ReturnType<PlannerContext["lookup"]>> = {
    orders: {
      columns: ORDERS,
      watermark: {
        column: "ts",
        expr: {
          k: "binary",
          op: "-",
          left: col("ts"),
          right: { k: "interval", millis: 5000, text: "INTERVAL '5' SECOND" },
        },
        at: 0,
      },
    },
    customers: {
      columns: CUSTOMERS,
      watermark: { column: "ts", expr: col("ts"), at: 0 },
    },
    changes: { columns: CUSTOMERS, mode: "retract" },
    ...extra,
  };
  return { lookup: (name) => tables[name], locate: () => "" };
}

Deno.test("a qualified column resolves through the table's alias and name", () => {
  const plan = planQuery(
    select(table("orders", "o"), [item(col("amount", "o")), item(col("id", "orders"), "oid")]),
    context(),
  );
  assert.deepEqual(plan.columns.map((c) => c.name), ["amount", "oid"]);
  assert.throws(
    () => planQuery(select(table("orders", "o"), [item(col("amount", "x"))]), context()),
    (e: unknown) => e instanceof PlanningError && /Column 'x.amount' not found/.test(e.message),
  );
});

Deno.test("a subquery is planned in place and qualified by its alias", () => {
  const inner = select(table("orders"), [item(col("id")), item(col("amount"), "a")]);
  const plan = planQuery(
    select({ k: "subquery", query: inner, alias: "s", at: 0 }, [item(col("a", "s"))], {
      where: { k: "binary", op: ">", left: col("a", "s"), right: { k: "literal", value: 1 } },
    }),
    context(),
  );
  assert.match(explainPlan(plan), /Calc\(select=\[s.a AS a\], where=\[\(s.a > 1\)\]/);
  assert.match(explainPlan(plan), /Calc\(select=\[id, amount AS a\]/);
});

Deno.test("a view's plan is read in place of a scan", () => {
  const view = planQuery(select(table("orders"), [item(col("id"))]), context());
  const plan = planQuery(
    select(table("v"), [{ k: "star" }]),
    context({ v: { columns: view.columns, plan: view } }),
  );
  assert.equal(plan, view);
});

Deno.test("a column of both join inputs must be qualified", () => {
  const from: TableRef = {
    k: "join",
    kind: "INNER",
    left: table("orders", "o"),
    right: table("customers", "c"),
    on: eq(col("customer", "o"), col("id", "c")),
    at: 0,
  };
  assert.throws(
    () => planQuery(select(from, [item(col("id"))]), context()),
    (e: unknown) =>
      e instanceof PlanningError &&
      /Column 'id' is ambiguous: it is a column of o and c; qualify it/.test(e.message),
  );
  const plan = planQuery(select(from, [{ k: "star" }]), context());
  assert.deepEqual(plan.columns.map((c) => c.name), [
    "id",
    "customer",
    "amount",
    "ts",
    "id0",
    "name",
    "ts0",
  ]);
});

Deno.test("a join is a Join, append-only for an inner join of append-only inputs", () => {
  const join = (kind: "INNER" | "LEFT", right = "customers"): TableRef => ({
    k: "join",
    kind,
    left: table("orders", "o"),
    right: table(right, "c"),
    on: and(eq(col("customer", "o"), col("id", "c")), {
      k: "binary",
      op: ">",
      left: col("amount", "o"),
      right: { k: "literal", value: 10 },
    }),
    at: 0,
  });
  const inner = planQuery(select(join("INNER"), [item(col("name", "c"))]), context());
  const text = explainPlan(inner);
  assert.match(
    text,
    /Join\(joinType=\[InnerJoin\], where=\[\(\(o.customer = c.id\) AND \(o.amount > 10\)\)\], select=\[id, customer, amount, ts, id, name, ts\], leftInputSpec=\[NoUniqueKey\], rightInputSpec=\[NoUniqueKey\], changelogMode=\[I\]\)/,
  );
  assert.match(text, /:- Exchange\(distribution=\[hash\[o.customer\]\], changelogMode=\[I\]\)/);
  assert.match(text, /\+- Exchange\(distribution=\[hash\[c.id\]\], changelogMode=\[I\]\)/);
  assert.equal(
    planQuery(select(join("LEFT"), [item(col("name", "c"))]), context()).mode,
    "retract",
  );
  assert.equal(
    planQuery(select(join("INNER", "changes"), [item(col("name", "c"))]), context()).mode,
    "retract",
  );
});

Deno.test("a join without an equality between its inputs is refused", () => {
  const from: TableRef = {
    k: "join",
    kind: "INNER",
    left: table("orders", "o"),
    right: table("customers", "c"),
    on: { k: "binary", op: ">", left: col("customer", "o"), right: col("id", "c") },
    at: 0,
  };
  assert.throws(
    () => planQuery(select(from, [item(col("name", "c"))]), context()),
    (e: unknown) =>
      e instanceof PlanningError && /needs at least one \(an equi-join key\)/.test(e.message),
  );
});

Deno.test("a comma join takes WHERE as its condition", () => {
  const from: TableRef = {
    k: "join",
    kind: "CROSS",
    left: table("orders", "o"),
    right: table("customers", "c"),
    on: null,
    at: 0,
  };
  const plan = planQuery(
    select(from, [item(col("name", "c"))], { where: eq(col("customer", "o"), col("id", "c")) }),
    context(),
  );
  assert.match(explainPlan(plan), /Join\(joinType=\[InnerJoin\]/);
});

Deno.test("time bounds between two rowtimes make an IntervalJoin", () => {
  const interval = (s: number): Expr => ({
    k: "interval",
    millis: s * 1000,
    text: `INTERVAL '${s}' SECOND`,
  });
  const on = and(eq(col("customer", "o"), col("id", "c")), {
    k: "between",
    expr: col("ts", "o"),
    low: { k: "binary", op: "-", left: col("ts", "c"), right: interval(10) },
    high: { k: "binary", op: "+", left: col("ts", "c"), right: interval(5) },
    negated: false,
  });
  const from: TableRef = {
    k: "join",
    kind: "INNER",
    left: table("orders", "o"),
    right: table("customers", "c"),
    on,
    at: 0,
  };
  const plan = planQuery(select(from, [item(col("name", "c"))]), context());
  const text = explainPlan(plan);
  assert.match(
    text,
    /IntervalJoin\(joinType=\[InnerJoin\], windowBounds=\[isRowTime=true, leftLowerBound=-10000, leftUpperBound=5000, leftTimeIndex=3, rightTimeIndex=2\]/,
  );
  assert.match(text, /changelogMode=\[I\]/);
  assert.doesNotMatch(text, /UB/);
});

Deno.test("t.* selects the columns of one join input", () => {
  const from: TableRef = {
    k: "join",
    kind: "INNER",
    left: table("orders", "o"),
    right: table("customers", "c"),
    on: eq(col("customer", "o"), col("id", "c")),
    at: 0,
  };
  const plan = planQuery(
    select(from, [{ k: "star", table: "c" }, item(col("amount", "o"))]),
    context(),
  );
  assert.deepEqual(plan.columns.map((c) => c.name), ["id", "name", "ts", "amount"]);
  assert.throws(
    () => planQuery(select(from, [{ k: "star", table: "x" }]), context()),
    (e: unknown) =>
      e instanceof PlanningError && /x\.\* names no table of the FROM clause/.test(e.message),
  );
});
