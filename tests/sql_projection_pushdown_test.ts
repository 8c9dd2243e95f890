/**
 * Projection push-down into table sources (runtime/table/projection_pushdown.ts):
 * which columns a statement references, that a nexmark scan reads only
 * those (EXPLAIN's fields), and that queries give the same rows with and
 * without push-down (a connector without projection support reads whole
 * rows), including a table scanned both pruned and whole by one job.
 *
 * Most queries are compared change by change. Nexmark q6's shape (an OVER
 * aggregate over a Top-1 of a regular join, planned by
 * `retract_over_aggregate.ts` where Flink refuses it) is compared by its
 * folded result instead: its changelog depends on how the auction and bid
 * sources interleave at the join (an auction arriving late releases its
 * buffered bids in one burst, so a seller's OVER partition sees its
 * auctions' Top-1 changes in another order), and whole rows, being wider,
 * flush at other points than pruned ones. Under load this made the two runs
 * emit different `-U`/`+U`/`+I` rows for the same events; the table the
 * changelog folds to (the batch query's result) does not depend on it.
 */
import assert from "node:assert/strict";
import "../runtime/cluster/default_executor.ts";
import { StreamExecutionEnvironment } from "../runtime/api/environment.ts";
import type { Sink } from "../runtime/api/sink.ts";
import { applyChange, formatRow, type Row } from "../runtime/table/row.ts";
import { parseScript } from "../runtime/table/parser.ts";
import { referencedColumns } from "../runtime/table/projection_pushdown.ts";
import type { TableConnector } from "../runtime/table/table_connectors.ts";
import { StreamTableEnvironment } from "../runtime/table/table_environment.ts";
import { nexmarkTableConnector } from "../connectors/datagen/nexmark/table.ts";

/** The nexmark connector without projection support: every scan reads every column. */
const wholeRows: TableConnector = {
  ...nexmarkTableConnector,
  identifier: "nexmark_whole",
  supportsProjection: false,
};

function ddl(connector: string): string {
  const options = (kind: string) =>
    `WITH ('connector' = '${connector}', 'nexmark.table' = '${kind}', 'events.num' = '3000', 'generator.seed' = '11')`;
  return `CREATE TABLE bid (
      auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
      \`dateTime\` TIMESTAMP(3), extra VARCHAR,
      WATERMARK FOR \`dateTime\` AS \`dateTime\` - INTERVAL '4' SECOND
    ) ${options("bid")};
    CREATE TABLE auction (
      id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
      \`dateTime\` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR,
      WATERMARK FOR \`dateTime\` AS \`dateTime\` - INTERVAL '4' SECOND
    ) ${options("auction")};`;
}

function environment(rows: Row[]): {
  tEnv: StreamTableEnvironment;
  fresh: () => StreamExecutionEnvironment;
} {
  const sink: Sink<Row> = { kind: "simple", invoke: (row) => void rows.push(row) };
  const collecting: TableConnector = {
    identifier: "collect",
    validate() {},
    sink: () => ({ sink, accepts: "updates" }),
  };
  const fresh = () => StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const tEnv = StreamTableEnvironment.create(fresh(), {
    connectors: [nexmarkTableConnector, wholeRows, collecting],
  });
  return { tEnv, fresh };
}

/**
 * Runs `statements` after the DDL over `connector`. With `compare` =
 * `changelog`, the collected changes, formatted and sorted; with `fold`, the
 * table they fold to (`applyChange`: `-U`/`-D` remove an equal row), as
 * sorted `fields xcount` lines.
 */
async function run(
  connector: string,
  statements: string,
  compare: "changelog" | "fold",
): Promise<string[]> {
  const rows: Row[] = [];
  const { tEnv, fresh } = environment(rows);
  await tEnv.executeScript(`${ddl(connector)}\n${statements}`, { newEnvironment: fresh });
  if (compare === "changelog") return rows.map(formatRow).sort();
  const table = new Map<string, number>();
  for (const row of rows) applyChange(table, row);
  return [...table].map(([fields, count]) => `${fields} x${count}`).sort();
}

function selectOf(sql: string) {
  const [statement] = parseScript(sql);
  if (statement?.k !== "select") throw new Error(`not a SELECT: ${sql}`);
  return statement.query;
}

Deno.test("referencedColumns lists every column name of a statement, in any clause, and the tables a * reads whole", () => {
  const { names, whole } = referencedColumns(selectOf(
    `SELECT auction, MAX(price) AS m FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
     WHERE channel IN ('a') GROUP BY auction, window_start, window_end HAVING COUNT(*) > 1`,
  ));
  for (const name of ["auction", "price", "dateTime", "datetime", "channel", "window_start"]) {
    assert.ok(names.has(name), name);
  }
  assert.ok(!names.has("url") && !names.has("extra") && !names.has("bidder"));
  assert.equal(whole.size, 0);
  const nested = referencedColumns(selectOf(
    `SELECT x FROM (SELECT url AS x FROM bid WHERE bidder > 0) S JOIN auction A ON S.x = A.itemName`,
  ));
  for (const name of ["url", "bidder", "x", "itemName"]) assert.ok(nested.names.has(name), name);
  assert.deepEqual([...referencedColumns(selectOf("SELECT * FROM bid")).whole], ["bid"]);
  assert.deepEqual(
    [...referencedColumns(selectOf("SELECT price FROM (SELECT B.* FROM bid B) T")).whole],
    ["bid"],
  );
  // a * through star-only subqueries and a join reaches both tables
  assert.deepEqual(
    [
      ...referencedColumns(
        selectOf("SELECT * FROM (SELECT * FROM bid B JOIN auction A ON B.auction = A.id)"),
      ).whole,
    ].sort(),
    ["auction", "bid"],
  );
  // a subquery with an explicit list stops a * (Nexmark q6's shape)
  const q6 = referencedColumns(selectOf(
    `SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY price DESC) AS rn
       FROM (SELECT A.id, B.price FROM auction A, bid B WHERE A.id = B.auction)) WHERE rn <= 1`,
  ));
  assert.equal(q6.whole.size, 0);
  assert.equal(referencedColumns(selectOf("SELECT COUNT(*) AS n FROM bid")).whole.size, 0);
});

