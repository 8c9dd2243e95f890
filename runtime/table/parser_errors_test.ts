// SQL parser: scripts and comments, reserved words, syntax errors with line and column, and the refused features.
import assert from "node:assert/strict";
import { parseScript, splitStatements, SqlParseError } from "./parser.ts";
import { exprText } from "./sql_text.ts";
import { parseErrorAt } from "./_parser_test_kit.ts";

Deno.test("scripts: comments, back quotes, several statements, ';' needed between statements", () => {
  const script = `
    /* a block comment; with a semicolon */
    CREATE TABLE clicks (\`user\` STRING, url STRING) WITH ('connector' = 'values'); -- line comment; too
    SELECT \`user\`, COUNT(url) AS cnt FROM clicks GROUP BY \`user\`;
    ;
  `;
  assert.deepEqual(parseScript(script).map((s) => s.k), ["createTable", "select"]);
  assert.deepEqual(parseScript(""), []);
  assert.deepEqual(parseScript("-- nothing\n"), []);
  parseErrorAt("SELECT a FROM t\nSELECT b FROM u", 2, 1, /expected ';' before SELECT B/);
  assert.deepEqual(splitStatements("a; 'x;y'; -- c;\n b"), [
    { text: "a", offset: 0 },
    { text: "'x;y'", offset: 3 },
    { text: "-- c;\n b", offset: 10 },
  ]);
});

Deno.test("a reserved word where a name goes is refused with a hint to back-quote it", () => {
  parseErrorAt(
    "CREATE TABLE out (a INT) WITH ('connector' = 'print')",
    1,
    14,
    /unexpected 'out'.*; 'out' is a reserved word: back-quote it as `out`$/,
  );
  parseErrorAt(
    "SELECT a\nFROM order",
    2,
    6,
    /'order' is a reserved word: back-quote it as `order`$/,
  );
  parseErrorAt(
    "SELECT value, a FROM t",
    1,
    8,
    /'value' is a reserved word: back-quote it as `value`$/,
  );
  // Not a name position: the keyword also fits without being a name.
  assert.throws(
    () => parseScript("SELECT a, FROM t"),
    (e: unknown) => e instanceof SqlParseError && !/reserved word/.test(e.message),
  );
  assert.throws(
    () => parseScript("SELECT a FROM t WHERE a = 1 SELECT"),
    (e: unknown) => e instanceof SqlParseError && !/reserved word/.test(e.message),
  );
  // Back-quoted, they parse.
  assert.equal(parseScript("CREATE TABLE `out` (a INT) WITH ('connector' = 'print')").length, 1);
});

Deno.test("syntax errors name the line, the column, what was found and what was expected", () => {
  parseErrorAt(
    "SELECT a\nFROM t\nWHERE",
    3,
    6,
    /unexpected end of input \(the statement is incomplete\); expecting an expression or name/,
  );
  parseErrorAt("SELECT a, FROM t", 1, 11, /unexpected 'FROM'; expecting an expression or name/);
  parseErrorAt("SELECT a FROM t GROUP a", 1, 23, /missing 'BY' at 'a'/);
  parseErrorAt("CREATE TABLE t (a INT) WITH ('k' = 'v'", 1, 39, /end of input.*expecting .*'\)'/);
  parseErrorAt("SELEC a FROM t", 1, 1, /input 'SELEC'; expecting .*'SELECT'/);
  parseErrorAt("SELECT a FROM t WHERE a = 'x", 1, 27, /a quote that is never closed/);
  // Columns count UTF-16 units, as JS strings do (the emoji is two).
  parseErrorAt("SELECT '😀' || a FROM t WHERE", 1, 30, /end of input/);
  // Rewritten shapes keep their offsets after characters beyond the BMP too.
  const [emoji] = parseScript(
    "SELECT '😀', CHAR_LENGTH(b), SUM(x) FILTER (WHERE x > 0) AS s FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' SECOND))",
  );
  assert.ok(emoji?.k === "select");
  assert.deepEqual(emoji.query.items.map((i) => i.k === "expr" ? exprText(i.expr) : "*"), [
    "'😀'",
    "CHAR_LENGTH(b)",
    "SUM(CASE WHEN (x > 0) THEN x END)",
  ]);
  assert.ok(emoji.query.from.k === "windowTvf" && emoji.query.from.fn === "SESSION");
  // A gap of the grammar gets a message about the gap, not about the next token.
  parseErrorAt(
    "SELECT a,\n  AVG(x) OVER (PARTITION BY k ORDER BY ts)\nFROM t",
    2,
    10,
    /an OVER aggregation needs a name here: write \.\.\. OVER \(\.\.\.\) AS name/,
  );
  parseErrorAt(
    "CREATE TABLE t (\n  a INT,\n  b\n) WITH ('connector' = 'x')",
    4,
    1,
    /mismatched input '\)'|unexpected '\)'/,
  );
});

