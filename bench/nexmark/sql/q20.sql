-- Weir: Flink nexmark's q20 (nexmark/nexmark, nexmark-flink/src/main/resources/queries/q20.sql),
-- run by bench/nexmark/sql_queries.ts after ddl.sql (the source tables).
-- Deviations from Flink's text: the SELECT list names B.`dateTime`, B.extra,
-- A.`dateTime` and A.extra AS bid_dateTime, bid_extra, auction_dateTime and
-- auction_extra (the sink's column names): Flink's planner renames repeated
-- output names (dateTime, dateTime0), Weir's refuses them.
--
-- -------------------------------------------------------------------------------------------------
-- Query 20: Expand bid with auction (Not in original suite)
-- -------------------------------------------------------------------------------------------------
-- Get bids with the corresponding auction information where category is 10.
-- Illustrates a filter join.
-- -------------------------------------------------------------------------------------------------

CREATE TABLE nexmark_q20 (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    bid_dateTime  TIMESTAMP(3),
    bid_extra  VARCHAR,

    itemName  VARCHAR,
    description  VARCHAR,
    initialBid  BIGINT,
    reserve  BIGINT,
    auction_dateTime  TIMESTAMP(3),
    expires  TIMESTAMP(3),
    seller  BIGINT,
    category  BIGINT,
    auction_extra  VARCHAR
) WITH (
    'connector' = 'blackhole'
);

INSERT INTO nexmark_q20
SELECT
    auction, bidder, price, channel, url, B.`dateTime` AS bid_dateTime, B.extra AS bid_extra,
    itemName, description, initialBid, reserve, A.`dateTime` AS auction_dateTime, expires, seller, category, A.extra AS auction_extra
FROM
    bid AS B INNER JOIN auction AS A on B.auction = A.id
WHERE A.category = 10;