import assert from "node:assert/strict";
import "../../runtime/cluster/default_executor.ts";
import { StreamExecutionEnvironment } from "../../runtime/api/environment.ts";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import { StreamTableEnvironment } from "../../runtime/table/table_environment.ts";
import { TYPES } from "../../runtime/table/types.ts";
import { CONNECTION, NATS_URL, withJetStream } from "./_test_kit.ts";
import { readCommitted } from "./reader.ts";
import { jetstreamTableConnector, startPosition } from "./table.ts";

const text = new TextEncoder();

function tableEnv(): { tEnv: StreamTableEnvironment; fresh: () => StreamExecutionEnvironment } {
  const fresh = () =>
    StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1).enableCheckpointing(50);
  return {
    tEnv: StreamTableEnvironment.create(fresh(), { connectors: [jetstreamTableConnector] }),
    fresh,
  };
}

Deno.test({
  name:
    "a jetstream table reads a stream's JSON messages and a query writes its rows exactly-once into another subject",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withJetStream(async ({ js, stream, bucket }) => {
      const clicks = [
        { user: "Mary", url: "./home", ts: "2026-01-01 12:00:00" },
        { user: "Bob", url: "./cart", ts: "2026-01-01 12:00:00" },
        { user: "Mary", url: "./prod?id=1", ts: "2026-01-01 12:00:05", extra: true },
        { user: "Liz", url: null, ts: "2026-01-01T12:01:00" },
      ];
      for (const c of clicks) await js.publish(`${stream}.in`, text.encode(JSON.stringify(c)));
      const { tEnv, fresh } = tableEnv();
      await tEnv.executeScript(
        `CREATE TABLE clicks (\`user\` VARCHAR, url VARCHAR, ts TIMESTAMP(3)) WITH (
           'connector' = 'jetstream', 'servers' = '${NATS_URL}', 'stream' = '${stream}',
           'subject' = '${stream}.in', 'format' = 'json', 'scan.bounded.mode' = 'latest-offset',
           'transaction.bucket' = '${bucket}');
         CREATE TABLE visits (\`user\` VARCHAR, url VARCHAR, ts TIMESTAMP(3)) WITH (
           'connector' = 'jetstream', 'servers' = '${NATS_URL}', 'stream' = '${stream}',
           'subject' = '${stream}.out', 'format' = 'json', 'transaction.bucket' = '${bucket}');
         INSERT INTO visits SELECT \`user\`, url, ts FROM clicks WHERE \`user\` <> 'Bob';`,
        { newEnvironment: fresh },
      );
      const got: unknown[] = [];
      for await (
        const r of readCommitted({
          connection: CONNECTION,
          stream,
          filterSubject: `${stream}.out`,
          txnBucket: bucket,
          bounded: true,
        })
      ) {
        got.push(JSON.parse(new TextDecoder().decode(r.data)));
      }
      assert.deepEqual(got, [
        { user: "Mary", url: "./home", ts: "2026-01-01 12:00:00" },
        { user: "Mary", url: "./prod?id=1", ts: "2026-01-01 12:00:05" },
        { user: "Liz", url: null, ts: "2026-01-01 12:01:00" },
      ]);
    });
  },
});

Deno.test({
  name: "a jetstream sink refuses an updating query at planning, naming the GroupAggregate",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { tEnv, fresh } = tableEnv();
    await assert.rejects(
      () =>
        tEnv.executeScript(
          `CREATE TABLE src (k VARCHAR) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
           CREATE TABLE counts (k VARCHAR, n BIGINT) WITH ('connector' = 'jetstream',
             'servers' = '${NATS_URL}', 'stream' = 's', 'subject' = 's.x', 'format' = 'json');
           INSERT INTO counts SELECT k, COUNT(*) FROM src GROUP BY k;`,
          { newEnvironment: fresh },
        ),
      (e: unknown) =>
        e instanceof PlanningError &&
        /table counts \(connector 'jetstream'\) doesn't support consuming update changes which is produced by node GroupAggregate/
          .test(e.message),
    );
  },
});

Deno.test("the jetstream connector checks its options, naming them", () => {
  const table = (options: Record<string, string>) => ({
    name: "t",
    columns: [{ name: "n", type: TYPES.BIGINT }],
    options: { connector: "jetstream", servers: NATS_URL, stream: "s", format: "json", ...options },
    rows: [],
    primaryKey: null,
    watermark: null,
  });
  const refused = (options: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => jetstreamTableConnector.validate(table(options)),
      (e: unknown) => e instanceof PlanningError && pattern.test(e.message),
    );
  refused({ format: "avro" }, /'format' of table t must be one of 'json'/);
  refused({ stream: "" }, /'stream' of table t must not be empty/);
  refused(
    { "scan.startup.mode": "group-offsets" },
    /'scan.startup.mode' of table t must be one of/,
  );
  refused(
    { "scan.startup.timestamp-millis": "5" },
    /'scan.startup.timestamp-millis' of table t needs 'scan.startup.mode' = 'timestamp'/,
  );
  refused(
    { "scan.startup.mode": "timestamp" },
    /table t needs option 'scan.startup.timestamp-millis'/,
  );
  refused(
    { "sink.delivery-guarantee": "maybe" },
    /'sink.delivery-guarantee' of table t must be one of/,
  );
  refused({ "properties.group.id": "g" }, /Unsupported option 'properties.group.id'/);
  assert.throws(
    () => jetstreamTableConnector.validate({ ...table({}), primaryKey: ["n"] }),
    /table t: connector 'jetstream' doesn't support a PRIMARY KEY \(n\)/,
  );
  assert.deepEqual(
    startPosition(
      table({ "scan.startup.mode": "specific-offset", "scan.startup.specific-offset": "7" }),
    ),
    { sequence: 7 },
  );
  assert.throws(
    () => jetstreamTableConnector.sink!(table({ subject: "s.*" })),
    /a sink's subject cannot hold wildcards/,
  );
});
