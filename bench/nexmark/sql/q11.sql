-- Weir: Flink nexmark's q11 (nexmark/nexmark, nexmark-flink/src/main/resources/queries/q11.sql),
-- run by bench/nexmark/sql_queries.ts after ddl.sql (the source tables).
-- Deviations from Flink's text: Flink's q11 uses the legacy group window
-- (GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND) with
-- SESSION_START/SESSION_END), which Weir's SQL does not have; here it is the
-- same session window as a window table-valued function (Flink 1.19's
-- SESSION TVF with PARTITION BY), grouped by window_start and window_end.
--
-- -------------------------------------------------------------------------------------------------
-- Query 11: User Sessions (Not in original suite)
-- -------------------------------------------------------------------------------------------------
-- How many bids did a user make in each session they were active? Illustrates session windows.
--
-- Group bids by the same user into sessions with max session gap.
-- Emit the number of bids per session.
-- -------------------------------------------------------------------------------------------------

CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q11
SELECT
    bidder,
    count(*) as bid_count,
    window_start as starttime,
    window_end as endtime
FROM TABLE(
    SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;