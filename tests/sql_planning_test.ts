/**
 * SQL and Table API planning: parse errors and unsupported features name
 * the line and column; an append-only consumer of an updating table is
 * refused naming the operator; connectors check their options; upsert
 * mode emits no `-U`; small jobs through the connectors.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  formatRow,
  PlanningError,
  RestartStrategies,
  type Row,
  SqlParseError,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { applyChange } from "../runtime/table/row.ts";

const CLICKS_DDL =
  "CREATE TABLE clicks (`user` VARCHAR, cTime VARCHAR, url VARCHAR) WITH ('connector' = 'values')";
const CLICKS_ROWS =
  "INSERT INTO clicks VALUES ('Mary', '12:00:00', './home'), ('Bob', '12:00:00', './cart'), " +
  "('Mary', '12:00:05', './prod?id=1'), ('Liz', '12:01:00', './home'), ('Bob', '12:01:30', './prod?id=3'), " +
  "('Mary', '12:01:45', './prod?id=7')";

async function clicksEnv(): Promise<
  { env: StreamExecutionEnvironment; tEnv: StreamTableEnvironment }
> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(env);
  await tEnv.executeSql(CLICKS_DDL);
  await tEnv.executeSql(CLICKS_ROWS);
  return { env, tEnv };
}

function parseErrorAt(fn: () => unknown, line: number, column: number, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof SqlParseError, `a SqlParseError, got ${String(e)}`);
    assert.deepEqual(e.position, { line, column }, e.message);
    assert.match(e.message, message);
    return true;
  });
}

Deno.test("parse errors name the line, the column and what was expected, across a script", async () => {
  const { tEnv } = await clicksEnv();
  parseErrorAt(
    () => tEnv.sqlQuery("SELECT `user`\nFROM clicks\nWHERE"),
    3,
    6,
    /^SQL parse error at line 3, column 6: unexpected end of input \(the statement is incomplete\); expecting an expression or name/,
  );
  await assert.rejects(
    () =>
      tEnv.executeScript(
        "CREATE TABLE a (x INT) WITH ('connector' = 'values');\n\nSELEC x FROM a;",
      ),
    (e: unknown) =>
      e instanceof SqlParseError && e.position.line === 3 && e.position.column === 1 &&
      /(mismatched|extraneous) input 'SELEC'; expecting .*'SELECT'/.test(e.message),
  );
});

Deno.test("SQL that Weir's syntax tree cannot express is refused naming the feature, the line and the column", async () => {
  const { tEnv } = await clicksEnv();
  const cases: [string, number, number, RegExp][] = [
    [
      "WITH t AS (SELECT url FROM clicks)\nSELECT url FROM t",
      1,
      1,
      /WITH \(common table expressions\) is not supported/,
    ],
    ["SELECT url FROM clicks\nUNION SELECT url FROM clicks", 2, 1, /UNION is not supported/],
    [
      "SELECT `user` FROM clicks\nWHERE url IN (SELECT url FROM clicks)",
      2,
      11,
      /IN \(subquery\) is not supported/,
    ],
    [
      "CREATE TABLE s (\n  name STRING NOT NULL\n) WITH ('connector' = 'values')",
      2,
      15,
      /NOT NULL \(column name\) is not supported/,
    ],
    [
      "CREATE TABLE s (\n  tags ARRAY<STRING>\n) WITH ('connector' = 'values')",
      2,
      8,
      /column tags has type ARRAY<STRING>, which is not supported \(supported: VARCHAR/,
    ],
    ["DROP TABLE clicks", 1, 1, /the statement DROP TABLE is not supported/],
    ["INSERT OVERWRITE clicks SELECT * FROM clicks", 1, 1, /INSERT OVERWRITE is not supported/],
  ];
  for (const [sql, line, column, message] of cases) {
    await assert.rejects(() => tEnv.executeScript(sql), (e: unknown) => {
      assert.ok(e instanceof SqlParseError, `${sql}: got ${String(e)}`);
      assert.match(e.message, message, sql);
      assert.deepEqual(e.position, { line, column }, `${sql}: ${e.message}`);
      return true;
    });
  }
});

Deno.test("an append-only consumer of an updating table is refused, naming the operator that produces updates", async () => {
  const { tEnv } = await clicksEnv();
  const counts = tEnv.sqlQuery("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`");
  assert.throws(
    () => tEnv.toDataStream(counts),
    (e: unknown) =>
      e instanceof PlanningError &&
      e.message.startsWith(
        "toDataStream doesn't support consuming update changes which is produced by node GroupAggregate(groupBy=[user], select=[user, COUNT(url) AS cnt])",
      ),
  );
  tEnv.createTemporaryView("counts", counts);
  const popular = tEnv.sqlQuery("SELECT `user` FROM counts WHERE cnt > 1");
  assert.throws(
    () => tEnv.toDataStream(popular),
    /produced by node GroupAggregate\(groupBy=\[user\]/,
  );
  assert.match(
    popular.explain(),
    /Calc\(select=\[user\], where=\[\(cnt > 1\)\], changelogMode=\[I,UB,UA,D\]\)/,
  );
  const pages = tEnv.sqlQuery("SELECT UPPER(url) AS page FROM clicks WHERE `user` = 'Mary'");
  assert.match(pages.explain(), /changelogMode=\[I\]\)\n\+- TableSourceScan/);
  tEnv.toDataStream(pages);
});

Deno.test("unknown tables and columns, connectors and options are refused with what exists", async () => {
  const { tEnv } = await clicksEnv();
  assert.throws(
    () => tEnv.sqlQuery("SELECT x\nFROM nowhere"),
    /Object 'nowhere' not found \(tables and views: clicks\) at line 2, column 6/,
  );
  tEnv.createTemporaryView("marys", tEnv.sqlQuery("SELECT url FROM clicks WHERE `user` = 'Mary'"));
  assert.throws(
    () => tEnv.sqlQuery("SELECT * FROM (SELECT url FROM marys_clicks) AS m"),
    /Object 'marys_clicks' not found \(tables and views: clicks, marys\) at line 1, column 32/,
  );
  assert.throws(
    () =>
      StreamTableEnvironment.create(StreamExecutionEnvironment.getExecutionEnvironment())
        .sqlQuery("SELECT * FROM tt"),
    /Object 'tt' not found \(the catalog has no tables or views; CREATE TABLE or createTemporaryView first\) at line 1, column 15/,
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT `user`,\n  page FROM clicks"),
    /Column 'page' not found in table clicks \(columns: user, cTime, url\) at line 2, column 3/,
  );
  await assert.rejects(
    () => tEnv.executeSql("CREATE TABLE k (a INT) WITH ('connector' = 'kafka')"),
    /Could not find a connector for identifier 'kafka' .*available: values, datagen, print, blackhole/,
  );
  await assert.rejects(
    () =>
      tEnv.executeSql(
        "CREATE TABLE p (a INT) WITH ('connector' = 'print', 'sink.parallelism' = '2')",
      ),
    /Unsupported option 'sink.parallelism' for connector 'print' of table p; supported: print-identifier, standard-error/,
  );
  await assert.rejects(
    () => tEnv.executeSql("CREATE TABLE g (a INT) WITH ('connector' = 'datagen')"),
    /table g needs option 'number-of-rows'/,
  );
  await assert.rejects(() => tEnv.executeSql(CLICKS_DDL), /Table or view 'clicks' already exists/);
  await assert.rejects(
    () => tEnv.executeSql("INSERT INTO clicks VALUES ('Ann', 3, './x')"),
    /row 1 of INSERT INTO clicks at line 1, column 1: column cTime is VARCHAR, got 3/,
  );
  await tEnv.executeSql("CREATE TABLE out1 (a VARCHAR) WITH ('connector' = 'blackhole')");
  assert.throws(
    () => tEnv.sqlQuery("SELECT a FROM out1"),
    /table out1 \(connector 'blackhole'\) is a sink and cannot be read/,
  );
  await assert.rejects(
    () => tEnv.executeSql("INSERT INTO out1 SELECT `user`, url FROM clicks"),
    /INSERT INTO out1: the query has 2 column\(s\), the table 1/,
  );
});

Deno.test("upsert mode emits no -U; a filter after the aggregate needs retract mode", async () => {
  const { env, tEnv } = await clicksEnv();
  const counts = tEnv.sqlQuery("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`");
  assert.throws(
    () =>
      tEnv.toChangelogStream(
        tEnv.sqlQuery(
          "SELECT `user`, COUNT(url) FROM clicks GROUP BY `user` HAVING COUNT(url) > 1",
        ),
        "upsert",
      ),
    /upsert mode after HAVING is not supported yet/,
  );
  assert.throws(
    () =>
      tEnv.toChangelogStream(
        tEnv.sqlQuery("SELECT COUNT(url) AS n FROM clicks GROUP BY `user`"),
        "upsert",
      ),
    /upsert mode needs every GROUP BY key in the SELECT list \(the upsert key\); user is missing/,
  );
  const sink = new CollectingSink<Row>();
  tEnv.toChangelogStream(counts, "upsert").sinkTo(sink).uid("upserts");
  await env.execute("upsert clicks");
  assert.deepEqual(sink.committed().map(formatRow), [
    "+I(Mary,1)",
    "+I(Bob,1)",
    "+U(Mary,2)",
    "+I(Liz,1)",
    "+U(Bob,2)",
    "+U(Mary,3)",
  ]);
});

Deno.test("a script runs each job on a fresh environment; a second job on one environment is refused", async () => {
  let environments = 0;
  const fresh = () => {
    environments += 1;
    return StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  };
  const tEnv = StreamTableEnvironment.create(fresh());
  const results = await tEnv.executeScript(
    `CREATE TABLE gen (id BIGINT, v INT) WITH ('connector' = 'datagen', 'number-of-rows' = '50',
       'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.v.min' = '1', 'fields.v.max' = '3');
     CREATE TABLE sink1 (v BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
     INSERT INTO sink1 SELECT v, COUNT(*) FROM gen GROUP BY v;
     INSERT INTO sink1 SELECT id, v FROM gen WHERE id > 10;`,
    { newEnvironment: fresh },
  );
  assert.deepEqual(results.map((r) => r.statement), [
    "CREATE TABLE",
    "CREATE TABLE",
    "INSERT",
    "INSERT",
  ]);
  assert.deepEqual(results.map((r) => r.resultKind), [
    "SUCCESS",
    "SUCCESS",
    "SUCCESS_WITH_CONTENT",
    "SUCCESS_WITH_CONTENT",
  ]);
  assert.equal(environments, 2, "the second job ran on a new environment");
  await assert.rejects(
    () => tEnv.executeSql("INSERT INTO sink1 SELECT id, v FROM gen"),
    /already ran a job/,
  );
});

Deno.test("datagen sequences and a projection with scalar functions through a job, exact rows", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
  const tEnv = StreamTableEnvironment.create(env);
  await tEnv.executeSql(
    "CREATE TABLE seq (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '6', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1')",
  );
  const table = tEnv.sqlQuery(
    "SELECT id, CASE WHEN MOD(id, 2) = 0 THEN 'even' ELSE 'odd' END AS parity, CONCAT('#', CAST(id * 10 AS VARCHAR)) AS label FROM seq WHERE id <> 3",
  );
  assert.deepEqual(table.getColumns().map((c) => `${c.name} ${c.type.name}`), [
    "id BIGINT",
    "parity STRING",
    "label STRING",
  ]);
  const sink = new CollectingSink<Row>();
  tEnv.toDataStream(table).sinkTo(sink).uid("rows");
  await env.execute("datagen projection");
  assert.deepEqual(sink.committed().map(formatRow).sort(), [
    "+I(1,odd,#10)",
    "+I(2,even,#20)",
    "+I(4,even,#40)",
    "+I(5,odd,#50)",
    "+I(6,even,#60)",
  ]);
});

Deno.test("a GROUP BY over an updating view retracts correctly: users per click count", async () => {
  const { env, tEnv } = await clicksEnv();
  tEnv.createTemporaryView(
    "counts",
    tEnv.sqlQuery("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`"),
  );
  const histogram = tEnv.sqlQuery("SELECT cnt, COUNT(*) AS users FROM counts GROUP BY cnt");
  assert.match(
    histogram.explain(),
    /GroupAggregate\(groupBy=\[cnt\], select=\[cnt, COUNT\(\*\) AS users\], changelogMode=\[I,UB,UA,D\]\)\n\+- Exchange\(distribution=\[hash\[cnt\]\], changelogMode=\[I,UB,UA,D\]\)/,
  );
  const sink = new CollectingSink<Row>();
  tEnv.toChangelogStream(histogram).sinkTo(sink).uid("histogram");
  await env.execute("histogram");
  const lines = sink.committed().map(formatRow);
  const table = new Map<string, number>();
  for (const row of sink.committed()) applyChange(table, row);
  assert.deepEqual(
    [...table.keys()].sort(),
    ["[1,1]", "[2,1]", "[3,1]"],
    "one user each with 1, 2 and 3 clicks",
  );
  assert.deepEqual(lines, [
    "+I(1,1)", // +I(Mary,1)
    "-U(1,1)", // +I(Bob,1)
    "+U(1,2)",
    "-U(1,2)", // -U(Mary,1)
    "+U(1,1)",
    "+I(2,1)", // +U(Mary,2)
    "-U(1,1)", // +I(Liz,1)
    "+U(1,2)",
    "-U(1,2)", // -U(Bob,1)
    "+U(1,1)",
    "-U(2,1)", // +U(Bob,2)
    "+U(2,2)",
    "-U(2,2)", // -U(Mary,2)
    "+U(2,1)",
    "+I(3,1)", // +U(Mary,3)
  ]);
});

Deno.test("fromDataStream: a record that does not fit the columns ends the job once, naming the column and the value", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1)
    .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
  const tEnv = StreamTableEnvironment.create(env);
  const table = tEnv.fromDataStream(
    env.fromCollection<unknown>([{ name: "a", n: 1 }, { name: "b", n: "two" }]).uid("records"),
    [{ name: "name", type: "VARCHAR" }, { name: "n", type: "BIGINT" }],
  );
  tEnv.toDataStream(table).sinkTo(new CollectingSink<Row>()).uid("rows");
  const error = await env.execute("bad record").then(() => undefined, (e: unknown) => e);
  assert.ok(error instanceof Error, "the job failed");
  assert.match(
    String(error.message),
    /column n is BIGINT, got "two" in record \{"name":"b","n":"two"\}/,
  );
  assert.match(error.message, /failed without restarts \(SuppressRestartsError/, "no restart");
});
