import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import "../cluster/default_executor.ts";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import { CollectingSink } from "../../testing.ts";
import { createAggregate } from "./aggregates.ts";
import { PlanningError } from "./changelog_mode.ts";
import { decideGroupUpdate, type GroupState } from "./group_aggregate.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { StreamTableEnvironment } from "./table_environment.ts";
import { TYPES } from "./types.ts";
import {
  aggregateFunction,
  copyPlainData,
  scalarFunction,
  tableFunction,
  tableFunctionCall,
} from "./udf.ts";
import { userDefinedAggregate, type UserDefinedAggregateSpec } from "./udf_aggregate.ts";

/** Flink's documentation example: a weighted average over (value, weight), retractable. */
const weightedAvg = aggregateFunction<{ sum: number; weight: number }>({
  arguments: ["BIGINT", "BIGINT"],
  result: "BIGINT",
  createAccumulator: () => ({ sum: 0, weight: 0 }),
  accumulate(acc, value, weight) {
    if (value === null || weight === null) return;
    acc.sum += Number(value) * Number(weight);
    acc.weight += Number(weight);
  },
  retract(acc, value, weight) {
    if (value === null || weight === null) return;
    acc.sum -= Number(value) * Number(weight);
    acc.weight -= Number(weight);
  },
  getValue: (acc) => (acc.weight === 0 ? null : Math.trunc(acc.sum / acc.weight)),
});

const hashCode = scalarFunction({
  arguments: ["STRING"],
  result: "BIGINT",
  eval: (s) =>
    s === null ? null : [...String(s)].reduce((h, c) => (h * 31 + c.codePointAt(0)!) | 0, 0),
});

function environment() {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  return { env, tEnv: StreamTableEnvironment.create(env) };
}

Deno.test("a scalar UDF runs in SELECT and WHERE of a SQL query", async () => {
  const { env, tEnv } = environment();
  tEnv.createTemporarySystemFunction("hash_code", hashCode);
  tEnv.createTemporaryFunction(
    "shout",
    scalarFunction({
      result: (types) => types.length === 1 ? TYPES.STRING : { error: "takes one argument" },
      eval: (s) => s === null ? null : `${s}!`,
    }),
  );
  tEnv.createTemporaryView(
    "clicks",
    env.fromCollection([["Mary", 1], ["Bob", 2], ["Liz", 3]]),
    [{ name: "name", type: "VARCHAR" }, { name: "n", type: "BIGINT" }],
  );
  const table = tEnv.sqlQuery(
    "SELECT name, HASH_CODE(name) AS h, SHOUT(name) AS s FROM clicks WHERE Hash_Code(name) > 0",
  );
  assert.deepEqual(table.getColumns().map((c) => `${c.name} ${c.type.family}`), [
    "name STRING",
    "h BIGINT",
    "s STRING",
  ]);
  const sink = new CollectingSink<Row>();
  tEnv.toDataStream(table).sinkTo(sink).uid("out");
  await env.execute("scalar udf");
  assert.deepEqual(sink.committed().map(formatRow), [
    "+I(Mary,2390779,Mary!)",
    "+I(Bob,66965,Bob!)",
    "+I(Liz,76413,Liz!)",
  ]);
});

Deno.test("a UDF call with arguments that do not fit is refused at planning, naming function and position", () => {
  const { env, tEnv } = environment();
  tEnv.createTemporarySystemFunction("hash_code", hashCode);
  tEnv.createTemporarySystemFunction("wavg", weightedAvg);
  tEnv.createTemporaryView("t", env.fromCollection([[1]]), [{ name: "n", type: "BIGINT" }]);
  assert.throws(
    () => tEnv.sqlQuery("SELECT HASH_CODE(n) FROM t"),
    (e) =>
      e instanceof PlanningError &&
      /argument 1 of HASH_CODE is BIGINT, expected STRING, in HASH_CODE\(n\) at line 1, column 8/
        .test(e.message),
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT WAVG(n) FROM t"),
    (e) =>
      e instanceof PlanningError &&
      /WAVG takes 2 argument\(s\) \(BIGINT, BIGINT\), got 1/.test(e.message),
  );
  assert.throws(
    () => tEnv.createTemporarySystemFunction("count", hashCode),
    (e) => e instanceof PlanningError && /built-in aggregate/.test(e.message),
  );
});

