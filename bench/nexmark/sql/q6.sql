-- Weir: Flink nexmark's q6 (nexmark/nexmark, nexmark-flink/src/main/resources/queries/q6.sql),
-- run by bench/nexmark/sql_queries.ts after ddl.sql (the source tables).
--
-- Flink cannot run q6 (nexmark's README lists it as unsupported: its OVER
-- aggregation reads the updating result of the Top-1, and Flink's OVER
-- takes inserts only); Weir's planner runs an OVER over an updating input
-- (retract_over_aggregate.ts). bench/nexmark/queries_q4_q6.ts is the
-- DataStream version it is compared with.
--
-- Deviations from Flink's text, none changing what the query means:
-- - the Top-1 filter `WHERE rownum <= 1` stands in a query around the one
--   that computes rownum (SQL's WHERE cannot read the SELECT list's alias;
--   q9, q18 and q19 are written so), and its ORDER BY names the derived
--   table's columns (`id`, `seller`, `price`) instead of A's and B's,
--   which are out of scope there;
-- - the Top-1 order adds `dateTime` ASC: of bids of equal price the
--   earliest wins, the order the SQL leaves open and the DataStream version
--   fixes;
-- - the OVER aggregate is named `AS avg_price` (the sink's column): the
--   parser refuses an unnamed OVER aggregate.
--
-- -------------------------------------------------------------------------------------------------
-- Query 6: Average Selling Price by Seller
-- -------------------------------------------------------------------------------------------------
-- What is the average selling price per seller for their last 10 closed auctions.
-- Shares the same ‘winning bids’ core as for Query4, and illustrates a specialized combiner.
-- -------------------------------------------------------------------------------------------------

CREATE TABLE nexmark_q6 (
  seller VARCHAR,
  avg_price  BIGINT
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.price) OVER
        (PARTITION BY Q.seller ORDER BY Q.`dateTime` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
        AS avg_price
FROM (
    SELECT * FROM (
        SELECT *, ROW_NUMBER() OVER (
            PARTITION BY id, seller ORDER BY price DESC, `dateTime` ASC) AS rownum
        FROM (SELECT A.id, A.seller, B.price, B.`dateTime`
            FROM auction AS A,
                bid AS B
            WHERE A.id = B.auction
                and B.`dateTime` between A.`dateTime` and A.expires)
    )
    WHERE rownum <= 1
) AS Q;
