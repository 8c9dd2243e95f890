import assert from "node:assert/strict";
import { join } from "node:path";
import "../../runtime/cluster/default_executor.ts";
import { RestartStrategies } from "../../runtime/cluster/restart_strategy.ts";
import { WatermarkStrategy } from "../../runtime/time/watermark.ts";
import { type TestItem, TestSource } from "../testing/test_source.ts";
import { StreamExecutionEnvironment } from "../../runtime/api/environment.ts";
import type { Sink } from "../../runtime/api/sink.ts";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import type { Row } from "../../runtime/table/row.ts";
import type { TableConnector } from "../../runtime/table/table_connectors.ts";
import { StreamTableEnvironment } from "../../runtime/table/table_environment.ts";
import { TYPES } from "../../runtime/table/types.ts";
import { csvFieldValue, csvRow, filesystemTableConnector, jsonRow } from "./table.ts";

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "weir-fs-table-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function runScript(script: string): Promise<Row[]> {
  const rows: Row[] = [];
  const sink: Sink<Row> = { kind: "simple", invoke: (row) => void rows.push(row) };
  const collect: TableConnector = {
    identifier: "collect",
    validate() {},
    sink: () => ({ sink, accepts: "updates" }),
  };
  const fresh = () => StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
  const tEnv = StreamTableEnvironment.create(fresh(), {
    connectors: [filesystemTableConnector, collect],
  });
  await tEnv.executeScript(script, { newEnvironment: fresh });
  return rows;
}

/** The finished part files' lines under `dir` (hidden in-progress/pending files excluded). */
async function finishedLines(dir: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile || e.name.startsWith(".")) continue;
    const text = await Deno.readTextFile(join(dir, e.name));
    lines.push(...text.split("\n").filter((l) => l !== ""));
  }
  return lines.sort();
}

Deno.test("CSV fields are read by column type: empty is NULL but in VARCHAR, bad numbers are named", () => {
  assert.equal(csvFieldValue("", { name: "s", type: TYPES.STRING }), "");
  assert.equal(csvFieldValue("", { name: "n", type: TYPES.BIGINT }), null);
  assert.equal(csvFieldValue("-12", { name: "n", type: TYPES.BIGINT }), -12);
  assert.equal(csvFieldValue("2.5", { name: "d", type: TYPES.DOUBLE }), 2.5);
  assert.equal(csvFieldValue("TRUE", { name: "b", type: TYPES.BOOLEAN }), true);
  assert.equal(
    csvFieldValue("2026-01-01T10:00:00", { name: "t", type: TYPES.TIMESTAMP }),
    "2026-01-01 10:00:00",
  );
  assert.throws(
    () => csvFieldValue("1.5", { name: "n", type: TYPES.BIGINT }),
    /column n is BIGINT: cannot read "1.5"/,
  );
  assert.throws(
    () => csvRow("a,1,2", [{ name: "s", type: TYPES.STRING }, { name: "n", type: TYPES.BIGINT }]),
    /the line has 3 field\(s\), the table 2 column\(s\) \(s, n\)/,
  );
  assert.deepEqual(
    jsonRow('{"n": 3, "extra": 1}', [{ name: "s", type: TYPES.STRING }, {
      name: "n",
      type: TYPES.BIGINT,
    }]).fields,
    [null, 3],
  );
  assert.throws(
    () => jsonRow('{"n": "3"}', [{ name: "n", type: TYPES.BIGINT }]),
    /column n is BIGINT, got "3"/,
  );
  assert.throws(() => jsonRow("[1]", [{ name: "n", type: TYPES.BIGINT }]), /JSON object/);
});

Deno.test("a filesystem table reads CSV and JSON files and writes a query's rows as finished part files", async () => {
  await withDir(async (dir) => {
    await Deno.mkdir(join(dir, "in"));
    await Deno.writeTextFile(join(dir, "in", "a.csv"), 'Mary,3,"x,y"\nBob,,plain\n');
    await Deno.writeTextFile(join(dir, "in", "b.csv"), "Liz,7,\n");
    await Deno.writeTextFile(join(dir, "in", ".hidden.csv"), "Nobody,1,no\n");
    await Deno.writeTextFile(
      join(dir, "orders.json"),
      '{"who": "Mary", "n": 2}\n{"who": "Ann", "n": null}\n',
    );
    const rows = await runScript(`
      CREATE TABLE people (name VARCHAR, n BIGINT, note VARCHAR)
        WITH ('connector' = 'filesystem', 'path' = '${dir}/in', 'format' = 'csv');
      CREATE TABLE orders (who VARCHAR, n BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '${dir}/orders.json', 'format' = 'json');
      CREATE TABLE out_csv (name VARCHAR, n BIGINT, note VARCHAR)
        WITH ('connector' = 'filesystem', 'path' = '${dir}/out_csv', 'format' = 'csv');
      CREATE TABLE out_json (who VARCHAR, twice BIGINT)
        WITH ('connector' = 'filesystem', 'path' = '${dir}/out_json', 'format' = 'json');
      CREATE TABLE seen (name VARCHAR, n BIGINT, note VARCHAR) WITH ('connector' = 'collect');
      INSERT INTO seen SELECT * FROM people;
      INSERT INTO out_csv SELECT name, n, note FROM people WHERE name <> 'Bob';
      INSERT INTO out_json SELECT who, n * 2 FROM orders;`);
    // The source runs at parallelism 1; the collecting sink at 2 gets the rows rebalanced.
    assert.deepEqual(rows.map((r) => JSON.stringify(r.fields)).sort(), [
      '["Bob",null,"plain"]',
      '["Liz",7,""]',
      '["Mary",3,"x,y"]',
    ]);
    assert.deepEqual(await finishedLines(join(dir, "out_csv")), ["Liz,7,", 'Mary,3,"x,y"']);
    assert.deepEqual(await finishedLines(join(dir, "out_json")), [
      '{"who":"Ann","twice":null}',
      '{"who":"Mary","twice":4}',
    ]);
  });
});