Deno.test("an aggregate UDF of two arguments runs in GROUP BY over a changelog with retractions", async () => {
  const { env, tEnv } = environment();
  tEnv.createTemporarySystemFunction("wavg", weightedAvg);
  const changes: Row[] = [
    { kind: "INSERT", fields: ["a", 10, 1] },
    { kind: "INSERT", fields: ["a", 20, 3] },
    { kind: "INSERT", fields: ["b", 5, 2] },
    { kind: "DELETE", fields: ["a", 20, 3] },
    { kind: "UPDATE_BEFORE", fields: ["b", 5, 2] },
    { kind: "UPDATE_AFTER", fields: ["b", 7, 2] },
  ];
  tEnv.createTemporaryView(
    "changes",
    tEnv.fromChangelogStream(env.fromCollection(changes).uid("changes"), [
      { name: "k", type: "VARCHAR" },
      { name: "v", type: "BIGINT" },
      { name: "w", type: "BIGINT" },
    ]),
  );
  const table = tEnv.sqlQuery(
    "SELECT k, WAVG(v, w) AS avg_v, COUNT(*) AS n FROM changes GROUP BY k",
  );
  assert.match(
    table.explain(),
    /GroupAggregate\(groupBy=\[k\], select=\[k, COUNT\(\*\) AS n, WAVG\(v, w\) AS avg_v\]/,
  );
  const sink = new CollectingSink<Row>();
  tEnv.toChangelogStream(table).sinkTo(sink).uid("out");
  await env.execute("aggregate udf");
  assert.deepEqual(sink.committed().map(formatRow), [
    "+I(a,10,1)",
    "-U(a,10,1)",
    "+U(a,17,2)",
    "+I(b,5,1)",
    "-U(a,17,2)",
    "+U(a,10,1)",
    "-D(b,5,1)",
    "+I(b,7,1)",
  ]);
});

Deno.test("an aggregate UDF without retract is refused over updating input, naming it", () => {
  const { env, tEnv } = environment();
  const { retract: _, ...noRetract } = weightedAvg;
  tEnv.createTemporarySystemFunction("wavg", aggregateFunction(noRetract));
  tEnv.createTemporaryView(
    "changes",
    tEnv.fromChangelogStream(env.fromCollection<Row>([]), [
      { name: "k", type: "VARCHAR" },
      { name: "v", type: "BIGINT" },
    ]),
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT k, WAVG(v, v) FROM changes GROUP BY k"),
    (e) =>
      e instanceof PlanningError &&
      /the aggregate function WAVG has no retract method, which its updating input \(changelog mode retract\) needs at line 1, column 11/
        .test(e.message),
  );
  tEnv.createTemporaryView("inserts", env.fromCollection([["a", 1]]), [
    { name: "k", type: "VARCHAR" },
    { name: "v", type: "BIGINT" },
  ]);
  assert.equal(
    tEnv.sqlQuery("SELECT k, WAVG(v, v) AS x FROM inserts GROUP BY k").getColumns()[1]!.name,
    "x",
  );
});

Deno.test("a user-defined aggregate's folded changelog equals the batch aggregate of the final rows", () => {
  const spec: UserDefinedAggregateSpec = {
    fn: "UDF",
    name: "WAVG",
    definition: weightedAvg as never,
    arity: 2,
    resultType: TYPES.BIGINT,
    distinct: false,
    integral: false,
  };
  const op = fc.oneof(
    fc.record({
      insert: fc.constant(true),
      v: fc.integer({ min: -5, max: 5 }),
      w: fc.integer({ min: 1, max: 3 }),
    }),
    fc.record({ insert: fc.constant(false), index: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const aggregates = [
        createAggregate(spec),
        createAggregate({ fn: "COUNT_STAR", distinct: false, integral: false }),
      ];
      const live: [number, number][] = [];
      let state: GroupState | undefined;
      const table = new Map<string, number>();
      for (const o of ops) {
        let row: Row;
        if (o.insert) {
          live.push([o.v, o.w]);
          row = { kind: "INSERT", fields: [o.v, o.w] };
        } else {
          if (live.length === 0) continue;
          const [gone] = live.splice(o.index % live.length, 1);
          row = { kind: "DELETE", fields: gone! };
        }
        const update = decideGroupUpdate(
          aggregates,
          [row.fields as unknown as SqlValue, null],
          ["g"],
          state,
          row,
          true,
        );
        state = update.state ?? undefined;
        for (const change of update.emit) applyChange(table, change);
      }
      const expected = new Map<string, number>();
      if (live.length > 0) {
        const weight = live.reduce((s, [, w]) => s + w, 0);
        const sum = live.reduce((s, [v, w]) => s + v * w, 0);
        expected.set(JSON.stringify(["g", Math.trunc(sum / weight), live.length]), 1);
      }
      assert.deepEqual(table, expected);
    }),
    { numRuns: 300 },
  );
});

Deno.test("a user-defined aggregate never changes a state's accumulator in place, and checks its values", () => {
  const spec: UserDefinedAggregateSpec = {
    fn: "UDF",
    name: "WAVG",
    definition: weightedAvg as never,
    arity: 2,
    resultType: TYPES.BIGINT,
    distinct: false,
    integral: false,
  };
  const agg = userDefinedAggregate(spec);
  const acc = agg.createAccumulator();
  const before = JSON.stringify(acc);
  const copy = acc.slice() as typeof acc; // what GroupAggregate's copyAccumulator does
  agg.accumulate(copy, [4, 2] as unknown as SqlValue);
  assert.equal(JSON.stringify(acc), before);
  assert.equal(agg.getValue(copy), 4);
  const bad = userDefinedAggregate({
    ...spec,
    definition: aggregateFunction({
      result: "BIGINT",
      createAccumulator: () => ({ seen: new Set() }),
      accumulate() {},
      getValue: () => "many",
    }) as never,
  });
  assert.throws(() => bad.createAccumulator(), /WAVG must be plain data .*\.seen is not/);
  const wrongType = userDefinedAggregate({
    ...spec,
    definition: aggregateFunction({
      result: "BIGINT",
      createAccumulator: () => ({}),
      accumulate() {},
      getValue: () => "many",
    }) as never,
  });
  assert.throws(
    () => wrongType.getValue(wrongType.createAccumulator()),
    /WAVG returned "many", which is not a BIGINT/,
  );
});

Deno.test("a table function's rows are checked against its declared columns", () => {
  const split = tableFunction({
    arguments: ["STRING"],
    columns: [{ name: "word", type: "STRING" }, { name: "length", type: "INT" }],
    *eval(s) {
      for (const w of String(s).split(" ")) yield [w, w.length];
    },
  });
  const call = tableFunctionCall("SPLIT", split, [TYPES.STRING]);
  assert.deepEqual(call.columns.map((c) => c.type.family), ["STRING", "BIGINT"]);
  assert.deepEqual(call.rows(["a bc"]), [["a", 1], ["bc", 2]]);
  assert.throws(
    () => tableFunctionCall("SPLIT", split, [TYPES.BIGINT]),
    /argument 1 of SPLIT is BIGINT, expected STRING/,
  );
  const broken = tableFunction({
    columns: [{ name: "x", type: "INT" }],
    *eval() {
      yield [1, 2];
    },
  });
  assert.throws(
    () => tableFunctionCall("B", broken, []).rows([]),
    /B yielded \[1,2\], not a row of 1 value\(s\) \(x\)/,
  );
  assert.throws(
    () => tableFunction({ columns: [{ name: "x", type: "MAP" }], *eval() {} }),
    /column x of the table function has type "MAP", which is not supported/,
  );
});

Deno.test("copyPlainData() copies arrays and plain objects deeply, sharing nothing mutable", () => {
  const acc = { words: ["a", "b"], nested: { counts: [1, 2], best: null as string | null }, n: 3 };
  const copy = copyPlainData(acc);
  assert.deepEqual(copy, acc);
  copy.words.push("c");
  copy.nested.counts[0] = 9;
  copy.nested.best = "x";
  assert.deepEqual(acc, { words: ["a", "b"], nested: { counts: [1, 2], best: null }, n: 3 });
  assert.equal(copyPlainData(null), null);
  assert.equal(copyPlainData("s"), "s");
});
