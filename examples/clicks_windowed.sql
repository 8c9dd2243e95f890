-- Seed example 7, windowed (DESIGN §10): the clicks counted per user and
-- one-hour TUMBLE window, in event time.
--
--   deno run -A cli.ts sql -f examples/clicks_windowed.sql
--
-- A window's result is final when the watermark passes its end, so the
-- query only appends: one +I row per user and window, here
--   +I(Mary,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000,3)
--   +I(Bob,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000,2)
--   +I(Liz,2026-01-01 12:00:00.000,2026-01-01 13:00:00.000,1)
--   +I(Bob,2026-01-01 13:00:00.000,2026-01-01 14:00:00.000,1)
-- (each window once the watermark passes its end, at the latest when the
-- input ends; no particular order between users of one window). Compare
-- examples/clicks.sql, whose GROUP BY updates its results.

CREATE TABLE clicks (
  `user` VARCHAR,
  cTime TIMESTAMP(3),
  url VARCHAR,
  WATERMARK FOR cTime AS cTime - INTERVAL '5' SECOND
) WITH ('connector' = 'values');

INSERT INTO clicks VALUES
  ('Mary', '2026-01-01 12:00:00', './home'),
  ('Bob', '2026-01-01 12:00:00', './cart'),
  ('Mary', '2026-01-01 12:00:05', './prod?id=1'),
  ('Liz', '2026-01-01 12:01:00', './home'),
  ('Bob', '2026-01-01 12:01:30', './prod?id=3'),
  ('Mary', '2026-01-01 12:01:45', './prod?id=7'),
  ('Bob', '2026-01-01 13:20:00', './home');

SELECT `user`, window_start, window_end, COUNT(url) AS cnt
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(cTime), INTERVAL '1' HOUR))
GROUP BY `user`, window_start, window_end;
