/**
 * Window TVFs, window aggregation, regular, interval and window joins
 * through SQL text and the Table API: the seed's one-hour TUMBLE over the
 * clicks (DESIGN §10, example 7) appends one row per user and window when
 * it closes; event time from `WATERMARK FOR` and from `fromDataStream`;
 * a join of two updating GROUP BY results folds to the batch join;
 * planning errors name the column and where it is.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  formatRow,
  PlanningError,
  type Row,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { applyChange } from "../runtime/table/row.ts";

async function environment(parallelism = 1) {
  const directory = await Deno.makeTempDir({ prefix: "weir-sql-windows-joins-" });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism)
    .setCheckpointDirectory(directory);
  return { env, tEnv: StreamTableEnvironment.create(env), directory };
}

async function collect(
  run: { env: StreamExecutionEnvironment; directory: string },
  stream: { sinkTo(sink: CollectingSink<Row>): { uid(uid: string): unknown } },
): Promise<Row[]> {
  const sink = new CollectingSink<Row>();
  stream.sinkTo(sink).uid("result");
  try {
    await run.env.execute(`sql-windows-joins-${crypto.randomUUID()}`);
  } finally {
    await Deno.remove(run.directory, { recursive: true });
  }
  return sink.committed();
}

const CLICKS = "CREATE TABLE clicks (`user` VARCHAR, cTime TIMESTAMP(3), url VARCHAR,\n" +
  "  WATERMARK FOR cTime AS cTime - INTERVAL '1' SECOND) WITH ('connector' = 'values')";
const CLICK_ROWS = "INSERT INTO clicks VALUES " + [
  ["Mary", "12:00:00", "./home"],
  ["Bob", "12:00:00", "./cart"],
  ["Mary", "12:00:05", "./prod?id=1"],
  ["Liz", "12:01:00", "./home"],
  ["Bob", "12:01:30", "./prod?id=3"],
  ["Mary", "12:01:45", "./prod?id=7"],
].map(([u, t, url]) => `('${u}', '2026-01-01 ${t}', '${url}')`).join(", ");

Deno.test("the seed's one-hour TUMBLE over the clicks appends one row per user and window", async () => {
  const run = await environment(2);
  await run.tEnv.executeSql(CLICKS);
  await run.tEnv.executeSql(CLICK_ROWS);
  const table = run.tEnv.sqlQuery(
    "SELECT `user`, COUNT(url) AS cnt, window_end\n" +
      "FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' HOUR))\n" +
      "GROUP BY `user`, window_start, window_end",
  );
  const plan = table.explain();
  assert.match(
    plan,
    /WindowAggregate\(groupBy=\[user\], window=\[TUMBLE\(time_col=\[cTime\], size=\[1 h\]\)\]/,
  );
  assert.match(plan, /watermark=\[\(cTime - INTERVAL '1' SECOND\)\]/);
  assert.doesNotMatch(plan, /UB|UA/);
  const rows = await collect(run, run.tEnv.toDataStream(table));
  assert.deepEqual(rows.map(formatRow).sort(), [
    "+I(Bob,2,2026-01-01 13:00:00.000)",
    "+I(Liz,1,2026-01-01 13:00:00.000)",
    "+I(Mary,3,2026-01-01 13:00:00.000)",
  ]);
});

Deno.test("fromDataStream's watermark makes a rowtime for HOP windows", async () => {
  const run = await environment();
  const stream = run.env.fromCollection([
    { k: "a", ts: 1_000 },
    { k: "a", ts: 4_000 },
    { k: "b", ts: 6_500 },
  ]);
  run.tEnv.createTemporaryView("ev", stream, [{ name: "k", type: "VARCHAR" }, {
    name: "ts",
    type: "BIGINT",
  }], { watermark: { column: "ts", emit: "on-event" } });
  const table = run.tEnv.sqlQuery(
    "SELECT window_start, window_end, COUNT(*) AS n, MAX(k) AS mk " +
      "FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '4' SECOND)) " +
      "GROUP BY window_start, window_end",
  );
  const rows = await collect(run, run.tEnv.toDataStream(table));
  const t = (s: number) => new Date(s * 1000).toISOString().replace("T", " ").replace("Z", "");
  assert.deepEqual(rows.map(formatRow), [
    `+I(${t(-2)},${t(2)},1,a)`,
    `+I(${t(0)},${t(4)},1,a)`,
    `+I(${t(2)},${t(6)},1,a)`,
    `+I(${t(4)},${t(8)},2,b)`,
    `+I(${t(6)},${t(10)},1,b)`,
  ]);

  assert.throws(
    () =>
      run.tEnv.fromDataStream(stream, [{ name: "k", type: "VARCHAR" }], {
        watermark: { column: "k" },
      }),
    (e: unknown) =>
      e instanceof PlanningError &&
      /needs a TIMESTAMP \(or BIGINT epoch milliseconds\) column of its schema: current value is 'k' of type VARCHAR/
        .test(e.message),
  );
});

Deno.test("a LEFT JOIN of two updating GROUP BY results folds to the batch join", async () => {
  const run = await environment(2);
  await run.tEnv.executeSql(CLICKS);
  await run.tEnv.executeSql(CLICK_ROWS);
  const table = run.tEnv.sqlQuery(
    "SELECT v.`user`, v.visits, h.homes FROM\n" +
      "  (SELECT `user`, COUNT(*) AS visits FROM clicks GROUP BY `user`) AS v\n" +
      "  LEFT JOIN (SELECT `user` AS u, COUNT(*) AS homes FROM clicks WHERE url = './home' GROUP BY `user`) AS h\n" +
      "  ON v.`user` = h.u",
  );
  assert.match(table.explain(), /Join\(joinType=\[LeftOuterJoin\], where=\[\(v.user = h.u\)\]/);
  const rows = await collect(run, run.tEnv.toChangelogStream(table));
  const folded = new Map<string, number>();
  for (const row of rows) applyChange(folded, row);
  assert.deepEqual([...folded.keys()].sort(), [
    JSON.stringify(["Bob", 2, null]),
    JSON.stringify(["Liz", 1, 1]),
    JSON.stringify(["Mary", 3, 1]),
  ]);
});

Deno.test("interval and window joins explain as Flink's IntervalJoin and WindowJoin", async () => {
  const { tEnv, directory } = await environment();
  await Deno.remove(directory, { recursive: true });
  await tEnv.executeSql(CLICKS);
  await tEnv.executeSql(CLICKS.replace("clicks", "buys"));
  const interval = tEnv.explainSql(
    "SELECT c.url, b.url AS bought FROM clicks c JOIN buys b\n" +
      "ON c.`user` = b.`user` AND b.cTime BETWEEN c.cTime AND c.cTime + INTERVAL '10' MINUTE",
  );
  assert.match(
    interval,
    /IntervalJoin\(joinType=\[InnerJoin\], windowBounds=\[isRowTime=true, leftLowerBound=-600000, leftUpperBound=0, leftTimeIndex=1, rightTimeIndex=1\]/,
  );
  const windowJoin = tEnv.explainSql(
    "SELECT * FROM\n" +
      " (SELECT * FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' MINUTE))) c\n" +
      " JOIN (SELECT * FROM TABLE(TUMBLE(TABLE buys, DESCRIPTOR(cTime), INTERVAL '1' MINUTE))) b\n" +
      " ON c.`user` = b.`user` AND c.window_start = b.window_start AND c.window_end = b.window_end",
  );
  assert.match(
    windowJoin,
    /WindowJoin\(leftWindow=\[TUMBLE\(win_start=\[window_start\], win_end=\[window_end\], size=\[1 min\]\)\]/,
  );
  assert.match(windowJoin, /changelogMode=\[I\]\)\n/);
});

Deno.test("a bare column of both join inputs is refused naming both and where it is", async () => {
  const { tEnv, directory } = await environment();
  await Deno.remove(directory, { recursive: true });
  await tEnv.executeSql(CLICKS);
  await tEnv.executeSql(CLICKS.replace("clicks", "buys"));
  assert.throws(
    () => tEnv.sqlQuery("SELECT c.url,\n  url FROM clicks c JOIN buys b ON c.`user` = b.`user`"),
    (e: unknown) =>
      e instanceof PlanningError &&
      /Column 'url' is ambiguous: it is a column of c and b; qualify it \(e.g. c.url\) at line 1, column 10/
        .test(e.message),
  );
  assert.throws(
    () => tEnv.sqlQuery("SELECT c.url FROM clicks c JOIN buys b ON c.cTime > b.cTime"),
    (e: unknown) =>
      e instanceof PlanningError &&
      /has no equality between a column of each input/.test(e.message),
  );
});

Deno.test("CUMULATE and SESSION (with PARTITION BY) through SQL text", async () => {
  const run = await environment();
  await run.tEnv.executeSql(CLICKS);
  await run.tEnv.executeSql(CLICK_ROWS);
  const cumulate = run.tEnv.sqlQuery(
    "SELECT window_end, COUNT(*) AS n FROM TABLE(\n" +
      "  CUMULATE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' MINUTE, INTERVAL '3' MINUTE))\n" +
      "GROUP BY window_start, window_end",
  );
  assert.match(
    cumulate.explain(),
    /CUMULATE\(time_col=\[cTime\], max_size=\[3 min\], step=\[1 min\]\)/,
  );
  const session = run.tEnv.sqlQuery(
    "SELECT `user`, window_start, window_end, COUNT(*) AS n FROM TABLE(\n" +
      "  SESSION(TABLE clicks PARTITION BY `user`, DESCRIPTOR(cTime), INTERVAL '50' SECOND))\n" +
      "GROUP BY `user`, window_start, window_end",
  );
  assert.match(
    session.explain(),
    /SESSION\(time_col=\[cTime\], gap=\[50 s\], partition keys=\[user\]\)/,
  );
  run.tEnv.createTemporaryView("cumulated", cumulate);
  run.tEnv.createTemporaryView("sessions", session);
  const both = run.tEnv.sqlQuery(
    "SELECT 'c' AS kind, CAST(window_end AS VARCHAR) AS w, n FROM cumulated",
  );
  const rows = await collect(run, run.tEnv.toDataStream(both));
  assert.deepEqual(rows.map(formatRow), [
    "+I(c,2026-01-01 12:01:00.000,3)",
    "+I(c,2026-01-01 12:02:00.000,6)",
    "+I(c,2026-01-01 12:03:00.000,6)",
  ]);
  const again = await environment();
  await again.tEnv.executeSql(CLICKS);
  await again.tEnv.executeSql(CLICK_ROWS);
  const sessions = await collect(
    again,
    again.tEnv.toDataStream(again.tEnv.sqlQuery(
      "SELECT `user`, n FROM (SELECT `user`, window_start, window_end, COUNT(*) AS n FROM TABLE(\n" +
        "  SESSION(TABLE clicks PARTITION BY `user`, DESCRIPTOR(cTime), INTERVAL '50' SECOND))\n" +
        "GROUP BY `user`, window_start, window_end)",
    )),
  );
  assert.deepEqual(sessions.map(formatRow).sort(), [
    "+I(Bob,1)",
    "+I(Bob,1)",
    "+I(Liz,1)",
    "+I(Mary,1)",
    "+I(Mary,2)",
  ]);
});

Deno.test("a LEFT interval join through SQL text pads the rows that found nothing", async () => {
  const run = await environment(2);
  await run.tEnv.executeSql(CLICKS);
  await run.tEnv.executeSql(CLICK_ROWS);
  await run.tEnv.executeSql(CLICKS.replace("clicks", "buys"));
  await run.tEnv.executeSql(
    "INSERT INTO buys VALUES ('Mary', '2026-01-01 12:00:30', 'book'), ('Bob', '2026-01-01 12:05:00', 'pen')",
  );
  const table = run.tEnv.sqlQuery(
    "SELECT c.`user`, c.url, b.url AS bought FROM clicks c LEFT JOIN buys b\n" +
      "ON c.`user` = b.`user` AND b.cTime BETWEEN c.cTime AND c.cTime + INTERVAL '1' MINUTE",
  );
  assert.match(table.explain(), /IntervalJoin\(joinType=\[LeftOuterJoin\]/);
  assert.doesNotMatch(table.explain(), /UB|UA/);
  const rows = await collect(run, run.tEnv.toDataStream(table));
  assert.deepEqual(rows.map(formatRow).sort(), [
    "+I(Bob,./cart,null)",
    "+I(Bob,./prod?id=3,null)",
    "+I(Liz,./home,null)",
    "+I(Mary,./home,book)",
    "+I(Mary,./prod?id=1,book)",
    "+I(Mary,./prod?id=7,null)",
  ]);
});

Deno.test({
  name: "weir sql -f examples/clicks_windowed.sql appends one row per user and hour window",
  sanitizeResources: false,
  async fn() {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "cli.ts", "sql", "-f", "examples/clicks_windowed.sql"],
      cwd: new URL("..", import.meta.url),
      stdout: "piped",
      stderr: "piped",
      env: { WEIR_NATS_URL: "" },
    }).output();
    const text = new TextDecoder();
    assert.equal(output.code, 0, text.decode(output.stderr));
    const lines = text.decode(output.stdout).trim().split("\n");
    const noon = "2026-01-01 12:00:00.000,2026-01-01 13:00:00.000";
    assert.deepEqual(lines.slice(0, 3).sort(), [
      `+I(Bob,${noon},2)`,
      `+I(Liz,${noon},1)`,
      `+I(Mary,${noon},3)`,
    ]);
    assert.deepEqual(lines.slice(3), [
      "+I(Bob,2026-01-01 13:00:00.000,2026-01-01 14:00:00.000,1)",
    ]);
  },
});

Deno.test("a computed column in CREATE TABLE can be the rowtime (WatermarkAssigner after the scan)", async () => {
  const run = await environment();
  await run.tEnv.executeSql(
    "CREATE TABLE ev (k VARCHAR, double_v AS v * 2, v INT, s VARCHAR,\n" +
      "  ts AS CAST(s AS TIMESTAMP(3)), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND\n" +
      ") WITH ('connector' = 'values')",
  );
  await run.tEnv.executeSql(
    "INSERT INTO ev VALUES ('a', 1, '2026-01-01 00:00:01'), ('a', 2, '2026-01-01 00:00:04'), " +
      "('b', 5, '2026-01-01 00:00:12')",
  );
  const all = run.tEnv.sqlQuery("SELECT * FROM ev");
  assert.deepEqual(all.getColumns().map((c) => c.name), ["k", "double_v", "v", "s", "ts"]);
  const table = run.tEnv.sqlQuery(
    "SELECT k, SUM(double_v) AS total, window_end FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND))\n" +
      "GROUP BY k, window_start, window_end",
  );
  const plan = table.explain();
  assert.match(
    plan,
    /WatermarkAssigner\(rowtime=\[ts\], watermark=\[\(ts - INTERVAL '1' SECOND\)\], changelogMode=\[I\]\)\n\s+\+- Calc\(select=\[k, \(v \* 2\) AS double_v, v, s, CAST\(s AS TIMESTAMP\(3\)\) AS ts\]/,
  );
  const rows = await collect(run, run.tEnv.toDataStream(table));
  assert.deepEqual(rows.map(formatRow).sort(), [
    "+I(a,6,2026-01-01 00:00:10.000)",
    "+I(b,10,2026-01-01 00:00:20.000)",
  ]);
  const { tEnv, directory } = await environment();
  await Deno.remove(directory, { recursive: true });
  await assert.rejects(
    () =>
      tEnv.executeSql(
        "CREATE TABLE bad (s VARCHAR, u AS UPPER(s), WATERMARK FOR u AS u) WITH ('connector' = 'values')",
      ),
    /WATERMARK FOR u of bad: the rowtime column must be TIMESTAMP\(3\) or BIGINT/,
  );
});
