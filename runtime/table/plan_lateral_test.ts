import assert from "node:assert/strict";
import "../cluster/default_executor.ts";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import { CollectingSink } from "../../testing.ts";
import { PlanningError } from "./changelog_mode.ts";
import { FunctionCatalog, withFunctionCatalog } from "./function_catalog.ts";
import { explainPlan, type PlannerContext, type PlanNode, planQuery } from "./plan.ts";
import { formatRow, type Row } from "./row.ts";
import type { Expr, SelectQuery, TableRef } from "./sql_ast.ts";
import { translatePlan } from "./translate.ts";
import { correlateRows } from "./translate_lateral.ts";
import { TYPES } from "./types.ts";
import { scalarFunction, tableFunction } from "./udf.ts";

const functions = new FunctionCatalog();
functions.registerTemporarySystemFunction(
  "split",
  tableFunction({
    arguments: ["STRING"],
    columns: [{ name: "word", type: "STRING" }, { name: "length", type: "INT" }],
    *eval(s) {
      if (s === null) return;
      for (const w of String(s).split(" ").filter((w) => w !== "")) yield [w, w.length];
    },
  }),
);
functions.registerTemporarySystemFunction(
  "twice",
  scalarFunction({
    arguments: ["BIGINT"],
    result: "BIGINT",
    eval: (x) => (x === null ? null : Number(x) * 2),
  }),
);

const context = (mode: "append" | "retract" = "append"): PlannerContext => ({
  lookup: (name) =>
    name === "docs"
      ? {
        columns: [{ name: "id", type: TYPES.BIGINT }, { name: "body", type: TYPES.STRING }],
        mode,
      }
      : undefined,
  locate: (name) => ` (at ${name})`,
});
const col = (name: string, table: string | null = null): Expr => ({ k: "column", table, name });
const lateral = (
  aliases: string[] = ["word", "len"],
  fn = "split",
  args: Expr[] = [col("body")],
): TableRef => ({
  k: "lateral",
  fn,
  args,
  alias: "T",
  columnAliases: aliases,
  at: 0,
});
const query = (
  kind: "CROSS" | "INNER" | "LEFT" | "RIGHT",
  on: Expr | null = null,
  right: TableRef = lateral(),
  where: Expr | null = null,
): SelectQuery => ({
  items: [
    { k: "expr", expr: col("id"), alias: null },
    { k: "expr", expr: col("word", "T"), alias: null },
    { k: "expr", expr: col("len"), alias: null },
  ],
  distinct: false,
  from: {
    k: "join",
    kind,
    left: { k: "table", name: "docs", alias: null, at: 0 },
    right,
    on,
    at: 0,
  },
  where,
  groupBy: [],
  having: null,
  orderBy: [],
  limit: null,
});
const plan = (q: SelectQuery, mode: "append" | "retract" = "append"): PlanNode =>
  withFunctionCatalog(functions, () => planQuery(q, context(mode)));
const correlateOf = (node: PlanNode) => {
  let n: PlanNode = node;
  while (n.op !== "Correlate") n = (n as { input: PlanNode }).input;
  return n;
};

Deno.test("a comma join with LATERAL TABLE plans a Correlate with the function's renamed columns", () => {
  const root = plan(query("CROSS"));
  assert.equal(
    explainPlan(root),
    [
      "== Optimized Physical Plan ==",
      "Calc(select=[id, T.word AS word, len], changelogMode=[I])",
      "+- Correlate(invocation=[SPLIT(body)], select=[id, body, word, len], joinType=[INNER], changelogMode=[I])",
      "   +- TableSourceScan(table=[[docs]], fields=[id, body], changelogMode=[I])",
      "",
    ].join("\n"),
  );
  assert.deepEqual(root.columns.map((c) => `${c.name} ${c.type.family}`), [
    "id BIGINT",
    "word STRING",
    "len BIGINT",
  ]);
});

Deno.test("Correlate rows: INNER drops a row without output, LEFT pads it with NULLs, kinds are kept", () => {
  const inner = correlateOf(plan(query("CROSS")));
  assert.deepEqual(correlateRows(inner, { kind: "INSERT", fields: [1, "a bb"] }).map(formatRow), [
    "+I(1,a bb,a,1)",
    "+I(1,a bb,bb,2)",
  ]);
  assert.deepEqual(correlateRows(inner, { kind: "DELETE", fields: [2, "  "] }), []);
  const left = correlateOf(plan(query("LEFT", { k: "literal", value: true }), "retract"));
  assert.equal(left.mode, "retract");
  assert.deepEqual(correlateRows(left, { kind: "DELETE", fields: [2, null] }).map(formatRow), [
    "-D(2,null,null,null)",
  ]);
  assert.deepEqual(correlateRows(left, { kind: "UPDATE_AFTER", fields: [3, "x"] }).map(formatRow), [
    "+U(3,x,x,1)",
  ]);
});

Deno.test("the WHERE of a comma join with LATERAL TABLE filters the joined rows", () => {
  const longWords: Expr = {
    k: "binary",
    op: ">",
    left: col("len", "T"),
    right: { k: "literal", value: 1 },
  };
  const node = correlateOf(plan(query("CROSS", null, lateral(), longWords)));
  assert.deepEqual(
    correlateRows(node, { kind: "INSERT", fields: [1, "a bb ccc"] }).map(formatRow),
    [
      "+I(1,a bb ccc,bb,2)",
      "+I(1,a bb ccc,ccc,3)",
    ],
  );
});

Deno.test("a job runs the Correlate over a stream, row by row", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const root = plan(query("LEFT", null));
  const rows: Row[] = [
    { kind: "INSERT", fields: [1, "to be"] },
    { kind: "INSERT", fields: [2, ""] },
  ];
  const sink = new CollectingSink<Row>();
  translatePlan(root, () => env.fromCollection(rows).uid("docs"), "lateral").sinkTo(sink).uid(
    "out",
  );
  await env.execute("lateral");
  assert.deepEqual(sink.committed().map(formatRow), [
    "+I(1,to,2)",
    "+I(1,be,2)",
    "+I(2,null,null)",
  ]);
});

Deno.test("LATERAL TABLE planning errors name the function and what is wrong", () => {
  const refused = (q: SelectQuery, pattern: RegExp) =>
    assert.throws(() => plan(q), (e) => e instanceof PlanningError && pattern.test(e.message));
  refused(
    query("RIGHT", { k: "literal", value: true }),
    /RIGHT JOIN with the table function split is not supported \(only INNER, CROSS and LEFT JOIN LATERAL\) \(at split\)/,
  );
  refused(
    query("LEFT", { k: "binary", op: "=", left: col("id"), right: { k: "literal", value: 1 } }),
    /LEFT JOIN LATERAL TABLE\(split\(\.\.\.\)\) takes only ON TRUE, got ON \(id = 1\)/,
  );
  refused(
    query("CROSS", null, lateral(["w"])),
    /T\(w\) names 1 column\(s\), but SPLIT yields 2 \(word, length\)/,
  );
  refused(query("CROSS", null, lateral(undefined, "nope")), /No table function named nope/);
  refused(
    query("CROSS", null, lateral(undefined, "twice")),
    /twice is a scalar function, not a table function/,
  );
  refused(
    query("CROSS", null, lateral(undefined, "split", [col("id")])),
    /argument 1 of SPLIT is BIGINT, expected STRING \(at split\)/,
  );
  const alone: SelectQuery = { ...query("CROSS"), from: lateral() };
  refused(alone, /LATERAL TABLE\(split\(\.\.\.\)\) needs a table on its left/);
});
