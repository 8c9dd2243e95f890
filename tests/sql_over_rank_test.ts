/**
 * Top-N, deduplication, OVER aggregations and SELECT DISTINCT through the
 * planner and whole jobs: each query is planned (`plan.ts` with
 * `plan_rank.ts`, `plan_over.ts`, `plan_distinct.ts`), its plan checked
 * (`EXPLAIN`), translated and run over random bids; its changelog, folded,
 * equals the same query computed as a batch over the final input.
 *
 * Most queries are syntax trees (`sql_ast.ts`, the parser's contract)
 * built here, so they don't depend on the parser; the last test runs SQL
 * text through the table environment.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import {
  formatRow,
  type Row,
  type SqlValue,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { PlanningError } from "../runtime/table/changelog_mode.ts";
import {
  explainPlan,
  type PlannerContext,
  type PlanNode,
  planQuery,
} from "../runtime/table/plan.ts";
import { compareBySortKeys } from "../runtime/table/rank.ts";
import { applyChange } from "../runtime/table/row.ts";
import type {
  Expr,
  OrderItem,
  OverFrame,
  SelectItem,
  SelectQuery,
  TableRef,
} from "../runtime/table/sql_ast.ts";
import { translatePlan } from "../runtime/table/translate.ts";
import { timeAttributeMillis } from "../runtime/table/time_attribute.ts";
import { TYPES } from "../runtime/table/types.ts";

// --- syntax tree builders ----------------------------------------------------

const col = (name: string): Expr => ({ k: "column", table: null, name });
const lit = (value: SqlValue): Expr => ({ k: "literal", value });
const bin = (op: string, left: Expr, right: Expr): Expr => ({ k: "binary", op, left, right });
const item = (expr: Expr, alias: string | null = null): SelectItem => ({ k: "expr", expr, alias });
const STAR: SelectItem = { k: "star" };
const table = (name: string): TableRef => ({ k: "table", name, alias: null, at: 0 });
const desc = (expr: Expr): OrderItem => ({ expr, descending: true });
const asc = (expr: Expr): OrderItem => ({ expr, descending: false });
const over = (
  fn: string,
  args: Expr[],
  partitionBy: Expr[],
  orderBy: OrderItem[],
  frame: OverFrame | null = null,
): Expr => ({ k: "over", fn, args, partitionBy, orderBy, frame, at: 0 });
function select(partial: Partial<SelectQuery> & Pick<SelectQuery, "items" | "from">): SelectQuery {
  return {
    distinct: false,
    where: null,
    groupBy: [],
    having: null,
    orderBy: [],
    limit: null,
    ...partial,
  };
}
/** `SELECT outer FROM (SELECT *, ROW_NUMBER() OVER (...) AS rn FROM bids) WHERE where`. */
function topN(
  outer: SelectItem[],
  partitionBy: Expr[],
  orderBy: OrderItem[],
  where: Expr,
): SelectQuery {
  return select({
    items: outer,
    from: {
      k: "subquery",
      query: select({
        items: [STAR, item(over("ROW_NUMBER", [], partitionBy, orderBy), "rn")],
        from: table("bids"),
      }),
      alias: null,
      at: 0,
    },
    where,
  });
}

// --- the table and the jobs ---------------------------------------------------

/** `bids(auction BIGINT, price BIGINT, bidder VARCHAR, ts BIGINT)`, `WATERMARK FOR ts AS ts`. */
const CONTEXT: PlannerContext = {
  lookup: (name) =>
    name === "bids"
      ? {
        columns: [
          { name: "auction", type: TYPES.BIGINT },
          { name: "price", type: TYPES.BIGINT },
          { name: "bidder", type: TYPES.STRING },
          { name: "ts", type: TYPES.BIGINT },
        ],
        watermark: { column: "ts", expr: col("ts"), at: 0 },
      }
      : undefined,
  locate: () => "",
};

