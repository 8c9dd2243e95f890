import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { explainPlan, planQuery } from "./plan.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { decideJoin, type JoinShape, StreamingJoinFunction } from "./stream_join.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { CoProcessOperator } from "../task/operators/co_process_operators.ts";
import type { KeyedCoProcessFunction } from "../api/functions.ts";
import type { Key } from "../state/key_group.ts";
import { TYPES } from "./types.ts";
import {
  and,
  bin,
  col,
  contextOf,
  item,
  join,
  lit,
  runQuery,
  select,
  table,
  type TestTable,
} from "./_sql_test_kit.ts";

const COLUMNS = [{ name: "k", type: TYPES.BIGINT }, { name: "v", type: TYPES.BIGINT }];
type Kind = "INNER" | "LEFT" | "RIGHT" | "FULL";

/** A valid changelog: inserts of random rows and deletes of rows inserted before. */
const changelog = fc.array(
  fc.tuple(
    fc.boolean(),
    fc.constantFrom<SqlValue>(0, 1, 2, null),
    fc.integer({ min: 0, max: 3 }),
    fc.nat(),
  ),
  { maxLength: 14 },
).map((ops) => {
  const live: SqlValue[][] = [];
  const rows: Row[] = [];
  for (const [insert, k, v, pick] of ops) {
    if (insert || live.length === 0) {
      live.push([k, v]);
      rows.push({ kind: "INSERT", fields: [k, v] });
    } else {
      const [gone] = live.splice(pick % live.length, 1);
      rows.push({ kind: pick % 2 === 0 ? "DELETE" : "UPDATE_BEFORE", fields: gone! });
    }
  }
  return { rows, live };
});

/** The batch join of the final rows, as a multiset by JSON. */
function batchJoin(
  kind: Kind,
  left: SqlValue[][],
  right: SqlValue[][],
  on: (l: SqlValue[], r: SqlValue[]) => boolean,
): Map<string, number> {
  const out = new Map<string, number>();
  const add = (fields: SqlValue[]) => applyChange(out, { kind: "INSERT", fields });
  const rightHit = right.map(() => false);
  for (const l of left) {
    let hit = false;
    right.forEach((r, i) => {
      if (l[0] === null || r[0] === null || l[0] !== r[0] || !on(l, r)) return;
      hit = true;
      rightHit[i] = true;
      add([...l, ...r]);
    });
    if (!hit && (kind === "LEFT" || kind === "FULL")) add([...l, null, null]);
  }
  if (kind === "RIGHT" || kind === "FULL") {
    right.forEach((r, i) => {
      if (!rightHit[i]) add([null, null, ...r]);
    });
  }
  return out;
}

const v = (row: SqlValue[]) => row[1] as number;
const FILTERS = [
  { expr: bin("=", lit(1), lit(1)), holds: () => true },
  {
    expr: bin("<=", col("v", "l"), col("v", "r")),
    holds: (a: SqlValue[], b: SqlValue[]) => v(a) <= v(b),
  },
  { expr: bin(">=", col("v", "l"), lit(2)), holds: (a: SqlValue[]) => v(a) >= 2 },
  { expr: bin("<", col("v", "r"), lit(2)), holds: (_: SqlValue[], b: SqlValue[]) => v(b) < 2 },
];

for (const kind of ["INNER", "LEFT", "RIGHT", "FULL"] as const) {
  Deno.test(`a ${kind} join's folded changelog equals the batch join of the final inputs`, async () => {
    await fc.assert(
      fc.asyncProperty(changelog, changelog, fc.constantFrom(...FILTERS), async (l, r, filter) => {
        // A mixed filter stays in the join; a one-sided one is pushed below it where that is sound.
        const on = and(bin("=", col("k", "l"), col("k", "r")), filter.expr);
        const tables: Record<string, TestTable> = {
          a: { columns: COLUMNS, rows: l.rows, mode: "retract" },
          b: { columns: COLUMNS, rows: r.rows, mode: "retract" },
        };
        const query = select(join(kind, table("a", "l"), table("b", "r"), on), [
          item(col("k", "l"), "lk"),
          item(col("v", "l"), "lv"),
          item(col("k", "r"), "rk"),
          item(col("v", "r"), "rv"),
        ]);
        const { rows } = await runQuery(query, tables, 2);
        const folded = new Map<string, number>();
        for (const row of rows) {
          assert.ok(row.kind === "INSERT" || row.kind === "DELETE", formatRow(row));
          applyChange(folded, row);
        }
        const want = batchJoin(kind, l.live, r.live, filter.holds);
        assert.deepEqual(
          [...folded].sort(),
          [...want].sort(),
          `left ${l.rows.map(formatRow)} right ${r.rows.map(formatRow)}`,
        );
      }),
      { numRuns: 25 },
    );
  });
}

