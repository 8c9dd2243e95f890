/**
 * SELECT DISTINCT (a GroupAggregate without aggregates), and Top-N,
 * deduplication, OVER and DISTINCT through SQL text and the table
 * environment: their exact printed changelogs, and `SET
 * 'table.exec.state.ttl'` reaching a GROUP BY's and a Top-1's state.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import {
  formatRow,
  type Row,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { explainPlan, planQuery } from "../runtime/table/plan.ts";
import {
  bids,
  BIDS_CONTEXT,
  bin,
  col,
  fold,
  item,
  JOB,
  lit,
  run,
  select,
  table,
  tableOf,
} from "./_sql_over_rank_kit.ts";

// --- SELECT DISTINCT -------------------------------------------------------------

Deno.test({
  name:
    "SELECT DISTINCT: a GroupAggregate without aggregates, append-only over an append-only input",
  ...JOB,
  async fn() {
    const query = select({
      items: [item(col("bidder")), item(col("auction"))],
      distinct: true,
      from: table("bids"),
      where: bin(">", col("price"), lit(2)),
    });
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /GroupAggregate\(groupBy=\[bidder, auction\], select=\[bidder, auction\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind === "INSERT"));
        const distinct = new Map(
          rows.filter((r) => r[1] > 2).map((r) => [`${r[2]}/${r[0]}`, [r[2], r[0]]]),
        );
        assert.deepEqual(fold(out), tableOf([...distinct.values()]));
      }),
      { numRuns: 10 },
    );
  },
});

// --- through SQL text and the table environment ----------------------------------

Deno.test({
  name:
    "through SQL text: a Top-2, a keep-last deduplication, an OVER aggregation and SELECT DISTINCT print their exact changelogs",
  ...JOB,
  async fn() {
    const cases: [string, string[]][] = [
      [
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bid) WHERE rn <= 2",
        [
          "+I(1,10,5,2024-01-01 00:00:01.000,1)",
          "-U(1,10,5,2024-01-01 00:00:01.000,1)",
          "+U(1,11,9,2024-01-01 00:00:02.000,1)",
          "+I(1,10,5,2024-01-01 00:00:01.000,2)",
          "+I(2,10,3,2024-01-01 00:00:03.000,1)",
          "-U(1,10,5,2024-01-01 00:00:01.000,2)",
          "+U(1,12,7,2024-01-01 00:00:04.000,2)",
        ],
      ],
      [
        "SELECT bidder, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY `dateTime` DESC) AS rank_number FROM bid) WHERE rank_number <= 1",
        ["+I(10,5)", "+I(11,9)", "-U(10,5)", "+U(10,3)", "+I(12,7)"],
      ],
      [
        "SELECT auction, price, SUM(price) OVER (PARTITION BY auction ORDER BY `dateTime` ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM bid",
        ["+I(1,5,5)", "+I(1,9,14)", "+I(2,3,3)", "+I(1,7,16)"],
      ],
      ["SELECT DISTINCT bidder FROM bid", ["+I(10)", "+I(11)", "+I(12)"]],
    ];
    for (const [sql, expected] of cases) {
      const directory = await Deno.makeTempDir({ prefix: "weir-over-rank-" });
      try {
        const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1)
          .setCheckpointDirectory(directory);
        const tEnv = StreamTableEnvironment.create(env);
        await tEnv.executeSql(
          "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), " +
            "WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '1' SECOND) WITH ('connector' = 'values')",
        );
        await tEnv.executeSql(
          "INSERT INTO bid VALUES (1, 10, 5, TIMESTAMP '2024-01-01 00:00:01'), (1, 11, 9, TIMESTAMP '2024-01-01 00:00:02'), " +
            "(2, 10, 3, TIMESTAMP '2024-01-01 00:00:03'), (1, 12, 7, TIMESTAMP '2024-01-01 00:00:04')",
        );
        await tEnv.executeSql("SET 'table.exec.state.ttl' = '1 h'"); // state kept: nothing expires in this run
        const sink = new CollectingSink<Row>();
        tEnv.toChangelogStream(tEnv.sqlQuery(sql)).sinkTo(sink).uid("result");
        await env.execute("over and rank sql");
        assert.deepEqual(sink.committed().map((r) => formatRow(r as Row)), expected, sql);
      } finally {
        await Deno.remove(directory, { recursive: true });
      }
    }
  },
});

Deno.test({
  name:
    "SET 'table.exec.state.ttl' reaches the operators of a SQL job: after a pause longer than the TTL, a GROUP BY and a Top-1 start their key again",
  ...JOB,
  async fn() {
    const run = async (sql: string, ttl: string | null): Promise<string[]> => {
      const directory = await Deno.makeTempDir({ prefix: "weir-over-rank-" });
      try {
        const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1)
          .setCheckpointDirectory(directory);
        const tEnv = StreamTableEnvironment.create(env);
        // with a TTL, the source waits 2.5 s of processing time between the rows: the state the
        // first wrote is older than the 0.5 s TTL when the second comes, whatever the delays
        const source = env.fromSource(
          TestSource.of<[string, number]>(
            ttl === null ? [["a", 5], ["a", 3]] : [["a", 5], TestSource.pause(2_500), ["a", 3]],
          ),
          WatermarkStrategy.noWatermarks(),
          "t",
        ).uid("t");
        tEnv.createTemporaryView("t", source, [
          { name: "k", type: "VARCHAR" },
          { name: "v", type: "INT" },
        ]);
        if (ttl !== null) await tEnv.executeSql(`SET 'table.exec.state.ttl' = '${ttl}'`);
        const sink = new CollectingSink<Row>();
        tEnv.toChangelogStream(tEnv.sqlQuery(sql)).sinkTo(sink).uid("result");
        await env.execute("state ttl");
        return sink.committed().map((r) => formatRow(r as Row));
      } finally {
        await Deno.remove(directory, { recursive: true });
      }
    };
    const groupBy = "SELECT k, COUNT(*) AS n FROM t GROUP BY k";
    assert.deepEqual(await run(groupBy, null), ["+I(a,1)", "-U(a,1)", "+U(a,2)"]);
    assert.deepEqual(await run(groupBy, "500 ms"), ["+I(a,1)", "+I(a,1)"]);
    const top1 =
      "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) WHERE rn <= 1";
    assert.deepEqual(await run(top1, null), ["+I(a,5,1)"]);
    assert.deepEqual(await run(top1, "500 ms"), ["+I(a,5,1)", "+I(a,3,1)"]);
  },
});