/** Runs a plan over `bids` rows (one source subtask, operators at `parallelism`, default 2). */
async function run(plan: PlanNode, rows: readonly SqlValue[][], parallelism = 2): Promise<Row[]> {
  const directory = await Deno.makeTempDir({ prefix: "weir-over-rank-" });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism)
    .setCheckpointDirectory(directory); // not the shared .weir/ of the checkout
  const source = env.fromCollection(rows.map((fields): Row => ({ kind: "INSERT", fields })))
    .uid("bids").setParallelism(1);
  const sink = new CollectingSink<Row>();
  translatePlan(plan, () => source, "q").sinkTo(sink).uid("result");
  try {
    await env.execute("over and rank");
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
  return sink.committed() as Row[];
}

function fold(rows: readonly Row[]): Map<string, number> {
  const table = new Map<string, number>();
  for (const row of rows) applyChange(table, row);
  return table;
}

function tableOf(rows: readonly SqlValue[][]): Map<string, number> {
  return fold(rows.map((fields) => ({ kind: "INSERT", fields })));
}

/**
 * Random bids: `[auction, price, bidder, ts]`, ts out of order and unique
 * (rows of equal rowtime are processed in arrival order, which a parallel
 * job does not fix, so a batch comparison needs a total order).
 */
const bids = fc.array(
  fc.tuple(
    fc.integer({ min: 1, max: 3 }),
    fc.integer({ min: 0, max: 9 }),
    fc.constantFrom("ann", "bob", "cy"),
    fc.integer({ min: 0, max: 30 }),
  ),
  { minLength: 1, maxLength: 30 },
).map((rows) =>
  rows.map(([a, p, b, t], i): [number, number, string, number] => [a, p, b, t * 100 + i])
);

const JOB = { sanitizeResources: false, sanitizeOps: false };

// --- Top-N --------------------------------------------------------------------

Deno.test({
  name:
    "Top-2 per auction by price with rn: plans a Rank and its changelog folds to the batch Top-2",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("auction")), item(col("price")), item(col("bidder")), item(col("rn"))],
      [col("auction")],
      // a total order: rows of equal price would rank in arrival order, which a parallel job does not fix
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(2)),
    );
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /Rank\(strategy=\[AppendFastStrategy\], rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=2\], partitionBy=\[auction\], orderBy=\[price DESC, bidder ASC, ts ASC\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const expected: SqlValue[][] = [];
        for (const a of new Set(rows.map((r) => r[0]))) {
          rows.filter((r) => r[0] === a)
            .sort((x, y) =>
              compareBySortKeys(
                [
                  { index: 1, descending: true },
                  { index: 2, descending: false },
                  { index: 3, descending: false },
                ],
                x,
                y,
              )
            )
            .slice(0, 2)
            .forEach((r, i) => expected.push([r[0], r[1], r[2], i + 1]));
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "Top-N without rn in the output and with rn BETWEEN 2 AND 3: ranks 2..3 without the rank number",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("auction")), item(col("price"))],
      [col("auction")],
      [desc(col("price")), asc(col("ts"))],
      bin(
        "AND",
        { k: "between", expr: col("rn"), low: lit(2), high: lit(3), negated: false },
        bin(">", col("price"), lit(0)),
      ),
    );
    const plan = planQuery(query, CONTEXT);
    assert.match(
      explainPlan(plan),
      /Rank\(strategy=\[AppendFastStrategy\], rankType=\[ROW_NUMBER\], rankRange=\[rankStart=2, rankEnd=3\], partitionBy=\[auction\], orderBy=\[price DESC, ts ASC\], select=\[auction, price, bidder, ts\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[hash\[auction\]\], changelogMode=\[I\]\)\n.*TableSourceScan/,
    );
    assert.match(explainPlan(plan), /where=\[\(price > 0\)\]/);
    const rows = [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "c", 3], [1, 8, "d", 4], [2, 1, "e", 5]];
    assert.deepEqual(fold(await run(plan, rows)), tableOf([[1, 8], [1, 7]]));
  },
});

// --- Deduplication -------------------------------------------------------------

