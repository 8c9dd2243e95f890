/**
 * SQL text through the table environment for helper F's slice: CREATE
 * VIEW, EXPLAIN, SET, built-in scalar functions, and user-defined scalar,
 * table (LATERAL TABLE) and aggregate functions.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  aggregateFunction,
  formatRow,
  formatTableResult,
  PlanningError,
  type Row,
  scalarFunction,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
  tableFunction,
} from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { applyChange } from "../runtime/table/row.ts";

const DOCS = `
CREATE TABLE docs (id BIGINT, body STRING, ts TIMESTAMP(3), price DOUBLE) WITH ('connector' = 'values');
INSERT INTO docs VALUES
  (1, 'to be or not', '2026-03-07 09:05:01.250', 10.5),
  (2, 'Be quick', '2026-12-31 23:59:59.000', 3.0),
  (3, '', '2024-02-29 00:00:00.000', 8.25);
`;

async function docsEnv() {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(env);
  await tEnv.executeScript(DOCS);
  return { env, tEnv };
}

async function rows(
  env: StreamExecutionEnvironment,
  tEnv: StreamTableEnvironment,
  sql: string,
): Promise<string[]> {
  const sink = new CollectingSink<Row>();
  tEnv.toChangelogStream(tEnv.sqlQuery(sql)).sinkTo(sink).uid("out");
  await env.execute("sql functions test");
  return sink.committed().map(formatRow);
}

Deno.test("built-in scalar functions in SQL give Flink's values", async () => {
  const { env, tEnv } = await docsEnv();
  const out = await rows(
    env,
    tEnv,
    `SELECT id,
       UPPER(SPLIT_INDEX(body, ' ', 1)) AS second_word,
       CONCAT_WS('|', CAST(id AS STRING), LPAD(CAST(CHAR_LENGTH(body) AS STRING), 3, '0')) AS tag,
       IF(body LIKE '%be%', 'be', COALESCE(NULLIF(body, ''), 'empty')) AS kind,
       EXTRACT(YEAR FROM ts) AS y, DAYOFWEEK(ts) AS dow,
       DATE_FORMAT(ts, 'yyyy/MM/dd HH:mm') AS day_text,
       TIMESTAMPADD(MONTH, 1, ts) AS next_month,
       ts + INTERVAL '1' HOUR AS later,
       UNIX_TIMESTAMP(ts) AS epoch,
       ROUND(price * 0.908, 2) AS dollars, MOD(id, 2) AS odd,
       POSITION('be' IN body) AS pos
     FROM docs WHERE id % 5 <> 4`,
  );
  assert.deepEqual(out, [
    "+I(1,BE,1|012,be,2026,7,2026/03/07 09:05,2026-04-07 09:05:01.250,2026-03-07 10:05:01.250,1772874301,9.53,1,4)",
    "+I(2,QUICK,2|008,Be quick,2026,5,2026/12/31 23:59,2027-01-31 23:59:59.000,2027-01-01 00:59:59.000,1798761599,2.72,0,0)",
    "+I(3,null,3|000,empty,2024,5,2024/02/29 00:00,2024-03-29 00:00:00.000,2024-02-29 01:00:00.000,1709164800,7.49,1,0)",
  ]);
});

Deno.test("functions that read the clock are refused at planning, saying why", async () => {
  const { tEnv } = await docsEnv();
  assert.throws(
    () => tEnv.sqlQuery("SELECT id, NOW() FROM docs"),
    (e) =>
      e instanceof PlanningError &&
      /NOW is not supported: it reads the clock or a random source, so a restored job replaying its input would compute different results \(exactly-once\) at line 1, column 12/
        .test(e.message),
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT CURRENT_TIMESTAMP FROM docs"),
    /CURRENT_TIMESTAMP is not supported/,
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT LPAD(body, 'x', '0') FROM docs"),
    /argument 2 of LPAD is STRING, expected BIGINT, in LPAD\(body, 'x', '0'\) at line 1, column 8/,
  );
});

Deno.test("CREATE VIEW registers a query read like a table; a taken name is refused with its position", async () => {
  const { env, tEnv } = await docsEnv();
  const created = await tEnv.executeSql(
    "CREATE TEMPORARY VIEW cheap AS SELECT id, price FROM docs WHERE price < 10",
  );
  assert.deepEqual(created, { resultKind: "SUCCESS", statement: "CREATE VIEW" });
  await assert.rejects(
    () =>
      tEnv.executeScript("SET 'pipeline.name' = 'x';\nCREATE VIEW docs AS SELECT id FROM cheap"),
    (e) =>
      e instanceof PlanningError &&
      e.message === "Table or view 'docs' already exists at line 2, column 1",
  );
  await assert.rejects(
    () => tEnv.executeSql("CREATE VIEW broken AS SELECT nope FROM docs"),
    (e) => e instanceof PlanningError && /Column 'nope' not found/.test(e.message),
  );
  assert.deepEqual(await rows(env, tEnv, "SELECT id FROM cheap WHERE id > 2"), ["+I(3)"]);
});

Deno.test("EXPLAIN prints the plan with changelog modes, with the Sink for an INSERT", async () => {
  const { tEnv } = await docsEnv();
  await tEnv.executeSql(
    "CREATE TABLE sink_t (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole')",
  );
  const select = await tEnv.executeSql(
    "EXPLAIN CHANGELOG_MODE SELECT MOD(id, 2) AS k, COUNT(*) AS n FROM docs GROUP BY MOD(id, 2)",
  );
  assert.equal(select.resultKind, "SUCCESS_WITH_CONTENT");
  assert.deepEqual(select.columns, ["result"]);
  const plan = String(select.rows![0]![0]);
  assert.match(plan, /^== Optimized Physical Plan ==\n/);
  assert.match(
    plan,
    /GroupAggregate\(groupBy=\[MOD\(id, 2\)\], select=\[MOD\(id, 2\), COUNT\(\*\) AS n\], changelogMode=\[I,UB,UA,D\]\)/,
  );
  assert.equal(formatTableResult(select), plan);
  const insert = await tEnv.executeSql(
    "EXPLAIN INSERT INTO sink_t SELECT MOD(id, 2), COUNT(*) FROM docs GROUP BY MOD(id, 2)",
  );
  assert.match(
    String(insert.rows![0]![0]),
    /^== Optimized Physical Plan ==\nSink\(table=\[\[sink_t\]\], fields=\[k, n\]\)\n\+- /,
  );
  await assert.rejects(
    () => tEnv.executeSql("EXPLAIN SELECT nope FROM docs"),
    (e) => e instanceof PlanningError && /Column 'nope' not found/.test(e.message),
  );
});

Deno.test("SET changes, shows and lists options; unknown keys and bad values are refused with where", async () => {
  const { tEnv } = await docsEnv();
  assert.deepEqual(await tEnv.executeSql("SET 'table.exec.state.ttl' = '90 min'"), {
    resultKind: "SUCCESS",
    statement: "SET",
  });
  assert.equal(tEnv.getConfig().stateTtlMs, 5_400_000);
  const listed = await tEnv.executeSql("SET");
  assert.deepEqual(listed.columns, ["key", "value"]);
  assert.deepEqual(listed.rows!.find((r) => r[0] === "table.exec.state.ttl"), [
    "table.exec.state.ttl",
    "90 min",
  ]);
  await assert.rejects(
    () =>
      tEnv.executeScript(
        "CREATE TABLE x (a INT) WITH ('connector' = 'values');\n  SET 'table.exec.state.tll' = '1 h'",
      ),
    (e) =>
      e instanceof PlanningError &&
      /^SET: unknown option 'table\.exec\.state\.tll' \(known options: table\.exec\.state\.ttl, .*\) at line 2, column 3$/
        .test(e.message),
  );
  await assert.rejects(
    () => tEnv.executeSql("SET 'parallelism.default' = 'two'"),
    /invalid value for option 'parallelism.default': 'two' is not a positive integer at line 1, column 1/,
  );
});

Deno.test("a user-defined table function joins each row through LATERAL TABLE (comma, CROSS and LEFT)", async () => {
  const split = tableFunction({
    arguments: ["STRING"],
    columns: [{ name: "word", type: "STRING" }, { name: "length", type: "INT" }],
    *eval(s) {
      for (const w of String(s ?? "").split(" ").filter((w) => w !== "")) yield [w, w.length];
    },
  });
  for (
    const [from, expected] of [
      [
        "docs, LATERAL TABLE(split(body)) AS T(word, len) WHERE T.len > 2",
        ["+I(1,not,3)", "+I(2,quick,5)"],
      ],
      [
        "docs CROSS JOIN LATERAL TABLE(split(body)) AS T(word, len) WHERE id = 2",
        ["+I(2,Be,2)", "+I(2,quick,5)"],
      ],
      [
        "docs LEFT JOIN LATERAL TABLE(split(body)) AS T(word, len) ON TRUE WHERE id = 3",
        ["+I(3,null,null)"],
      ],
    ] as const
  ) {
    const { env, tEnv } = await docsEnv();
    tEnv.createTemporarySystemFunction("split", split);
    assert.deepEqual(await rows(env, tEnv, `SELECT id, word, len FROM ${from}`), expected, from);
  }
});

Deno.test("scalar and aggregate UDFs in SQL: a GROUP BY with a retractable UDAF folds to the batch result", async () => {
  const { env, tEnv } = await docsEnv();
  tEnv.createTemporarySystemFunction(
    "parity",
    scalarFunction({
      arguments: ["BIGINT"],
      result: "STRING",
      eval: (n) => (n === null ? null : Number(n) % 2 === 0 ? "even" : "odd"),
    }),
  );
  tEnv.createTemporaryFunction(
    "longest",
    aggregateFunction<{ words: string[] }>({
      arguments: ["STRING"],
      result: "STRING",
      createAccumulator: () => ({ words: [] }),
      accumulate(acc, s) {
        if (s !== null) acc.words.push(String(s));
      },
      retract(acc, s) {
        const i = acc.words.indexOf(String(s));
        if (i >= 0) acc.words.splice(i, 1);
      },
      getValue: (acc) =>
        acc.words.length === 0 ? null : acc.words.reduce((
          a,
          b,
        ) => (b.length > a.length || (b.length === a.length && b < a) ? b : a)),
    }),
  );
  const out = await rows(
    env,
    tEnv,
    "SELECT parity(id) AS p, LONGEST(body) AS l, COUNT(*) AS n FROM docs GROUP BY parity(id)",
  );
  const table = new Map<string, number>();
  for (const line of out) {
    const kind = line.slice(0, 2);
    const fields = line.slice(3, -1).split(",");
    applyChange(table, {
      kind: kind === "+I"
        ? "INSERT"
        : kind === "-U"
        ? "UPDATE_BEFORE"
        : kind === "+U"
        ? "UPDATE_AFTER"
        : "DELETE",
      fields,
    });
  }
  assert.deepEqual(
    [...table.keys()].sort(),
    [JSON.stringify(["even", "Be quick", "1"]), JSON.stringify(["odd", "to be or not", "2"])],
  );
  assert.ok(out.includes("-U(odd,to be or not,1)"), out.join(" "));
});

/** The longest URL per group; merges for SESSION windows. */
const longest = aggregateFunction<{ best: string | null }>({
  arguments: ["STRING"],
  result: "STRING",
  createAccumulator: () => ({ best: null }),
  accumulate(acc, s) {
    if (s !== null && (acc.best === null || String(s).length > acc.best.length)) {
      acc.best = String(s);
    }
  },
  merge(acc, others) {
    for (const o of others) {
      if (o.best !== null && (acc.best === null || o.best.length > acc.best.length)) {
        acc.best = o.best;
      }
    }
  },
  getValue: (acc) => acc.best,
});