Deno.test("an inner join of append-only inputs appends and plans a Join with hashed inputs", async () => {
  const on = bin("=", col("k", "l"), col("k", "r"));
  const { plan, rows } = await runQuery(
    select(join("INNER", table("a", "l"), table("b", "r"), on), [
      item(col("v", "l"), "lv"),
      item(col("v", "r"), "rv"),
    ]),
    {
      a: { columns: COLUMNS, rows: [[1, 10], [2, 20]] },
      b: { columns: COLUMNS, rows: [[1, 100], [1, 101], [3, 300]] },
    },
  );
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /Join\(joinType=\[InnerJoin\], where=\[\(l.k = r.k\)\], select=\[k, v, k, v\], leftInputSpec=\[NoUniqueKey\], rightInputSpec=\[NoUniqueKey\], changelogMode=\[I\]\)\n {3}:- Exchange\(distribution=\[hash\[l.k\]\], changelogMode=\[I\]\)/,
  );
  assert.deepEqual(rows.map(formatRow).sort(), ["+I(10,100)", "+I(10,101)"]);
});

Deno.test("decideJoin retracts an outer row's null padding when its first match comes, and restores it", () => {
  const shape: JoinShape = { joinType: "LeftOuterJoin", filter: null, leftArity: 2, rightArity: 2 };
  const padded = decideJoin(shape, { kind: "INSERT", fields: [1, 10] }, true, undefined, [], false);
  assert.deepEqual(padded.emit.map(formatRow), ["+I(1,10,null,null)"]);
  const stored = padded.own!;
  const match = decideJoin(
    shape,
    { kind: "INSERT", fields: [1, 5] },
    false,
    undefined,
    [["[1,10]", stored]],
    false,
  );
  assert.deepEqual(match.emit.map(formatRow), ["-D(1,10,null,null)", "+I(1,10,1,5)"]);
  const back = decideJoin(
    shape,
    { kind: "DELETE", fields: [1, 5] },
    false,
    match.own!,
    [["[1,10]", match.others[0]![1]]],
    false,
  );
  assert.deepEqual(back.emit.map(formatRow), ["-D(1,10,1,5)", "+I(1,10,null,null)"]);
  assert.equal(back.own, null);
  assert.throws(
    () => decideJoin(shape, { kind: "DELETE", fields: [9, 9] }, true, undefined, [], false),
    /retracts a row it never inserted/,
  );
});

Deno.test("a join with idle state retention ignores a retraction of a row its side no longer holds; without it, it is an error", () => {
  const shape: JoinShape = { joinType: "InnerJoin", filter: null, leftArity: 1, rightArity: 1 };
  const row: Row = { kind: "DELETE", fields: ["a"] };
  assert.throws(
    () => decideJoin(shape, row, true, undefined, [], false),
    /Join got -D\(a\) on its left input, which holds no such row/,
  );
  assert.deepEqual(decideJoin(shape, row, true, undefined, [], false, true), {
    own: null,
    others: [],
    emit: [],
  });
});

Deno.test("StreamingJoinFunction with idle state retention forgets rows not written for the TTL", async () => {
  const shape: JoinShape = { joinType: "InnerJoin", filter: null, leftArity: 2, rightArity: 2 };
  const h = await OperatorTestHarness.open((env, output) =>
    new CoProcessOperator({
      uid: "join",
      name: "Join",
      fn: new StreamingJoinFunction(shape, "Join", 1_000) as unknown as KeyedCoProcessFunction<
        Key,
        unknown,
        unknown,
        unknown
      >,
      env,
      output,
      keySelector: (r) => JSON.stringify([(r as Row).fields[0]]),
      keySelector2: (r) => JSON.stringify([(r as Row).fields[0]]),
    })
  );
  const ins = (...fields: SqlValue[]): Row => ({ kind: "INSERT", fields });
  h.operator.processElement1(ins("k", "l1"), undefined);
  h.setProcessingTime(1_000); // l1, written at 0, has expired
  h.operator.processElement2(ins("k", "r1"), undefined); // joins nothing
  h.operator.processElement1({ kind: "DELETE", fields: ["k", "l1"] }, undefined); // ignored
  h.operator.processElement1(ins("k", "l2"), undefined);
  assert.deepEqual((h.values() as Row[]).map(formatRow), ["+I(k,l2,k,r1)"]);
  await h.close();
});

Deno.test("a one-sided condition filters that input below the join, but not an outer join's preserved side", () => {
  const tables = { a: { columns: COLUMNS, rows: [] }, b: { columns: COLUMNS, rows: [] } };
  const on = (side: string) =>
    and(bin("=", col("k", "l"), col("k", "r")), bin(">", col("v", side), lit(1)));
  const plan = (kind: Kind, side: string) =>
    explainPlan(
      planQuery(
        select(join(kind, table("a", "l"), table("b", "r"), on(side)), [item(col("v", "l"), "x")]),
        contextOf(tables),
      ),
    );
  assert.match(plan("INNER", "r"), /\+- Calc\(select=\[k, v\], where=\[\(r.v > 1\)\]/);
  assert.match(plan("LEFT", "r"), /\+- Calc\(select=\[k, v\], where=\[\(r.v > 1\)\]/);
  assert.doesNotMatch(plan("LEFT", "l"), /Calc\(select=\[k, v\], where/);
  assert.doesNotMatch(plan("FULL", "r"), /Calc\(select=\[k, v\], where/);
});
