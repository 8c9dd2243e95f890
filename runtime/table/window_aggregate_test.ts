import assert from "node:assert/strict";
import { explainPlan } from "./plan.ts";
import { PlanningError } from "./changelog_mode.ts";
import { formatRow } from "./row.ts";
import { TYPES } from "./types.ts";
import {
  agg,
  col,
  contextOf,
  item,
  runQuery,
  select,
  star,
  table,
  type TestTable,
  tvf,
  watermarkFor,
} from "./_sql_test_kit.ts";
import { planQuery } from "./plan.ts";

const HOUR = 3_600_000;
const clicks = (rows: [string, string, string][]): TestTable => ({
  columns: [
    { name: "user", type: TYPES.STRING },
    { name: "cTime", type: TYPES.TIMESTAMP },
    { name: "url", type: TYPES.STRING },
  ],
  rows,
  watermark: watermarkFor("cTime"),
});
const SEED: [string, string, string][] = [
  ["Mary", "2026-01-01 12:00:00", "./home"],
  ["Bob", "2026-01-01 12:00:00", "./cart"],
  ["Mary", "2026-01-01 12:00:05", "./prod?id=1"],
  ["Liz", "2026-01-01 12:01:00", "./home"],
  ["Bob", "2026-01-01 12:01:30", "./prod?id=3"],
  ["Mary", "2026-01-01 12:01:45", "./prod?id=7"],
];

const grouped = (
  fn: "TUMBLE" | "HOP" | "CUMULATE" | "SESSION",
  intervals: number[],
  by = ["user"],
) =>
  select(tvf(fn, table("clicks"), "cTime", intervals, fn === "SESSION" ? by : []), [
    ...by.map((k) => item(col(k))),
    item(agg("COUNT", col("url")), "cnt"),
    item(col("window_start")),
    item(col("window_end")),
  ], { groupBy: [...by.map((k) => col(k)), col("window_start"), col("window_end")] });

Deno.test("the seed's one-hour TUMBLE appends one row per user and window when it closes", async () => {
  const { plan, rows } = await runQuery(grouped("TUMBLE", [HOUR]), {
    clicks: clicks([...SEED, ["Bob", "2026-01-01 13:10:00", "./x"]]),
  });
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /\+- WindowAggregate\(groupBy=\[user\], window=\[TUMBLE\(time_col=\[cTime\], size=\[1 h\]\)\], select=\[user, start\('w\$\) AS window_start, end\('w\$\) AS window_end, COUNT\(url\) AS cnt\], changelogMode=\[I\]\)\n {3}\+- Exchange\(distribution=\[hash\[user\]\], changelogMode=\[I\]\)/,
  );
  assert.match(explainPlan(plan), /TableSourceScan\(table=\[\[clicks, watermark=\[cTime\]\]\]/);
  // The 12:00 window fires on the 13:10 row's watermark, in key order of its timers; the 13:00 window at the end.
  const first = rows.slice(0, 3).map(formatRow).sort();
  assert.deepEqual(first, [
    "+I(Bob,2,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000)",
    "+I(Liz,1,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000)",
    "+I(Mary,3,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000)",
  ]);
  assert.deepEqual(rows.slice(3).map(formatRow), [
    "+I(Bob,1,2026-01-01 13:00:00.000,2026-01-01 14:00:00.000)",
  ]);
});

Deno.test("a row for a window the watermark passed is dropped", async () => {
  const { rows } = await runQuery(grouped("TUMBLE", [HOUR]), {
    clicks: clicks([
      ["Mary", "2026-01-01 12:00:00", "a"],
      ["Mary", "2026-01-01 13:00:00", "b"], // watermark 13:00 closes [12:00, 13:00)
      ["Mary", "2026-01-01 12:30:00", "late"],
    ]),
  });
  assert.deepEqual(rows.map(formatRow), [
    "+I(Mary,1,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000)",
    "+I(Mary,1,2026-01-01 13:00:00.000,2026-01-01 14:00:00.000)",
  ]);
});