Deno.test("a nexmark scan reads only the referenced columns and its rowtime; a * reads them all", () => {
  const { tEnv } = environment([]);
  for (const statement of ddl("nexmark").split(";").filter((s) => s.trim() !== "")) {
    tEnv.executeSql(statement);
  }
  const pruned = tEnv.explainSql(
    "SELECT auction, MAX(price) AS m FROM bid WHERE channel = 'Google' GROUP BY auction",
  );
  assert.match(pruned, /fields=\[auction, price, channel, dateTime\]/);
  const joined = tEnv.explainSql(
    "SELECT A.id, B.price FROM auction A JOIN bid B ON A.id = B.auction WHERE A.category = 10",
  );
  assert.match(joined, /table=\[\[auction[^\n]*fields=\[id, dateTime, category\]/);
  assert.match(joined, /table=\[\[bid[^\n]*fields=\[auction, price, dateTime\]/);
  assert.match(
    tEnv.explainSql("SELECT * FROM bid"),
    /fields=\[auction, bidder, price, channel, url, dateTime, extra\]/,
  );
  const q6 = tEnv.explainSql(
    `SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY id ORDER BY price DESC) AS rn
       FROM (SELECT A.id, B.price FROM auction A, bid B WHERE A.id = B.auction)) WHERE rn <= 1`,
  );
  assert.match(q6, /table=\[\[auction[^\n]*fields=\[id, dateTime\]/);
  assert.match(q6, /table=\[\[bid[^\n]*fields=\[auction, price, dateTime\]/);
});

Deno.test("queries give the same rows with projection push-down as with whole rows", async () => {
  const queries = [
    // a join with a filter on each side, a GROUP BY over it (Nexmark q3/q4 shapes)
    `CREATE TABLE out_t (category BIGINT, m BIGINT) WITH ('connector' = 'collect');
     INSERT INTO out_t SELECT A.category, MAX(B.price) FROM auction A, bid B
       WHERE A.id = B.auction AND B.\`dateTime\` BETWEEN A.\`dateTime\` AND A.expires
       GROUP BY A.id, A.category;`,
    // bid scanned twice (q7's shape): a window aggregate and a join back to it
    `CREATE TABLE out_t (auction BIGINT, price BIGINT, url VARCHAR) WITH ('connector' = 'collect');
     INSERT INTO out_t SELECT B.auction, B.price, B.url FROM bid B
       JOIN (SELECT MAX(price) AS maxprice, window_end AS we FROM TABLE(
         TUMBLE(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end) B1
       ON B.price = B1.maxprice
       WHERE B.\`dateTime\` BETWEEN B1.we - INTERVAL '10' SECOND AND B1.we;`,
    // a view reads bid whole while the statement reads it pruned: two sources of one table
    `CREATE VIEW everything AS SELECT * FROM bid;
     CREATE TABLE out_t (auction BIGINT, n BIGINT) WITH ('connector' = 'collect');
     INSERT INTO out_t SELECT B.auction, COUNT(*) FROM bid B JOIN everything E
       ON B.auction = E.auction AND B.bidder = E.bidder AND B.\`dateTime\` = E.\`dateTime\`
       GROUP BY B.auction;`,
  ];
  // Nexmark q6's shape: * over subqueries with an explicit list, Top-1 then OVER;
  // its changelog depends on the sources' interleaving (see the module doc), its fold does not
  const q6Shape =
    `CREATE TABLE out_t (seller BIGINT, avg_price BIGINT) WITH ('connector' = 'collect');
     INSERT INTO out_t SELECT Q.seller, AVG(Q.price) OVER (PARTITION BY Q.seller
         ORDER BY Q.\`dateTime\` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
       FROM (SELECT * FROM (SELECT *, ROW_NUMBER() OVER (
           PARTITION BY id, seller ORDER BY price DESC, \`dateTime\` ASC) AS rownum
         FROM (SELECT A.id, A.seller, B.price, B.\`dateTime\` FROM auction AS A, bid AS B
           WHERE A.id = B.auction AND B.\`dateTime\` BETWEEN A.\`dateTime\` AND A.expires))
         WHERE rownum <= 1) AS Q;`;
  const compared = [
    ...queries.map((query) => ({ query, compare: "changelog" as const })),
    { query: q6Shape, compare: "fold" as const },
  ];
  for (const { query, compare } of compared) {
    const pruned = await run("nexmark", query, compare);
    const whole = await run("nexmark_whole", query, compare);
    assert.ok(whole.length > 0, `no rows for ${query}`);
    assert.deepEqual(pruned, whole, query);
  }
});
