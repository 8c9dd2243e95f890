-- Seed example 7 (DESIGN §10): a dynamic table and a continuous query.
--
--   deno run -A cli.ts sql -f examples/clicks.sql
--
-- prints the query's changelog, one change per line:
--   +I(Mary,1) +I(Bob,1) -U(Mary,1) +U(Mary,2) +I(Liz,1) -U(Bob,1) +U(Bob,2) -U(Mary,2) +U(Mary,3)
--
-- `user` is back-quoted: it is a reserved word in Flink SQL (the USER function).

CREATE TABLE clicks (
  `user` VARCHAR,
  cTime TIMESTAMP(3),
  url VARCHAR
) WITH ('connector' = 'values');

INSERT INTO clicks VALUES
  ('Mary', '2026-01-01 12:00:00', './home'),
  ('Bob', '2026-01-01 12:00:00', './cart'),
  ('Mary', '2026-01-01 12:00:05', './prod?id=1'),
  ('Liz', '2026-01-01 12:01:00', './home'),
  ('Bob', '2026-01-01 12:01:30', './prod?id=3'),
  ('Mary', '2026-01-01 12:01:45', './prod?id=7');

SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`;