Deno.test("HOP, CUMULATE and SESSION windows count what batch windows over the rows count", async () => {
  const hop = await runQuery(grouped("HOP", [30 * 60_000, HOUR], []), { clicks: clicks(SEED) });
  assert.deepEqual(hop.rows.map(formatRow), [
    "+I(6,2026-01-01 11:30:00.000,2026-01-01 12:30:00.000)",
    "+I(6,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000)",
  ]);
  const cumulate = await runQuery(grouped("CUMULATE", [60_000, 3 * 60_000], []), {
    clicks: clicks(SEED),
  });
  assert.deepEqual(cumulate.rows.map(formatRow), [
    "+I(3,2026-01-01 12:00:00.000,2026-01-01 12:01:00.000)",
    "+I(6,2026-01-01 12:00:00.000,2026-01-01 12:02:00.000)",
    "+I(6,2026-01-01 12:00:00.000,2026-01-01 12:03:00.000)",
  ]);
  const session = await runQuery(grouped("SESSION", [60_000]), { clicks: clicks(SEED) });
  assert.deepEqual(session.rows.map(formatRow).sort(), [
    "+I(Bob,1,2026-01-01 12:00:00.000,2026-01-01 12:01:00.000)",
    "+I(Bob,1,2026-01-01 12:01:30.000,2026-01-01 12:02:30.000)",
    "+I(Liz,1,2026-01-01 12:01:00.000,2026-01-01 12:02:00.000)",
    "+I(Mary,1,2026-01-01 12:01:45.000,2026-01-01 12:02:45.000)",
    "+I(Mary,2,2026-01-01 12:00:00.000,2026-01-01 12:01:05.000)",
  ]);
});

Deno.test("a window TVF without aggregation appends the window columns to each row", async () => {
  const { plan, rows } = await runQuery(
    select(tvf("HOP", table("clicks"), "cTime", [60_000, 120_000]), [star]),
    { clicks: clicks(SEED.slice(0, 1)) },
  );
  assert.match(
    explainPlan(plan),
    /WindowTableFunction\(window=\[HOP\(time_col=\[cTime\], size=\[2 min\], slide=\[1 min\]\)\], changelogMode=\[I\]\)/,
  );
  assert.deepEqual(plan.columns.map((c) => c.name), [
    "user",
    "cTime",
    "url",
    "window_start",
    "window_end",
    "window_time",
  ]);
  assert.deepEqual(rows.map(formatRow), [
    "+I(Mary,2026-01-01 12:00:00,./home,2026-01-01 12:00:00.000,2026-01-01 12:02:00.000,2026-01-01 12:01:59.999)",
    "+I(Mary,2026-01-01 12:00:00,./home,2026-01-01 11:59:00.000,2026-01-01 12:01:00.000,2026-01-01 12:00:59.999)",
  ]);
});

Deno.test("window TVFs refuse a time column that is no rowtime attribute, and SESSION without aggregation", () => {
  const { watermark: _, ...plain } = clicks(SEED);
  const noWatermark = { clicks: plain };
  assert.throws(
    () => planQuery(grouped("TUMBLE", [HOUR]), contextOf(noWatermark)),
    (e: unknown) =>
      e instanceof PlanningError &&
      /the time column cTime must be a rowtime attribute \(declare WATERMARK FOR cTime/.test(
        e.message,
      ),
  );
  assert.throws(
    () =>
      planQuery(
        select(tvf("SESSION", table("clicks"), "cTime", [60_000]), [star]),
        contextOf({ clicks: clicks(SEED) }),
      ),
    (e: unknown) =>
      e instanceof PlanningError && /SESSION windows need a window aggregation/.test(e.message),
  );
  assert.throws(
    () => planQuery(grouped("CUMULATE", [70_000, HOUR]), contextOf({ clicks: clicks(SEED) })),
    /CUMULATE needs a max size that is a multiple of its step/,
  );
});
