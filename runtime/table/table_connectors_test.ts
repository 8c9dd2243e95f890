import assert from "node:assert/strict";
import "../cluster/default_executor.ts";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import { PlanningError } from "./changelog_mode.ts";
import { insertRow, type Row } from "./row.ts";
import { type TableConnector, TableConnectorRegistry } from "./table_connectors.ts";
import { StreamTableEnvironment } from "./table_environment.ts";
import type { Sink } from "../api/sink.ts";

Deno.test("TableConnectorRegistry holds the built-ins and refuses a second factory for an identifier", () => {
  const registry = new TableConnectorRegistry();
  assert.deepEqual(registry.identifiers, ["values", "datagen", "print", "blackhole"]);
  assert.throws(
    () => registry.register({ identifier: "datagen", validate() {} }),
    (e: unknown) => e instanceof PlanningError && /'datagen' is already registered/.test(e.message),
  );
  assert.throws(
    () => registry.register({ identifier: "no spaces", validate() {} }),
    /identifier must be letters.*"no spaces"/,
  );
  assert.equal(registry.get("nope"), undefined);
});

Deno.test("a registered table connector is found by CREATE TABLE and used as source and sink", async () => {
  const seen: Row[] = [];
  const validated: string[] = [];
  const collect: Sink<Row> = { kind: "simple", invoke: (row) => void seen.push(row) };
  const twoRows: TableConnector = {
    identifier: "two-rows",
    validate(table) {
      validated.push(table.name);
      if (table.options.n !== "2") throw new PlanningError(`n must be 2 in ${table.name}`);
    },
    source: (_table, env) =>
      env.fromCollection([insertRow(["a", 1]), insertRow(["b", 2])]).setParallelism(1),
  };
  const collecting: TableConnector = {
    identifier: "collecting",
    validate() {},
    sink: () => ({ sink: collect, accepts: "append" }),
  };
  const fresh = () => StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(fresh(), { connectors: [twoRows] });
  tEnv.registerTableConnector(collecting);
  await tEnv.executeScript(
    `CREATE TABLE src (k VARCHAR, v BIGINT) WITH ('connector' = 'two-rows', 'n' = '2');
     CREATE TABLE sink_t (k VARCHAR, v BIGINT) WITH ('connector' = 'collecting');
     INSERT INTO sink_t SELECT k, v * 10 FROM src;`,
    { newEnvironment: fresh },
  );
  assert.deepEqual(validated, ["src"]);
  assert.deepEqual(seen.map((r) => r.fields), [["a", 10], ["b", 20]]);
  await assert.rejects(
    () =>
      StreamTableEnvironment.create(fresh()).executeSql(
        "CREATE TABLE x (k VARCHAR) WITH ('connector' = 'two-rows')",
      ),
    /Could not find a connector for identifier 'two-rows'.*available: values, datagen, print, blackhole/,
  );
  await assert.rejects(
    () =>
      StreamTableEnvironment.create(fresh(), { connectors: [twoRows] }).executeSql(
        "CREATE TABLE x (k VARCHAR) WITH ('connector' = 'two-rows', 'n' = '3')",
      ),
    /n must be 2 in x/,
  );
  await assert.rejects(
    async () => {
      const t = StreamTableEnvironment.create(fresh(), { connectors: [twoRows, collecting] });
      await t.executeScript(
        `CREATE TABLE src (k VARCHAR, v BIGINT) WITH ('connector' = 'two-rows', 'n' = '2');
         CREATE TABLE sink_t (k VARCHAR, c BIGINT) WITH ('connector' = 'collecting');
         INSERT INTO sink_t SELECT k, COUNT(*) FROM src GROUP BY k;`,
        { newEnvironment: fresh },
      );
    },
    /table sink_t \(connector 'collecting'\) doesn't support consuming update changes which is produced by node GroupAggregate/,
  );
});