const CLICKS = "CREATE TABLE clicks (`user` VARCHAR, cTime TIMESTAMP(3), url VARCHAR,\n" +
  "  WATERMARK FOR cTime AS cTime - INTERVAL '1' SECOND) WITH ('connector' = 'values');\n" +
  "INSERT INTO clicks VALUES " + [
  ["Mary", "12:00:00", "./home"],
  ["Bob", "12:00:00", "./cart"],
  ["Mary", "12:00:05", "./prod?id=1"],
  ["Liz", "12:01:00", "./home"],
  ["Bob", "12:01:30", "./prod?id=3"],
  ["Mary", "12:01:45", "./prod?id=7"],
].map(([u, t, url]) => `('${u}', '2026-01-01 ${t}', '${url}')`).join(", ");

Deno.test("an aggregate UDF runs in TUMBLE and SESSION window aggregation (SESSION merges with its merge)", async () => {
  for (
    const [tvf, expected] of [
      [
        "TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' MINUTE)",
        [
          "+I(Bob,./cart,2026-01-01 12:01:00.000)",
          "+I(Bob,./prod?id=3,2026-01-01 12:02:00.000)",
          "+I(Liz,./home,2026-01-01 12:02:00.000)",
          "+I(Mary,./prod?id=1,2026-01-01 12:01:00.000)",
          "+I(Mary,./prod?id=7,2026-01-01 12:02:00.000)",
        ],
      ],
      [
        "SESSION(TABLE clicks PARTITION BY `user`, DESCRIPTOR(cTime), INTERVAL '50' SECOND)",
        [
          "+I(Bob,./cart,2026-01-01 12:00:50.000)",
          "+I(Bob,./prod?id=3,2026-01-01 12:02:20.000)",
          "+I(Liz,./home,2026-01-01 12:01:50.000)",
          "+I(Mary,./prod?id=1,2026-01-01 12:00:55.000)",
          "+I(Mary,./prod?id=7,2026-01-01 12:02:35.000)",
        ],
      ],
    ] as const
  ) {
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
    const tEnv = StreamTableEnvironment.create(env);
    tEnv.createTemporarySystemFunction("longest", longest);
    await tEnv.executeScript(CLICKS);
    const out = await rows(
      env,
      tEnv,
      `SELECT \`user\`, LONGEST(url) AS url, window_end FROM TABLE(${tvf})
       GROUP BY \`user\`, window_start, window_end`,
    );
    assert.deepEqual(out.sort(), expected, tvf);
  }
});