Deno.test("a filesystem sink refuses an updating query, naming the GroupAggregate", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "a.csv"), "Mary,1\n");
    await assert.rejects(
      () =>
        runScript(`
        CREATE TABLE t (name VARCHAR, n BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '${dir}/a.csv', 'format' = 'csv');
        CREATE TABLE o (name VARCHAR, c BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '${dir}/o', 'format' = 'csv');
        INSERT INTO o SELECT name, COUNT(*) FROM t GROUP BY name;`),
      (e: unknown) =>
        e instanceof PlanningError &&
        /table o \(connector 'filesystem'\) doesn't support consuming update changes which is produced by node GroupAggregate/
          .test(e.message),
    );
  });
});

Deno.test("a filesystem line that does not fit ends the job naming the file, line and column", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "a.csv"), "Mary,1\nBob,two\n");
    await assert.rejects(
      () =>
        runScript(`
        CREATE TABLE t (name VARCHAR, n BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '${dir}/a.csv', 'format' = 'csv');
        CREATE TABLE s (name VARCHAR, n BIGINT) WITH ('connector' = 'collect');
        INSERT INTO s SELECT * FROM t;`),
      (e: unknown) => {
        const text = String(e instanceof Error ? e.message : e);
        return /a\.csv/.test(text) && /line 2/.test(text) && /column n is BIGINT/.test(text);
      },
    );
  });
});

Deno.test("the filesystem connector refuses bad options by name", () => {
  const table = (options: Record<string, string>) => ({
    name: "t",
    columns: [{ name: "n", type: TYPES.BIGINT }],
    options: { connector: "filesystem", ...options },
    rows: [],
    primaryKey: null,
    watermark: null,
  });
  const refused = (options: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => filesystemTableConnector.validate(table(options)),
      (e: unknown) => e instanceof PlanningError && pattern.test(e.message),
    );
  refused({ format: "csv" }, /table t needs option 'path'/);
  refused({ path: "x" }, /table t needs option 'format'/);
  refused({ path: "x", format: "avro" }, /'format' of table t must be one of 'csv', 'json'/);
  refused(
    { path: "x", format: "csv", "sink.rolling-policy.file-size": "big" },
    /'sink.rolling-policy.file-size' of table t must be a size/,
  );
  refused(
    { path: "x", format: "csv", "sink.rolling-policy.rollover-interval": "soon" },
    /'sink.rolling-policy.rollover-interval' of table t must be a duration/,
  );
  refused({ path: "x", format: "csv", "csv.header": "true" }, /Unsupported option 'csv.header'/);
  filesystemTableConnector.validate(
    table({ path: "x", format: "json", "sink.rolling-policy.file-size": "1mb" }),
  );
});

Deno.test({
  name:
    "a filesystem sink table holds each row exactly once after a failure and a restart from a checkpoint",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withDir(async (dir) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(2)
        .enableCheckpointing(30, { directory: join(dir, "checkpoints") })
        .setRestartStrategy(RestartStrategies.fixedDelay(2, 0));
      const values = Array.from({ length: 90 }, (_, i) => [`k${i % 7}`, i] as [string, number]);
      const items: TestItem<[string, number]>[] = [
        ...values.slice(0, 30),
        TestSource.awaitCheckpoint(),
        ...values.slice(30, 45),
        TestSource.fail("induced failure after row 45"),
        ...values.slice(45),
      ];
      const stream = env.fromSource(TestSource.of(items), WatermarkStrategy.noWatermarks(), "rows")
        .uid("rows").setParallelism(1);
      const tEnv = StreamTableEnvironment.create(env, { connectors: [filesystemTableConnector] });
      tEnv.createTemporaryView("input", stream, [
        { name: "k", type: "VARCHAR" },
        { name: "n", type: "BIGINT" },
      ]);
      await tEnv.executeSql(
        `CREATE TABLE output (k STRING, n BIGINT)
           WITH ('connector' = 'filesystem', 'path' = '${dir}/out', 'format' = 'json')`,
      );
      const result = await tEnv.executeSql("INSERT INTO output SELECT k, n * 2 FROM input");
      assert.equal(result.jobResult!.restarts, 1, "the induced failure restarted the job once");
      assert.deepEqual(
        await finishedLines(join(dir, "out")),
        values.map(([k, n]) => JSON.stringify({ k, n: n * 2 })).sort(),
      );
    });
  },
});