Deno.test({
  name:
    "rn = 1 ordered by the rowtime DESC, rn not selected: a row-time Deduplicate keeping each bidder's latest bid",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("bidder")), item(col("price")), item(col("ts"))],
      [col("bidder")],
      [desc(col("ts"))],
      bin("=", col("rn"), lit(1)),
    );
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /Deduplicate\(keep=\[LastRow\], key=\[bidder\], order=\[ROWTIME\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const last = new Map<SqlValue, SqlValue[]>();
        for (const r of rows) {
          const old = last.get(r[2]);
          if (old === undefined || r[3] >= (old[2] as number)) last.set(r[2], [r[2], r[1], r[3]]);
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf([...last.values()]));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "ORDER BY PROCTIME() ASC with rn <= 1: a processing-time keep-first Deduplicate, append-only",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("bidder")), item(col("price"))],
      [col("bidder")],
      [asc({ k: "call", name: "PROCTIME", args: [] })],
      bin("<=", col("rn"), lit(1)),
    );
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /Deduplicate\(keep=\[FirstRow\], key=\[bidder\], order=\[PROCTIME\]/,
    );
    const rows = [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "a", 3]];
    const out = await run(plan, rows, 1); // arrival order is the order: one subtask
    assert.ok(out.every((r) => r.kind === "INSERT"));
    assert.deepEqual(fold(out), tableOf([["a", 5], ["b", 9]]));
  },
});

// --- OVER aggregations ----------------------------------------------------------

