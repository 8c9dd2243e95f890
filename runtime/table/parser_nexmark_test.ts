// SQL parser: the Nexmark queries parse into the shapes the planner reads.
import assert from "node:assert/strict";
import { parseScript } from "./parser.ts";
import { exprText } from "./sql_text.ts";
import { shape } from "./_parser_test_kit.ts";

// Nexmark queries in the shapes of Flink's nexmark repository (written here
// for these tests): each parses, and the parts the planner reads are checked.
const NEXMARK_DDL = `
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  \`dateTime\` TIMESTAMP(3), extra STRING,
  WATERMARK FOR \`dateTime\` AS \`dateTime\` - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'events.num' = '1000');
CREATE TABLE sink (auction BIGINT, num BIGINT) WITH ('connector' = 'blackhole');
`;

const NEXMARK: Record<string, string> = {
  q0: "INSERT INTO sink SELECT auction, bidder, price, `dateTime`, extra FROM bid",
  q1: "INSERT INTO sink SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid",
  q2: "INSERT INTO sink SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
  q3: `INSERT INTO sink SELECT P.name, P.city, P.state, A.id
       FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
       WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')`,
  q4: `INSERT INTO sink SELECT Q.category, AVG(Q.final)
       FROM (
         SELECT MAX(B.price) AS final, A.category
         FROM auction A, bid B
         WHERE A.id = B.auction AND B.\`dateTime\` BETWEEN A.\`dateTime\` AND A.expires
         GROUP BY A.id, A.category
       ) Q
       GROUP BY Q.category`,
  q5: `INSERT INTO sink SELECT AuctionBids.auction, AuctionBids.num
       FROM (
         SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
         FROM TABLE(HOP(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
         GROUP BY auction, window_start, window_end
       ) AS AuctionBids
       JOIN (
         SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
         FROM (
           SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
           FROM TABLE(HOP(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
           GROUP BY auction, window_start, window_end
         ) AS CountBids
         GROUP BY CountBids.starttime, CountBids.endtime
       ) AS MaxBids
       ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
          AND AuctionBids.num >= MaxBids.maxn`,
  q6: `INSERT INTO sink SELECT Q.seller,
         AVG(Q.price) OVER (PARTITION BY Q.seller ORDER BY Q.\`dateTime\` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
       FROM (
         SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
         FROM (SELECT A.id, A.seller, B.price, B.\`dateTime\` FROM auction AS A, bid AS B
               WHERE A.id = B.auction AND B.\`dateTime\` BETWEEN A.\`dateTime\` AND A.expires)
         WHERE rownum <= 1
       ) AS Q`,
  q7: `INSERT INTO sink SELECT B.auction, B.price, B.bidder, B.\`dateTime\`, B.extra
       FROM bid B
       JOIN (
         SELECT MAX(price) AS maxprice, window_end AS \`dateTime\`
         FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
         GROUP BY window_start, window_end
       ) B1 ON B.price = B1.maxprice
       WHERE B.\`dateTime\` BETWEEN B1.\`dateTime\` - INTERVAL '10' SECOND AND B1.\`dateTime\``,
  q8: `INSERT INTO sink SELECT P.id, P.name, P.starttime
       FROM (
         SELECT id, name, window_start AS starttime, window_end AS endtime
         FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
         GROUP BY id, name, window_start, window_end
       ) P
       JOIN (
         SELECT seller, window_start AS starttime, window_end AS endtime
         FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
         GROUP BY seller, window_start, window_end
       ) A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime`,
  q9: `INSERT INTO sink SELECT id, itemName, price, bid_dateTime
       FROM (
         SELECT A.*, B.auction, B.bidder, B.price, B.\`dateTime\` AS bid_dateTime,
           ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.\`dateTime\` ASC) AS rownum
         FROM auction A, bid B
         WHERE A.id = B.auction AND B.\`dateTime\` BETWEEN A.\`dateTime\` AND A.expires
       )
       WHERE rownum <= 1`,
  q11: `INSERT INTO sink SELECT B.bidder, count(*) AS bid_count,
          SESSION_START(B.\`dateTime\`, INTERVAL '10' SECOND) AS starttime,
          SESSION_END(B.\`dateTime\`, INTERVAL '10' SECOND) AS endtime
        FROM bid B
        GROUP BY B.bidder, SESSION(B.\`dateTime\`, INTERVAL '10' SECOND)`,
  q11tvf: `INSERT INTO sink SELECT bidder, count(*) AS bid_count, window_start, window_end
        FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(\`dateTime\`), INTERVAL '10' SECOND))
        GROUP BY bidder, window_start, window_end`,
  q12:
    `INSERT INTO sink SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
        FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
        GROUP BY bidder, window_start, window_end`,
  q15: `INSERT INTO sink SELECT DATE_FORMAT(\`dateTime\`, 'yyyy-MM-dd') AS \`day\`,
          count(*) AS total_bids, count(*) filter (where price < 10000) AS rank1_bids,
          count(distinct bidder) AS total_bidders,
          count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders
        FROM bid GROUP BY DATE_FORMAT(\`dateTime\`, 'yyyy-MM-dd')`,
  q18: `INSERT INTO sink SELECT auction, bidder, price, channel, url, \`dateTime\`, extra
        FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY \`dateTime\` DESC) AS rank_number FROM bid)
        WHERE rank_number <= 1`,
  q19: `INSERT INTO sink SELECT * FROM
        (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
        WHERE rank_number <= 10`,
  q20:
    `INSERT INTO sink SELECT auction, bidder, price, channel, url, B.\`dateTime\`, B.extra, itemName, A.\`dateTime\`
        FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
        WHERE A.category = 10`,
  views:
    `CREATE VIEW person AS SELECT person.id, person.name, \`dateTime\` FROM datagen WHERE event_type = 0`,
};

Deno.test("Nexmark queries parse, with their DDL, into the shapes the planner reads", () => {
  for (const [name, sql] of Object.entries(NEXMARK)) {
    const statements = parseScript(NEXMARK_DDL + sql + ";");
    assert.equal(statements.length, 3, name);
    assert.ok(["insertSelect", "createView"].includes(statements[2]!.k), name);
  }
  const q5 = parseScript(NEXMARK.q5!)[0]!;
  assert.ok(q5.k === "insertSelect");
  const from = shape(q5.query.from) as unknown[];
  assert.deepEqual(from[1], "INNER");
  assert.deepEqual(from[0], { subquery: 4, alias: "AuctionBids" });
  const q7 = parseScript(NEXMARK.q7!)[0]!;
  assert.ok(q7.k === "insertSelect");
  assert.equal(
    exprText(q7.query.where!),
    "B.dateTime BETWEEN (B1.dateTime - INTERVAL '10' SECOND) AND B1.dateTime",
  );
  const q9 = parseScript(NEXMARK.q9!)[0]!;
  assert.ok(q9.k === "insertSelect" && q9.query.from.k === "subquery");
  assert.equal(q9.query.from.alias, null);
  assert.deepEqual(q9.query.from.query.items[0], { k: "star", table: "A" });
  const q11 = parseScript(NEXMARK.q11tvf!)[0]!;
  assert.ok(q11.k === "insertSelect" && q11.query.from.k === "windowTvf");
  assert.equal(q11.query.from.fn, "SESSION");
});
