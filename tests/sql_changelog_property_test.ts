/**
 * The seeds' "at any time the result equals the batch query over a
 * snapshot", as a property of whole SQL jobs: random changelogs with
 * retractions (`-D`, and `-U`/`+U` pairs) enter through
 * `fromChangelogStream`; the continuous `GROUP BY` query's changelog,
 * applied to an empty table, equals the batch GROUP BY over the input's
 * final rows. (The same property over the pure operator, with many more
 * runs, is `runtime/table/group_aggregate_test.ts`.)
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { type Row, StreamExecutionEnvironment, StreamTableEnvironment } from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import {
  batchGroupBy,
  changelogOf,
  changeOperation,
} from "../runtime/table/_changelog_test_kit.ts";
import { fold } from "./_sql_job_kit.ts";

const QUERY = "SELECT k, COUNT(*) AS n, COUNT(v) AS nv, COUNT(DISTINCT v) AS d, SUM(v) AS s, " +
  "AVG(v) AS a, MIN(v) AS lo, MAX(v) AS hi FROM changes GROUP BY k";

const operation = changeOperation(["a", "b", "c", "d"], 4);

Deno.test({
  name:
    "a SQL GROUP BY over a random changelog with retractions: its changelog applied to an empty table equals the batch query over the final rows",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 40 }), async (ops) => {
        const { live, changes } = changelogOf(ops);
        const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
        const tEnv = StreamTableEnvironment.create(env);
        tEnv.createTemporaryView(
          "changes",
          tEnv.fromChangelogStream(env.fromCollection(changes).uid("changes").setParallelism(1), [
            { name: "k", type: "VARCHAR" },
            { name: "v", type: "INT" },
          ]),
        );
        const sink = new CollectingSink<Row>();
        tEnv.toChangelogStream(tEnv.sqlQuery(QUERY)).sinkTo(sink).uid("result");
        await env.execute("changelog property");
        assert.deepEqual(fold(sink.committed()), batchGroupBy(live));
      }),
      { numRuns: 40 },
    );
  },
});

Deno.test("a table made by fromChangelogStream is updating: toDataStream refuses it, naming the scan", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const tEnv = StreamTableEnvironment.create(env);
  const table = tEnv.fromChangelogStream(env.fromCollection<Row>([]), [{
    name: "k",
    type: "VARCHAR",
  }]);
  assert.throws(
    () => tEnv.toDataStream(table),
    /toDataStream doesn't support consuming update changes which is produced by node TableSourceScan\(table=\[\[\*anonymous_datastream_source\$1\*\]\], fields=\[k\]\)/,
  );
  assert.match(table.explain(), /changelogMode=\[I,UB,UA,D\]/);
});