Deno.test("a SESSION window aggregation refuses an aggregate UDF without merge", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(env);
  const { merge: _, ...noMerge } = longest;
  tEnv.createTemporarySystemFunction("longest", aggregateFunction(noMerge));
  await tEnv.executeScript(CLICKS);
  assert.throws(
    () =>
      tEnv.sqlQuery(
        "SELECT `user`, LONGEST(url) FROM TABLE(SESSION(TABLE clicks PARTITION BY `user`, DESCRIPTOR(cTime), INTERVAL '50' SECOND)) GROUP BY `user`, window_start, window_end",
      ),
    (e) =>
      e instanceof PlanningError &&
      /the aggregate function LONGEST has no merge method, which SESSION windows need to merge their accumulators at line 1, column 16/
        .test(e.message),
  );
});

Deno.test("SET pipeline.name and parallelism.default apply to the next SQL job", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const tEnv = StreamTableEnvironment.create(env);
  const results = await tEnv.executeScript(`
    CREATE TABLE t (a BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '20000',
      'fields.a.kind' = 'sequence', 'fields.a.start' = '1', 'fields.a.end' = '20000');
    CREATE TABLE s (a BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
    SET 'execution.checkpointing.interval' = '20 ms';
    SET 'parallelism.default' = '2';
    SET 'pipeline.name' = 'set-applies';
    INSERT INTO s SELECT MOD(a, 7), COUNT(*) FROM t GROUP BY MOD(a, 7);
  `);
  const job = results.at(-1)!.jobResult!;
  assert.equal(job.jobName, "set-applies");
  assert.equal(env.getParallelism(), 2);
  // Whether a checkpoint completes before this small job ends depends on
  // timing; statements_test.ts checks that the interval reaches the environment.
});

