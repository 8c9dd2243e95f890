/**
 * Seed example 7 (DESIGN §10) in the Table API: the clicks stream becomes a
 * dynamic table, and the continuous query
 * `SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user` turns it into
 * a changelog, printed one change per line:
 *
 *     +I(Mary,1)
 *     +I(Bob,1)
 *     -U(Mary,1)
 *     +U(Mary,2)
 *     +I(Liz,1)
 *     -U(Bob,1)
 *     +U(Bob,2)
 *     -U(Mary,2)
 *     +U(Mary,3)
 *
 * Run (local mode):
 *
 *     deno run -A examples/clicks.ts
 *     deno run -A examples/clicks.ts --explain   # the plan with each operator's changelog mode
 *
 * The same query in SQL is `examples/clicks.sql` (`weir sql -f examples/clicks.sql`).
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type DataStream,
  formatRow,
  type Row,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
  type Table,
} from "../mod.ts";

/** One click: who, when (`YYYY-MM-DD HH:MM:SS`) and which page. */
export interface Click {
  /** The user's name. */
  readonly user: string;
  /** When, as a SQL TIMESTAMP text. */
  readonly cTime: string;
  /** The page. */
  readonly url: string;
}

/** The seed's six clicks, in order. */
export const CLICKS: readonly Click[] = [
  { user: "Mary", cTime: "2026-01-01 12:00:00", url: "./home" },
  { user: "Bob", cTime: "2026-01-01 12:00:00", url: "./cart" },
  { user: "Mary", cTime: "2026-01-01 12:00:05", url: "./prod?id=1" },
  { user: "Liz", cTime: "2026-01-01 12:01:00", url: "./home" },
  { user: "Bob", cTime: "2026-01-01 12:01:30", url: "./prod?id=3" },
  { user: "Mary", cTime: "2026-01-01 12:01:45", url: "./prod?id=7" },
];

/** The seed's expected changelog, one change per line. */
export const EXPECTED_CHANGELOG: readonly string[] = [
  "+I(Mary,1)",
  "+I(Bob,1)",
  "-U(Mary,1)",
  "+U(Mary,2)",
  "+I(Liz,1)",
  "-U(Bob,1)",
  "+U(Bob,2)",
  "-U(Mary,2)",
  "+U(Mary,3)",
];

/**
 * Registers `clicks` as the view `clicks` of `tEnv` and returns the
 * query's table (`SELECT user, COUNT(url) AS cnt FROM clicks GROUP BY user`).
 */
export function clicksQuery(tEnv: StreamTableEnvironment, clicks: DataStream<Click>): Table {
  tEnv.createTemporaryView("clicks", clicks, [
    { name: "user", type: "VARCHAR" },
    { name: "cTime", type: "TIMESTAMP(3)" },
    { name: "url", type: "VARCHAR" },
  ]);
  return tEnv.sqlQuery("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`");
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { explain: { type: "boolean" } } });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(env);
  const counts = clicksQuery(tEnv, env.fromCollection(CLICKS).uid("clicks"));
  if (values.explain) {
    console.log(counts.explain());
  } else {
    tEnv.toChangelogStream(counts).print({ formatter: (row: Row) => formatRow(row) });
    await env.execute("clicks");
  }
}
