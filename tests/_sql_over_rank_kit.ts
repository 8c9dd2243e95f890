/**
 * What the Top-N, deduplication, OVER and SELECT DISTINCT job tests share
 * (`sql_top_n_test.ts`, `sql_over_aggregate_test.ts`,
 * `sql_window_top_n_test.ts`, `sql_over_rank_text_test.ts`,
 * `sql_over_rank_failure_test.ts`): syntax-tree builders for ranked and
 * windowed queries (the plain ones come from
 * `runtime/table/_sql_test_kit.ts`), the `bids` table's planner context, a
 * runner of a plan over bid rows, the batch Top-N of bids, and random
 * bids; `fold` comes from `_sql_job_kit.ts`. Test code only.
 *
 * @module
 */

import fc from "npm:fast-check@4.11.0";
import { type Row, type SqlValue, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink } from "../testing.ts";
import type { PlannerContext, PlanNode } from "../runtime/table/plan.ts";
import { compareBySortKeys } from "../runtime/table/rank.ts";
import { fold } from "./_sql_job_kit.ts";
import type {
  Expr,
  OrderItem,
  OverFrame,
  SelectItem,
  SelectQuery,
  TableRef,
} from "../runtime/table/sql_ast.ts";
import { translatePlan } from "../runtime/table/translate.ts";
import { TYPES } from "../runtime/table/types.ts";
import { col, item, star, table } from "../runtime/table/_sql_test_kit.ts";

export { bin, col, item, lit, star, table } from "../runtime/table/_sql_test_kit.ts";
export { fold } from "./_sql_job_kit.ts";

/** `expr DESC`, an ORDER BY item. */
export const desc = (expr: Expr): OrderItem => ({ expr, descending: true });
/** `expr ASC`, an ORDER BY item. */
export const asc = (expr: Expr): OrderItem => ({ expr, descending: false });

/** `fn(args) OVER (PARTITION BY partitionBy ORDER BY orderBy [frame])`; `frame` `null`: the default. */
export const over = (
  fn: string,
  args: Expr[],
  partitionBy: Expr[],
  orderBy: OrderItem[],
  frame: OverFrame | null = null,
): Expr => ({ k: "over", fn, args, partitionBy, orderBy, frame, at: 0 });

/** `(query) [AS alias]`, a subquery in FROM. */
export const subquery = (query: SelectQuery, alias: string | null = null): TableRef => ({
  k: "subquery",
  query,
  alias,
  at: 0,
});

/** A SELECT with `items` and `from`, the other clauses empty unless `partial` gives them. */
export function select(
  partial: Partial<SelectQuery> & Pick<SelectQuery, "items" | "from">,
): SelectQuery {
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
export function topN(
  outer: SelectItem[],
  partitionBy: Expr[],
  orderBy: OrderItem[],
  where: Expr,
): SelectQuery {
  return select({
    items: outer,
    from: subquery(select({
      items: [star, item(over("ROW_NUMBER", [], partitionBy, orderBy), "rn")],
      from: table("bids"),
    })),
    where,
  });
}

/** `bids(auction BIGINT, price BIGINT, bidder VARCHAR, ts BIGINT)`, `WATERMARK FOR ts AS ts`. */
export const BIDS_CONTEXT: PlannerContext = {
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

/**
 * Runs a plan over `bids` rows (one source subtask, operators at
 * `parallelism`, default 2), checkpointing into a temporary directory (not
 * the checkout's shared `.weir/`), which it removes.
 * @returns the changelog the exactly-once sink committed.
 */
export async function run(
  plan: PlanNode,
  rows: readonly SqlValue[][],
  parallelism = 2,
): Promise<Row[]> {
  const directory = await Deno.makeTempDir({ prefix: "weir-over-rank-" });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism)
    .setCheckpointDirectory(directory);
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

/** The multiset of `rows`, as {@linkcode fold} of their `+I` rows. */
export function tableOf(rows: readonly SqlValue[][]): Map<string, number> {
  return fold(rows.map((fields) => ({ kind: "INSERT", fields })));
}

/**
 * Random bids: `[auction, price, bidder, ts]`, ts out of order and unique
 * (rows of equal rowtime are processed in arrival order, which a parallel
 * job does not fix, so a batch comparison needs a total order).
 */
export const bids: fc.Arbitrary<Bid[]> = fc.array(
  fc.tuple(
    fc.integer({ min: 1, max: 3 }),
    fc.integer({ min: 0, max: 9 }),
    fc.constantFrom("ann", "bob", "cy"),
    fc.integer({ min: 0, max: 30 }),
  ),
  { minLength: 1, maxLength: 30 },
).map((rows) => rows.map(([a, p, b, t], i): Bid => [a, p, b, t * 100 + i]));

/** A random bid of {@linkcode bids}: `[auction, price, bidder, ts]`. */
export type Bid = [number, number, string, number];

/**
 * The batch Top-`n` bids of each partition, ordered by price DESC, bidder
 * ASC, ts ASC (the order the Top-N tests rank by): partitions in the order
 * of their first bid, each bid with its partition's key and its rank
 * number (1-based).
 */
export function bestBids<K>(
  rows: readonly Bid[],
  partition: (bid: Bid) => K,
  n: number,
): { key: K; bid: Bid; rank: number }[] {
  const best: { key: K; bid: Bid; rank: number }[] = [];
  for (const key of new Set(rows.map(partition))) {
    rows.filter((r) => partition(r) === key)
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
      .slice(0, n)
      .forEach((bid, i) => best.push({ key, bid, rank: i + 1 }));
  }
  return best;
}

/** Test options of a job test: jobs leave timers and resources the sanitizers would flag. */
export const JOB = { sanitizeResources: false, sanitizeOps: false } as const;
