-- Weir: the harness's `dedup` query (not in Flink's nexmark suite): Flink's
-- keep-first-row deduplication on q18's key, the SQL of the DataStream job
-- `dedup` in bench/nexmark/queries.ts (DedupFirst), run by
-- bench/nexmark/sql_queries.ts after ddl.sql (the source tables).
--
-- The DataStream job keeps the first bid to arrive per (bidder, auction);
-- here the first by event time (ORDER BY `dateTime` ASC, Flink's row-time
-- keep-first deduplication): the generator's event times never decrease,
-- so both keep the same bid of each key.

CREATE TABLE nexmark_dedup (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_dedup
SELECT auction, bidder, price, channel, url, `dateTime`, extra
 FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` ASC) AS rank_number
       FROM bid)
 WHERE rank_number = 1;
