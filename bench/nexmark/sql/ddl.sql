-- Nexmark's three source tables on Weir's `nexmark` table connector
-- (connectors/datagen/nexmark/table.ts), read by every query file here.
--
-- Deviation from Flink's nexmark (nexmark-flink/src/main/resources/queries/
-- ddl_gen.sql and ddl_views.sql): Flink declares one `datagen` table with a
-- ROW column per kind and three views `person`, `auction`, `bid` over it;
-- Weir's SQL has no ROW type, so each kind is a table of its own with the
-- view's columns and the same WATERMARK (`dateTime` - 4 s). The three
-- tables generate the events of one generator (same options, same event
-- numbers), which are also the events of the DataStream queries.
--
-- The harness (bench/nexmark/sql_queries.ts) replaces ${EVENTS_NUM},
-- ${SEED}, ${INTER_EVENT_DELAY_US} and ${BATCH_SIZE} before running it.

CREATE TABLE person (
    id  BIGINT,
    name  VARCHAR,
    emailAddress  VARCHAR,
    creditCard  VARCHAR,
    city  VARCHAR,
    state  VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'nexmark.table' = 'person',
    'events.num' = '${EVENTS_NUM}',
    'generator.seed' = '${SEED}',
    'generator.inter-event-delay-us' = '${INTER_EVENT_DELAY_US}',
    'scan.batch-size' = '${BATCH_SIZE}'
);

CREATE TABLE auction (
    id  BIGINT,
    itemName  VARCHAR,
    description  VARCHAR,
    initialBid  BIGINT,
    reserve  BIGINT,
    `dateTime`  TIMESTAMP(3),
    expires  TIMESTAMP(3),
    seller  BIGINT,
    category  BIGINT,
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'nexmark.table' = 'auction',
    'events.num' = '${EVENTS_NUM}',
    'generator.seed' = '${SEED}',
    'generator.inter-event-delay-us' = '${INTER_EVENT_DELAY_US}',
    'scan.batch-size' = '${BATCH_SIZE}'
);

CREATE TABLE bid (
    auction  BIGINT,
    bidder  BIGINT,
    price  BIGINT,
    channel  VARCHAR,
    url  VARCHAR,
    `dateTime`  TIMESTAMP(3),
    extra  VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'nexmark.table' = 'bid',
    'events.num' = '${EVENTS_NUM}',
    'generator.seed' = '${SEED}',
    'generator.inter-event-delay-us' = '${INTER_EVENT_DELAY_US}',
    'scan.batch-size' = '${BATCH_SIZE}'
);