Deno.test("an aggregate UDF runs OVER a window; a bounded frame needs its retract", async () => {
  const urls = aggregateFunction<{ urls: string[] }>({
    arguments: ["STRING"],
    result: "STRING",
    createAccumulator: () => ({ urls: [] }),
    accumulate(acc, url) {
      acc.urls.push(String(url));
    },
    retract(acc, url) {
      acc.urls.splice(acc.urls.indexOf(String(url)), 1);
    },
    getValue: (acc) => acc.urls.join(" "),
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(env);
  tEnv.createTemporarySystemFunction("urls", urls);
  await tEnv.executeScript(CLICKS);
  const out = await rows(
    env,
    tEnv,
    "SELECT `user`, URLS(url) OVER (PARTITION BY `user` ORDER BY cTime " +
      "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS last_two FROM clicks",
  );
  assert.deepEqual(out.sort(), [
    "+I(Bob,./cart ./prod?id=3)",
    "+I(Bob,./cart)",
    "+I(Liz,./home)",
    "+I(Mary,./home ./prod?id=1)",
    "+I(Mary,./home)",
    "+I(Mary,./prod?id=1 ./prod?id=7)",
  ]);
  const { retract: _, ...noRetract } = urls;
  const other = StreamTableEnvironment.create(StreamExecutionEnvironment.getExecutionEnvironment());
  other.createTemporarySystemFunction("urls", aggregateFunction(noRetract));
  await other.executeScript(CLICKS);
  assert.throws(
    () =>
      other.sqlQuery(
        "SELECT URLS(url) OVER (PARTITION BY `user` ORDER BY cTime ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS u FROM clicks",
      ),
    /the aggregate function URLS has no retract method, which an OVER window with a bounded frame \(n PRECEDING\) needs/,
  );
  assert.equal(
    other.sqlQuery(
      "SELECT URLS(url) OVER (PARTITION BY `user` ORDER BY cTime ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS u FROM clicks",
    ).getColumns()[0]!.type.family,
    "STRING",
  );
});
