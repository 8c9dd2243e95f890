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
import {
  type Row,
  type SqlValue,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import { applyChange } from "../runtime/table/row.ts";

const QUERY = "SELECT k, COUNT(*) AS n, COUNT(v) AS nv, COUNT(DISTINCT v) AS d, SUM(v) AS s, " +
  "AVG(v) AS a, MIN(v) AS lo, MAX(v) AS hi FROM changes GROUP BY k";

type Live = { k: string; v: number | null };

const operation = fc.oneof(
  fc.record({
    op: fc.constant("insert" as const),
    k: fc.constantFrom("a", "b", "c", "d"),
    v: fc.option(fc.integer({ min: -4, max: 4 }), { nil: null }),
  }),
  fc.record({ op: fc.constant("delete" as const), index: fc.nat() }),
  fc.record({
    op: fc.constant("update" as const),
    index: fc.nat(),
    v: fc.option(fc.integer({ min: -4, max: 4 }), { nil: null }),
  }),
);
type Op = { op: string; k?: string; v?: number | null; index?: number };

function changelog(ops: readonly Op[]): { live: Live[]; changes: Row[] } {
  const live: Live[] = [];
  const changes: Row[] = [];
  for (const o of ops) {
    if (o.op === "insert") {
      live.push({ k: o.k!, v: o.v ?? null });
      changes.push({ kind: "INSERT", fields: [o.k!, o.v ?? null] });
    } else if (live.length > 0) {
      const i = o.index! % live.length;
      const old = live[i]!;
      if (o.op === "delete") {
        live.splice(i, 1);
        changes.push({ kind: "DELETE", fields: [old.k, old.v] });
      } else {
        live[i] = { k: old.k, v: o.v ?? null };
        changes.push({ kind: "UPDATE_BEFORE", fields: [old.k, old.v] });
        changes.push({ kind: "UPDATE_AFTER", fields: [old.k, o.v ?? null] });
      }
    }
  }
  return { live, changes };
}

function batch(live: readonly Live[]): Map<string, number> {
  const table = new Map<string, number>();
  for (const k of new Set(live.map((r) => r.k))) {
    const vs = live.filter((r) => r.k === k).map((r) => r.v);
    const nn = vs.filter((v): v is number => v !== null);
    const sum = nn.reduce((a, b) => a + b, 0);
    const fields: SqlValue[] = [
      k,
      vs.length,
      nn.length,
      new Set(nn).size,
      nn.length === 0 ? null : sum,
      nn.length === 0 ? null : Math.trunc(sum / nn.length),
      nn.length === 0 ? null : Math.min(...nn),
      nn.length === 0 ? null : Math.max(...nn),
    ];
    applyChange(table, { kind: "INSERT", fields });
  }
  return table;
}

Deno.test({
  name:
    "a SQL GROUP BY over a random changelog with retractions: its changelog applied to an empty table equals the batch query over the final rows",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 40 }), async (ops) => {
        const { live, changes } = changelog(ops);
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
        const table = new Map<string, number>();
        for (const row of sink.committed()) applyChange(table, row);
        assert.deepEqual(table, batch(live));
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