Deno.test({
  name:
    "SUM and COUNT(*) OVER ROWS BETWEEN 1 PRECEDING: each bid with its auction's last two prices, in rowtime order",
  ...JOB,
  async fn() {
    const rows1 = { unit: "ROWS", preceding: 1 } as const;
    const query = select({
      items: [
        item(col("auction")),
        item(col("price")),
        item(col("ts")),
        item(over("SUM", [col("price")], [col("auction")], [asc(col("ts"))], rows1), "s"),
        item(over("COUNT", [], [col("auction")], [asc(col("ts"))], rows1), "n"),
      ],
      from: table("bids"),
      where: bin(">=", col("price"), lit(0)),
    });
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /OverAggregate\(partitionBy=\[auction\], orderBy=\[ts ASC\], window=\[ROWS BETWEEN 1 PRECEDING AND CURRENT ROW\], select=\[auction, price, bidder, ts, SUM\(price\) AS w0\$o0, COUNT\(\*\) AS w0\$o1\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const expected: SqlValue[][] = [];
        for (const a of new Set(rows.map((r) => r[0]))) {
          const sorted = rows.filter((r) => r[0] === a).sort((x, y) => x[3] - y[3]);
          sorted.forEach((r, i) => {
            const frame = sorted.slice(Math.max(0, i - 1), i + 1);
            expected.push([r[0], r[1], r[3], frame.reduce((s, f) => s + f[1], 0), frame.length]);
          });
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "Nexmark q6's shape, beyond Flink: AVG OVER the last 3 rows per bidder over the updating Top-1 bid per auction folds to the batch query",
  ...JOB,
  async fn() {
    // SELECT bidder, price, ts, AVG(price) OVER (PARTITION BY bidder ORDER BY ts
    //   ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a
    // FROM (SELECT bidder, price, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction
    //   ORDER BY price DESC, bidder ASC, ts ASC) AS rn FROM bids) WHERE rn <= 1) AS q
    const top = topN(
      [item(col("bidder")), item(col("price")), item(col("ts"))],
      [col("auction")],
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(1)),
    );
    const query = select({
      items: [
        item(col("bidder")),
        item(col("price")),
        item(col("ts")),
        item(
          over("AVG", [col("price")], [col("bidder")], [asc(col("ts"))], {
            unit: "ROWS",
            preceding: 2,
          }),
          "a",
        ),
      ],
      from: { k: "subquery", query: top, alias: "q", at: 0 },
    });
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /OverAggregate\(partitionBy=\[bidder\], orderBy=\[ts ASC\], window=\[ROWS BETWEEN 2 PRECEDING AND CURRENT ROW\], select=\[bidder, price, ts, AVG\(price\) AS w0\$o0\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[hash\[bidder\]\], changelogMode=\[I,UB,UA,D\]\)\n.*\n.*Rank\(strategy=\[AppendFastStrategy\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const best = new Map<number, [number, number, string, number]>();
        for (const r of rows) {
          const b = best.get(r[0]);
          if (
            b === undefined || r[1] > b[1] ||
            (r[1] === b[1] && (r[2] < b[2] || (r[2] === b[2] && r[3] < b[3])))
          ) best.set(r[0], r);
        }
        const expected: SqlValue[][] = [];
        for (const bidder of new Set([...best.values()].map((r) => r[2]))) {
          const sorted = [...best.values()].filter((r) => r[2] === bidder).sort((x, y) =>
            x[3] - y[3]
          );
          sorted.forEach((r, i) => {
            const frame = sorted.slice(Math.max(0, i - 2), i + 1).map((f) => f[1]);
            const avg = Math.trunc(frame.reduce((s, x) => s + x, 0) / frame.length);
            expected.push([r[2], r[1], r[3], avg]);
          });
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test("OVER and ROW_NUMBER shapes Flink refuses are refused with what to write instead", () => {
  const refused = (query: SelectQuery, message: RegExp) =>
    assert.throws(
      () => planQuery(query, CONTEXT),
      (e: unknown) => e instanceof PlanningError && message.test(e.message),
    );
  refused(
    select({
      items: [item(over("SUM", [col("price")], [], [asc(col("price"))]), "s")],
      from: table("bids"),
    }),
    /an OVER window must ORDER BY a rowtime attribute \(a column with WATERMARK FOR\), got price/,
  );
  refused(
    select({
      items: [item(over("SUM", [col("price")], [], [desc(col("ts"))]), "s")],
      from: table("bids"),
    }),
    /an OVER window must ORDER BY one time attribute ascending, got ORDER BY ts DESC/,
  );
  refused(
    topN([STAR], [col("auction")], [desc(col("price"))], bin(">", col("price"), lit(1))),
    /ROW_NUMBER needs an upper bound on its result rn in the outer WHERE \(e.g. rn <= 10\)/,
  );
  refused(
    select({
      items: [STAR],
      from: {
        k: "subquery",
        query: select({
          items: [STAR, item(over("RANK", [], [], [desc(col("price"))]), "r")],
          from: table("bids"),
        }),
        alias: null,
        at: 0,
      },
      where: bin("<=", col("r"), lit(3)),
    }),
    /RANK\(\) is not supported yet; use ROW_NUMBER\(\)/,
  );
  refused(
    select({
      items: [item(over("ROW_NUMBER", [], [], [desc(col("price"))]), "r")],
      from: table("bids"),
    }),
    /ROW_NUMBER\(\) OVER is supported only in a Top-N/,
  );
});

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
    const plan = planQuery(query, CONTEXT);
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

// --- Window Top-N ----------------------------------------------------------------

/** `TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), 10 ms))`. */
const TUMBLE_10: TableRef = {
  k: "windowTvf",
  fn: "TUMBLE",
  input: table("bids"),
  timeColumn: "ts",
  intervals: [10],
  partitionBy: [],
  alias: null,
  at: 0,
};

Deno.test("ROW_NUMBER PARTITION BY window_start, window_end over a window TVF plans a WindowRank, append-only", () => {
  const query = select({
    items: [STAR],
    from: {
      k: "subquery",
      query: select({
        items: [
          item(col("window_start")),
          item(col("window_end")),
          item(col("auction")),
          item(col("price")),
          item(
            over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("price"))]),
            "rn",
          ),
        ],
        from: TUMBLE_10,
      }),
      alias: null,
      at: 0,
    },
    where: bin("<=", col("rn"), lit(3)),
  });
  const plan = planQuery(query, CONTEXT);
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /WindowRank\(rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=3\], partitionBy=\[window_start, window_end\], orderBy=\[price DESC\]/,
  );
  assert.deepEqual(plan.columns.map((c) => c.name), [
    "window_start",
    "window_end",
    "auction",
    "price",
    "rn",
  ]);
});

Deno.test("ROW_NUMBER PARTITION BY window_start, window_end plans a WindowRank when the subquery does not select window_end", () => {
  // Flink's StreamPhysicalWindowRankRule looks at the PARTITION BY, not at
  // the SELECT list: a Rank here would emit -U/+U and never free a window.
  const query = select({
    items: [STAR],
    from: {
      k: "subquery",
      query: select({
        items: [
          item(col("window_start")),
          item(col("auction")),
          item(col("price")),
          item(
            over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("price"))]),
            "rn",
          ),
        ],
        from: TUMBLE_10,
      }),
      alias: null,
      at: 0,
    },
    where: bin("<=", col("rn"), lit(2)),
  });
  const plan = planQuery(query, CONTEXT);
  assert.equal(plan.mode, "append");
  const text = explainPlan(plan);
  assert.match(
    text,
    /WindowRank\(rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=2\], partitionBy=\[window_start, window_end\], orderBy=\[price DESC\]/,
  );
  assert.doesNotMatch(text, /\bRank\(/);
  assert.deepEqual(plan.columns.map((c) => c.name), ["window_start", "auction", "price", "rn"]);
});

Deno.test("a Top-N per window over a window aggregation plans a WindowRank over the WindowAggregate", () => {
  const counts = select({
    items: [
      item(col("window_start")),
      item(col("window_end")),
      item(col("auction")),
      item({ k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }, "cnt"),
    ],
    from: TUMBLE_10,
    groupBy: [col("window_start"), col("window_end"), col("auction")],
  });
  const query = select({
    items: [item(col("window_start")), item(col("auction")), item(col("cnt"))],
    from: {
      k: "subquery",
      query: select({
        items: [
          STAR,
          item(
            over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("cnt"))]),
            "rn",
          ),
        ],
        from: { k: "subquery", query: counts, alias: "c", at: 0 },
      }),
      alias: null,
      at: 0,
    },
    where: bin("<=", col("rn"), lit(1)),
  });
  const plan = planQuery(query, CONTEXT);
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /WindowRank\(.*\n.*Exchange\(distribution=\[hash\[window_start, window_end\]\].*\n.*WindowAggregate/,
  );
});

Deno.test({
  name:
    "a window Top-2 per 1-second tumbling window runs: each window's best two bids, append-only, equal to the batch Top-2 per window",
  ...JOB,
  async fn() {
    const query = select({
      items: [STAR],
      from: {
        k: "subquery",
        query: select({
          items: [
            item(col("window_start")),
            item(col("window_end")),
            item(col("price")),
            item(col("bidder")),
            item(col("ts")),
            item(
              over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [
                desc(col("price")),
                asc(col("bidder")),
                asc(col("ts")),
              ]),
              "rn",
            ),
          ],
          from: { ...TUMBLE_10, intervals: [1000] },
        }),
        alias: null,
        at: 0,
      },
      where: bin("<=", col("rn"), lit(2)),
    });
    const plan = planQuery(query, CONTEXT);
    assert.equal(plan.mode, "append");
    await fc.assert(
      fc.asyncProperty(bids, async (unsorted) => {
        // in rowtime order: with a watermark of the highest rowtime no row is late
        const rows = [...unsorted].sort((x, y) => x[3] - y[3]);
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind === "INSERT"));
        const expected: SqlValue[][] = [];
        for (const w of new Set(rows.map((r) => Math.floor(r[3] / 1000)))) {
          rows.filter((r) => Math.floor(r[3] / 1000) === w)
            .sort((x, y) =>
              compareBySortKeys(
                [
                  { index: 1, descending: true },
                  { index: 2, descending: false },
                  { index: 3, descending: false },
                ],
                x,
                y,
              )
            )
            .slice(0, 2)
            .forEach((r, i) => expected.push([w * 1000, (w + 1) * 1000, r[1], r[2], r[3], i + 1]));
        }
        const folded = fold(
          out.map((r) => ({
            kind: r.kind,
            fields: [
              timeAttributeMillis(r.fields[0] ?? null, "window_start"),
              timeAttributeMillis(r.fields[1] ?? null, "window_end"),
              ...r.fields.slice(2),
            ],
          })),
        );
        assert.deepEqual(folded, tableOf(expected));
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

// --- ORDER BY ... LIMIT --------------------------------------------------------------

Deno.test({
  name:
    "ORDER BY ... LIMIT 3 plans a SortLimit (a Top-3 without partition) whose changelog folds to the batch's best 3; LIMIT 2 alone keeps the first 2 rows, append-only",
  ...JOB,
  async fn() {
    const sorted = select({
      items: [item(col("price")), item(col("bidder")), item(col("ts"))],
      from: table("bids"),
      orderBy: [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      limit: 3,
    });
    const plan = planQuery(sorted, CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /SortLimit\(orderBy=\[price DESC, bidder ASC, ts ASC\], offset=\[0\], fetch=\[3\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[single\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const best = rows.map((r) => [r[1], r[2], r[3]] as SqlValue[]).sort((x, y) =>
          compareBySortKeys(
            [
              { index: 0, descending: true },
              { index: 1, descending: false },
              { index: 2, descending: false },
            ],
            x,
            y,
          )
        ).slice(0, 3);
        assert.deepEqual(fold(await run(plan, rows)), tableOf(best));
      }),
      { numRuns: 10 },
    );
    const first = planQuery(
      select({ items: [item(col("bidder"))], from: table("bids"), limit: 2 }),
      CONTEXT,
    );
    assert.equal(first.mode, "append");
    assert.match(explainPlan(first), /Limit\(offset=\[0\], fetch=\[2\], changelogMode=\[I\]\)/);
    const out = await run(first, [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "c", 3]], 1);
    assert.deepEqual(out.map((r) => `${r.kind} ${r.fields.join(",")}`), ["INSERT a", "INSERT b"]);
  },
});

Deno.test("ORDER BY without LIMIT, and ORDER BY a column the SELECT list lacks, are refused naming what to write", () => {
  const refused = (query: SelectQuery, message: RegExp) =>
    assert.throws(
      () => planQuery(query, CONTEXT),
      (e: unknown) => e instanceof PlanningError && message.test(e.message),
    );
  refused(
    select({ items: [STAR], from: table("bids"), orderBy: [desc(col("price"))] }),
    /ORDER BY without LIMIT must sort by a rowtime attribute ascending first, over an append-only input \(Flink's temporal sort\), got price DESC; add LIMIT n for a Top-N/,
  );
  refused(
    select({
      items: [item(col("bidder"))],
      from: table("bids"),
      orderBy: [desc(col("price"))],
      limit: 3,
    }),
    /ORDER BY price must name a column of the SELECT list \(columns: bidder\)/,
  );
});

Deno.test("an OVER query's SELECT list takes t.* of its FROM table, and refuses t.* of a table it does not read", () => {
  const window = over("COUNT", [], [col("auction")], [asc(col("ts"))]);
  const plan = planQuery(
    select({
      items: [{ k: "star", table: "b" }, item(window, "n")],
      from: { k: "table", name: "bids", alias: "b", at: 0 },
    }),
    CONTEXT,
  );
  assert.deepEqual(plan.columns.map((c) => c.name), ["auction", "price", "bidder", "ts", "n"]);
  assert.throws(
    () =>
      planQuery(
        select({ items: [{ k: "star", table: "x" }, item(window, "n")], from: table("bids") }),
        CONTEXT,
      ),
    /x\.\* names no table of the FROM clause/,
  );
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

Deno.test({
  name:
    "the hottest auction per 1-second window (a window Top-1 over a window aggregation) runs and equals the batch query",
  ...JOB,
  async fn() {
    const counts = select({
      items: [
        item(col("window_start")),
        item(col("window_end")),
        item(col("auction")),
        item({ k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }, "cnt"),
      ],
      from: { ...TUMBLE_10, intervals: [1000] },
      groupBy: [col("window_start"), col("window_end"), col("auction")],
    });
    const query = select({
      items: [item(col("window_end")), item(col("auction")), item(col("cnt"))],
      from: {
        k: "subquery",
        query: select({
          items: [
            STAR,
            item(
              over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [
                desc(col("cnt")),
                asc(col("auction")),
              ]),
              "rn",
            ),
          ],
          from: { k: "subquery", query: counts, alias: "c", at: 0 },
        }),
        alias: null,
        at: 0,
      },
      where: bin("<=", col("rn"), lit(1)),
    });
    const plan = planQuery(query, CONTEXT);
    await fc.assert(
      fc.asyncProperty(bids, async (unsorted) => {
        const rows = [...unsorted].sort((x, y) => x[3] - y[3]); // no late rows
        const perWindow = new Map<number, Map<number, number>>();
        for (const r of rows) {
          const w = Math.floor(r[3] / 1000);
          const m = perWindow.get(w) ?? new Map<number, number>();
          m.set(r[0], (m.get(r[0]) ?? 0) + 1);
          perWindow.set(w, m);
        }
        const expected: SqlValue[][] = [...perWindow].map(([w, m]) => {
          const [auction, cnt] = [...m].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]!;
          return [(w + 1) * 1000, auction, cnt];
        });
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind === "INSERT"));
        const folded = fold(out.map((r) => ({
          kind: r.kind,
          fields: [timeAttributeMillis(r.fields[0] ?? null, "window_end"), ...r.fields.slice(1)],
        })));
        assert.deepEqual(folded, tableOf(expected));
      }),
      { numRuns: 10 },
    );
  },
});

Deno.test({
  name:
    "for an upsert consumer a Top-N emits no -U, keyed by its partition keys and rank number, and folds by that key to the batch Top-2; without the key selected it is refused",
  ...JOB,
  async fn() {
    const query = topN(
      [
        item(col("auction")),
        item(col("price")),
        item(col("bidder")),
        item(col("ts")),
        item(col("rn")),
      ],
      [col("auction")],
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(2)),
    );
    const plan = planQuery(query, CONTEXT, { upsert: true });
    assert.equal(plan.mode, "upsert");
    assert.match(explainPlan(plan), /Rank\(.*changelogMode=\[I,UA,D\]\)/);
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind !== "UPDATE_BEFORE"));
        const upserted = new Map<string, SqlValue[]>(); // by (auction, rn)
        for (const r of out) {
          const key = JSON.stringify([r.fields[0], r.fields[4]]);
          if (r.kind === "DELETE") upserted.delete(key);
          else upserted.set(key, [...r.fields]);
        }
        const expected: SqlValue[][] = [];
        for (const a of new Set(rows.map((r) => r[0]))) {
          rows.filter((r) => r[0] === a)
            .sort((x, y) =>
              compareBySortKeys(
                [
                  { index: 1, descending: true },
                  { index: 2, descending: false },
                  { index: 3, descending: false },
                ],
                x,
                y,
              )
            )
            .slice(0, 2)
            .forEach((r, i) => expected.push([...r, i + 1]));
        }
        assert.deepEqual(tableOf([...upserted.values()]), tableOf(expected));
      }),
      { numRuns: 10 },
    );
    const dedup = planQuery(
      topN(
        [item(col("bidder")), item(col("price"))],
        [col("bidder")],
        [desc(col("ts"))],
        bin("=", col("rn"), lit(1)),
      ),
      CONTEXT,
      { upsert: true },
    );
    assert.match(explainPlan(dedup), /Deduplicate\(keep=\[LastRow\].*changelogMode=\[I,UA,D\]\)/);
    assert.throws(
      () =>
        planQuery(
          topN(
            [item(col("price"))],
            [col("auction")],
            [desc(col("price"))],
            bin("<=", col("rn"), lit(2)),
          ),
          CONTEXT,
          { upsert: true },
        ),
      /upsert mode over Rank needs its upsert key in the SELECT list \(the PARTITION BY columns and the rank number rn\)/,
    );
  },
});

Deno.test({
  name:
    "ORDER BY the rowtime (then price DESC) without LIMIT is a temporal sort: rows leave in that order once the watermark passes them, append-only",
  ...JOB,
  async fn() {
    const plan = planQuery(
      select({
        items: [item(col("ts")), item(col("price"))],
        from: table("bids"),
        orderBy: [asc(col("ts")), desc(col("price"))],
      }),
      CONTEXT,
    );
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /TemporalSort\(orderBy=\[ts ASC, price DESC\], changelogMode=\[I\]\)/,
    );
    // rowtimes never decrease (with a watermark of the highest rowtime a row arriving after a
    // later one could be late); rows of one rowtime arrive in another order than the price's
    const rows: SqlValue[][] = [
      [1, 5, "a", 10],
      [1, 9, "b", 10],
      [1, 7, "c", 20],
      [2, 8, "d", 20],
      [2, 1, "e", 40],
    ];
    const out = await run(plan, rows);
    assert.deepEqual(out.map((r) => `${r.kind} ${r.fields.join(",")}`), [
      "INSERT 10,9",
      "INSERT 10,5",
      "INSERT 20,8",
      "INSERT 20,7",
      "INSERT 40,1",
    ]);
  },
});