Deno.test("what Weir's syntax tree cannot express is refused, naming the feature and its place", () => {
  const cases: [string, number, number, RegExp][] = [
    [
      "WITH q AS (SELECT a FROM t) SELECT a FROM q",
      1,
      1,
      /WITH \(common table expressions\) is not supported/,
    ],
    ["SELECT a FROM t UNION ALL SELECT a FROM u", 1, 17, /UNION is not supported/],
    ["SELECT 1", 1, 1, /SELECT without FROM is not supported/],
    ["SELECT a FROM t WHERE a IN (SELECT b FROM u)", 1, 25, /IN \(subquery\) is not supported/],
    [
      "SELECT a FROM t WHERE EXISTS (SELECT b FROM u)",
      1,
      23,
      /EXISTS \(subquery\) is not supported/,
    ],
    ["SELECT (SELECT 1 FROM u) FROM t", 1, 8, /scalar subquery/],
    ["SELECT a FROM t JOIN u USING (k)", 1, 24, /JOIN \.\.\. USING is not supported/],
    ["SELECT a FROM t JOIN u", 1, 17, /INNER JOIN needs an ON condition/],
    ["SELECT a FROM t NATURAL JOIN u", 1, 15, /NATURAL JOIN is not supported/],
    [
      "SELECT a FROM t FOR SYSTEM_TIME AS OF t.ts",
      1,
      17,
      /FOR SYSTEM_TIME AS OF \(temporal joins\) is not supported/,
    ],
    [
      "SELECT a FROM t GROUP BY ROLLUP (a)",
      1,
      26,
      /GROUPING SETS, CUBE and ROLLUP is not supported/,
    ],
    ["SELECT a FROM t ORDER BY a NULLS LAST", 1, 26, /NULLS FIRST\/LAST is not supported/],
    ["SELECT a FROM t LIMIT a", 1, 17, /LIMIT needs a whole number of rows/],
    ["SELECT SUM(a, b) FROM t", 1, 8, /SUM takes one argument, got 2/],
    ["SELECT SUM(*) FROM t", 1, 8, /only COUNT\(\*\) takes \*/],
    ["SELECT UPPER(DISTINCT a) FROM t", 1, 8, /DISTINCT in UPPER\(\.\.\.\)/],
    ["SELECT a FROM t WHERE a LIKE 'x' ESCAPE '!'", 1, 25, /LIKE \.\.\. ESCAPE is not supported/],
    [
      "SELECT a FROM t WHERE a IS DISTINCT FROM b",
      1,
      25,
      /IS \[NOT\] DISTINCT FROM is not supported/,
    ],
    ["SELECT a FROM t WHERE a SIMILAR TO 'x'", 1, 25, /the predicate SIMILAR is not supported/],
    ['SELECT "a" FROM t', 1, 8, /double quotes are not allowed/],
    [
      "SELECT DATE '2020-01-01' FROM t",
      1,
      8,
      /DATE literals \(only TIMESTAMP '\.\.\.' is\) is not supported/,
    ],
    ["SELECT TIMESTAMP '2020-13' FROM t", 1, 18, /is not a timestamp/],
    [
      "SELECT a FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '1' SECOND))",
      1,
      21,
      /TUMBLE takes one interval \(size\), got 2/,
    ],
    [
      "SELECT a FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))",
      1,
      21,
      /HOP takes two intervals \(slide, size\), got 1/,
    ],
    ["SELECT ROW_NUMBER() OVER w AS r FROM t", 1, 8, /named windows/],
    [
      "SELECT SUM(a) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM t",
      1,
      62,
      /the frame end 1 FOLLOWING/,
    ],
    [
      "SELECT a FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES a AS a PATTERN (A) DEFINE A AS a > 1)",
      1,
      17,
      /MATCH_RECOGNIZE is not supported/,
    ],
    [
      "CREATE TABLE t (a INT NOT NULL) WITH ('connector' = 'x')",
      1,
      23,
      /NOT NULL \(column a\) is not supported/,
    ],
    [
      "CREATE TABLE t (a INT PRIMARY KEY) WITH ('connector' = 'x')",
      1,
      23,
      /PRIMARY KEY of a must be NOT ENFORCED/,
    ],
    [
      "CREATE TABLE t (a INT, PRIMARY KEY (a) NOT ENFORCED, b INT) WITH ('connector' = 'x')",
      1,
      54,
      /mismatched input|unexpected/,
    ],
    ["CREATE TABLE t (a INT, a INT) WITH ('connector' = 'x')", 1, 24, /two columns named a/],
    [
      "CREATE TABLE t (a INT METADATA) WITH ('connector' = 'x')",
      1,
      17,
      /the metadata column a is not supported/,
    ],
    [
      "CREATE TABLE t (m MAP<STRING, INT>) WITH ('connector' = 'x')",
      1,
      19,
      /column m has type MAP<STRING, INT>, which is not supported \(supported: VARCHAR/,
    ],
    [
      "CREATE TABLE t (a TIMESTAMP(3) WITH LOCAL TIME ZONE) WITH ('connector' = 'x')",
      1,
      19,
      /the type TIMESTAMP\(3\) WITH LOCAL TIME ZONE of column a is not supported/,
    ],
    [
      "CREATE TABLE IF NOT EXISTS t (a INT) WITH ('connector' = 'x')",
      1,
      14,
      /IF NOT EXISTS is not supported/,
    ],
    [
      "CREATE TABLE t (a INT) PARTITIONED BY (a) WITH ('connector' = 'x')",
      1,
      24,
      /PARTITIONED BY is not supported/,
    ],
    [
      "CREATE TABLE t (a INT) WITH ('connector' = 'x', 'connector' = 'y')",
      1,
      49,
      /the option 'connector' is given twice/,
    ],
    [
      "CREATE TABLE t WITH ('connector' = 'x') AS SELECT a FROM u",
      1,
      1,
      /CREATE TABLE \.\.\. AS SELECT is not supported/,
    ],
    [
      "CREATE VIEW v (x) AS SELECT a FROM t",
      1,
      15,
      /a column list in CREATE VIEW is not supported/,
    ],
    ["INSERT OVERWRITE o SELECT a FROM t", 1, 1, /INSERT OVERWRITE is not supported/],
    ["INSERT INTO o (a) SELECT a FROM t", 1, 15, /INSERT INTO with a column list is not supported/],
    [
      "EXPLAIN ESTIMATED_COST SELECT a FROM t",
      1,
      9,
      /EXPLAIN ESTIMATED_COST \(only CHANGELOG_MODE\)/,
    ],
    ["DROP TABLE t", 1, 1, /the statement DROP TABLE is not supported/],
    ["SHOW TABLES", 1, 1, /the statement SHOW TABLES is not supported/],
    ["CREATE FUNCTION f AS 'x.Y'", 1, 1, /the statement CREATE FUNCTION is not supported/],
    ["SELECT a FROM t;\nUSE db", 2, 1, /the statement USE DB is not supported/],
  ];
  for (const [sql, line, column, message] of cases) parseErrorAt(sql, line, column, message);
});
