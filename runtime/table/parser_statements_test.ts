// SQL parser: CREATE TABLE/VIEW, INSERT, EXPLAIN, SET, SELECT clauses, FROM items (joins, window TVFs, LATERAL), statement offsets and OVER windows.
import assert from "node:assert/strict";
import { parseScript, positionOf } from "./parser.ts";
import { exprText } from "./sql_text.ts";
import type { Statement } from "./sql_ast.ts";
import { col, lit, one, query, shape } from "./_parser_test_kit.ts";

Deno.test("CREATE TABLE: every type, STRING, TIMESTAMP(3), computed columns, WATERMARK, PRIMARY KEY, WITH", () => {
  const sql = `-- the bids
CREATE TEMPORARY TABLE bid (
  auction BIGINT,
  bidder INT,
  price DECIMAL(23, 3),
  channel STRING,
  url VARCHAR(100),
  flag BOOLEAN,
  score DOUBLE,
  ratio FLOAT,
  small SMALLINT,
  tiny TINYINT,
  code CHAR(2),
  \`dateTime\` TIMESTAMP(3),
  plain TIMESTAMP,
  n INTEGER COMMENT 'a count',
  price_eur AS price * 0.908,
  WATERMARK FOR \`dateTime\` AS \`dateTime\` - INTERVAL '4' SECOND,
  PRIMARY KEY (auction, bidder) NOT ENFORCED
) COMMENT 'bids' WITH (
  'connector' = 'nexmark',
  'first-event.rate' = '1000',
  'rows.per.second' = 10,
  'flag' = true
);`;
  const s = one(sql);
  assert.equal(s.k, "createTable");
  if (s.k !== "createTable") return;
  assert.equal(s.name, "bid");
  assert.equal(s.at, sql.indexOf("CREATE"));
  assert.deepEqual(
    s.columns.map((c) => [c.name, c.type === null ? null : `${c.type.family}/${c.type.name}`]),
    [
      ["auction", "BIGINT/BIGINT"],
      ["bidder", "BIGINT/INT"],
      ["price", "DOUBLE/DECIMAL(23,3)"],
      ["channel", "STRING/STRING"],
      ["url", "STRING/VARCHAR(100)"],
      ["flag", "BOOLEAN/BOOLEAN"],
      ["score", "DOUBLE/DOUBLE"],
      ["ratio", "DOUBLE/FLOAT"],
      ["small", "BIGINT/SMALLINT"],
      ["tiny", "BIGINT/TINYINT"],
      ["code", "STRING/CHAR(2)"],
      ["dateTime", "TIMESTAMP/TIMESTAMP(3)"],
      ["plain", "TIMESTAMP/TIMESTAMP"],
      ["n", "BIGINT/INTEGER"],
      ["price_eur", null],
    ],
  );
  assert.equal(exprText(s.columns[14]!.computed!), "(price * 0.908)");
  assert.deepEqual(s.watermark, {
    column: "dateTime",
    expr: {
      k: "binary",
      op: "-",
      left: col("dateTime"),
      right: { k: "interval", millis: 4000, text: "INTERVAL '4' SECOND" },
    },
    at: sql.indexOf("WATERMARK"),
  });
  assert.deepEqual(s.primaryKey, ["auction", "bidder"]);
  assert.deepEqual(s.options, {
    connector: "nexmark",
    "first-event.rate": "1000",
    "rows.per.second": "10",
    flag: "true",
  });
});

Deno.test("CREATE TABLE: a one-column PRIMARY KEY, no key, no watermark", () => {
  const s = one(
    "CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING) WITH ('connector' = 'print')",
  );
  assert.ok(s.k === "createTable");
  assert.deepEqual(s.primaryKey, ["id"]);
  assert.equal(s.watermark, null);
  const plain = one("CREATE TABLE t (v STRING) WITH ('connector' = 'blackhole')");
  assert.ok(plain.k === "createTable");
  assert.equal(plain.primaryKey, null);
});

Deno.test("CREATE VIEW, INSERT INTO ... SELECT / VALUES, EXPLAIN, SET", () => {
  const view = one("CREATE TEMPORARY VIEW v AS SELECT a FROM t WHERE a > 1");
  assert.ok(view.k === "createView");
  assert.equal(view.name, "v");
  assert.equal(exprText(view.query.where!), "(a > 1)");
  assert.equal(one("CREATE VIEW w AS SELECT * FROM t").k, "createView");

  const insert = one("INSERT INTO sink SELECT a, COUNT(*) FROM t GROUP BY a");
  assert.ok(insert.k === "insertSelect");
  assert.equal(insert.table, "sink");
  assert.deepEqual(insert.query.groupBy, [col("a")]);

  const values = one(
    "INSERT INTO clicks VALUES ('Mary', 1, 2.5, TRUE, NULL), ('Bob', -2, 3, FALSE, 'x')",
  );
  assert.deepEqual(values, {
    k: "insertValues",
    table: "clicks",
    rows: [
      [lit("Mary"), lit(1), lit(2.5), lit(true), lit(null)],
      [lit("Bob"), lit(-2), lit(3), lit(false), lit("x")],
    ],
    at: 0,
  });

  const explain = one("EXPLAIN SELECT a FROM t");
  assert.ok(explain.k === "explain");
  assert.equal(explain.statement.k, "select");
  const changelog = one("EXPLAIN CHANGELOG_MODE INSERT INTO o SELECT a FROM t");
  assert.ok(changelog.k === "explain");
  assert.equal(changelog.statement.k, "insertSelect");

  assert.deepEqual(one("SET 'table.exec.state.ttl' = '1 h'"), {
    k: "set",
    key: "table.exec.state.ttl",
    value: "1 h",
    at: 0,
  });
  // Unquoted keys parse when no part is a keyword of the grammar.
  assert.deepEqual(one("SET pipeline.name = 'q5'"), {
    k: "set",
    key: "pipeline.name",
    value: "q5",
    at: 0,
  });
  assert.deepEqual(one("SET"), { k: "set", key: null, value: null, at: 0 });
  assert.deepEqual(one("SET 'parallelism.default'"), {
    k: "set",
    key: "parallelism.default",
    value: null,
    at: 0,
  });
});

Deno.test("SELECT: DISTINCT, aliases, *, t.*, WHERE, GROUP BY, HAVING, ORDER BY, LIMIT", () => {
  const q = query(
    "SELECT DISTINCT a AS x, b y, c, COUNT(*) AS n, t.* , * FROM t WHERE a > 1 GROUP BY a, b HAVING COUNT(*) > 2 ORDER BY a DESC, b LIMIT 10",
  );
  assert.equal(q.distinct, true);
  assert.deepEqual(q.items, [
    { k: "expr", expr: col("a"), alias: "x" },
    { k: "expr", expr: col("b"), alias: "y" },
    { k: "expr", expr: col("c"), alias: null },
    {
      k: "expr",
      expr: { k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null },
      alias: "n",
    },
    { k: "star", table: "t" },
    { k: "star" },
  ]);
  assert.deepEqual(q.groupBy, [col("a"), col("b")]);
  assert.equal(exprText(q.having!), "(COUNT(*) > 2)");
  assert.deepEqual(q.orderBy, [{ expr: col("a"), descending: true }, {
    expr: col("b"),
    descending: false,
  }]);
  assert.equal(q.limit, 10);
  assert.equal(query("SELECT a FROM t").distinct, false);
  assert.equal(query("SELECT a FROM t LIMIT ALL").limit, null);
  assert.deepEqual(query("SELECT a + 1 AS b FROM t GROUP BY a + 1").groupBy, [
    { k: "binary", op: "+", left: col("a"), right: lit(1) },
  ]);
  assert.deepEqual(
    query(
      "SELECT b.bidder, COUNT(*) FROM bid b GROUP BY b.bidder, SESSION(b.`dateTime`, INTERVAL '10' SECOND)",
    ).groupBy,
    [col("bidder", "b"), {
      k: "call",
      name: "SESSION",
      args: [col("dateTime", "b"), { k: "interval", millis: 10_000, text: "INTERVAL '10' SECOND" }],
    }],
  );
});

Deno.test("FROM: aliases, subqueries, every join, window TVFs (SESSION too), LATERAL TABLE", () => {
  const cases: [string, unknown][] = [
    ["t", "t"],
    ["t AS x", "t AS x"],
    ["t x", "t AS x"],
    ["db.t", "db.t"],
    ["(SELECT a, b FROM t) q", { subquery: 2, alias: "q" }],
    ["(SELECT a FROM t) AS q", { subquery: 1, alias: "q" }],
    ["(SELECT a FROM t)", { subquery: 1, alias: null }],
    ["a JOIN b ON a.id = b.id", ["a", "INNER", "b", "(a.id = b.id)"]],
    ["a INNER JOIN b ON a.id = b.id", ["a", "INNER", "b", "(a.id = b.id)"]],
    ["a LEFT JOIN b ON a.id = b.id", ["a", "LEFT", "b", "(a.id = b.id)"]],
    ["a LEFT OUTER JOIN b ON a.id = b.id", ["a", "LEFT", "b", "(a.id = b.id)"]],
    ["a RIGHT JOIN b ON a.id = b.id", ["a", "RIGHT", "b", "(a.id = b.id)"]],
    ["a FULL OUTER JOIN b ON a.id = b.id", ["a", "FULL", "b", "(a.id = b.id)"]],
    ["a CROSS JOIN b", ["a", "CROSS", "b", null]],
    ["a, b", ["a", "CROSS", "b", null]],
    ["a x, b y, c", [["a AS x", "CROSS", "b AS y", null], "CROSS", "c", null]],
    ["a JOIN b ON a.k = b.k JOIN c ON b.k = c.k", [
      ["a", "INNER", "b", "(a.k = b.k)"],
      "INNER",
      "c",
      "(b.k = c.k)",
    ]],
    [
      "auction AS A INNER JOIN person AS P on A.seller = P.id AND P.state = 'OR'",
      ["auction AS A", "INNER", "person AS P", "((A.seller = P.id) AND (P.state = 'OR'))"],
    ],
    [
      "TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))",
      { TUMBLE: "bid", on: "dateTime", intervals: [10_000], partitionBy: [] },
    ],
    [
      "TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))",
      { HOP: "bid", on: "ts", intervals: [2_000, 10_000], partitionBy: [] },
    ],
    [
      "TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))",
      { CUMULATE: "bid", on: "ts", intervals: [60_000, 3_600_000], partitionBy: [] },
    ],
    [
      "TABLE(HOP(DATA => TABLE bid, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '10' SECOND, SLIDE => INTERVAL '5' SECOND))",
      { HOP: "bid", on: "ts", intervals: [5_000, 10_000], partitionBy: [] },
    ],
    [
      "TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))",
      { SESSION: "bid", on: "dateTime", intervals: [10_000], partitionBy: ["bidder"] },
    ],
    [
      "TABLE(session(TABLE bid PARTITION BY bidder, `auction`, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
      { SESSION: "bid", on: "ts", intervals: [60_000], partitionBy: ["bidder", "auction"] },
    ],
    [
      "TABLE(SESSION(TABLE bid, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
      { SESSION: "bid", on: "ts", intervals: [60_000], partitionBy: [] },
    ],
    [
      "TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) JOIN b ON a.k = b.k",
      [
        { TUMBLE: "a", on: "ts", intervals: [60_000], partitionBy: [] },
        "INNER",
        "b",
        "(a.k = b.k)",
      ],
    ],
    [
      "t, LATERAL TABLE(split(t.s, ',')) AS T(word, len)",
      ["t", "CROSS", {
        lateral: "SPLIT",
        args: ["t.s", "','"],
        alias: "T",
        columns: ["word", "len"],
      }, null],
    ],
    [
      "t LEFT JOIN LATERAL TABLE(split(s)) AS w(word) ON TRUE",
      ["t", "LEFT", { lateral: "SPLIT", args: ["s"], alias: "w", columns: ["word"] }, "TRUE"],
    ],
  ];
  for (const [from, expected] of cases) {
    assert.deepEqual(shape(query(`SELECT * FROM ${from}`).from), expected, from);
  }
});

Deno.test("at: the offsets of statements, FROM items, joins, windows, OVER and WATERMARK are offsets in the whole script", () => {
  const script =
    "SET 'a' = 'b';\n-- comment\nSELECT x, ROW_NUMBER() OVER (ORDER BY x) AS r\nFROM t AS u JOIN (SELECT y FROM v) w ON u.x = w.y;\n" +
    "/* block; */ SELECT * FROM TABLE(TUMBLE(TABLE z, DESCRIPTOR(ts), INTERVAL '1' SECOND))";
  const [set, select, window] = parseScript(script) as [Statement, Statement, Statement];
  assert.equal(set.at, 0);
  assert.ok(select.k === "select");
  assert.equal(select.at, script.indexOf("SELECT x"));
  const over = select.query.items[1]!;
  assert.ok(over.k === "expr" && over.expr.k === "over");
  assert.equal(over.expr.at, script.indexOf("ROW_NUMBER"));
  const join = select.query.from;
  assert.ok(join.k === "join");
  assert.equal(join.at, script.indexOf("JOIN"));
  assert.equal(join.left.at, script.indexOf("t AS u"));
  assert.equal(join.right.at, script.indexOf("(SELECT y"));
  assert.ok(window.k === "select");
  assert.equal(window.at, script.indexOf("SELECT *"));
  assert.ok(window.query.from.k === "windowTvf");
  assert.equal(window.query.from.at, script.indexOf("TUMBLE"));
  assert.equal(window.query.from.input.at, script.indexOf("z, DESCRIPTOR"));
  assert.deepEqual(positionOf(script, window.at), { line: 5, column: 14 });
});

Deno.test("OVER: ROW_NUMBER/RANK, aggregates with ROWS and RANGE frames", () => {
  const cases: [string, unknown][] = [
    [
      "ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY price DESC, ts ASC) AS rn",
      {
        fn: "ROW_NUMBER",
        args: [],
        partitionBy: ["a", "b"],
        orderBy: ["price DESC", "ts"],
        frame: null,
      },
    ],
    ["RANK() OVER (ORDER BY x) AS r", {
      fn: "RANK",
      args: [],
      partitionBy: [],
      orderBy: ["x"],
      frame: null,
    }],
    ["DENSE_RANK() OVER (PARTITION BY A.id ORDER BY x) AS r", {
      fn: "DENSE_RANK",
      args: [],
      partitionBy: ["A.id"],
      orderBy: ["x"],
      frame: null,
    }],
    [
      "AVG(Q.price) OVER (PARTITION BY Q.seller ORDER BY Q.`dateTime` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS a",
      {
        fn: "AVG",
        args: ["Q.price"],
        partitionBy: ["Q.seller"],
        orderBy: ["Q.dateTime"],
        frame: { unit: "ROWS", preceding: 10 },
      },
    ],
    [
      "SUM(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS s",
      {
        fn: "SUM",
        args: ["x"],
        partitionBy: ["k"],
        orderBy: ["ts"],
        frame: { unit: "RANGE", preceding: 3_600_000 },
      },
    ],
    [
      "COUNT(*) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c",
      {
        fn: "COUNT",
        args: [],
        partitionBy: [],
        orderBy: ["ts"],
        frame: { unit: "ROWS", preceding: null },
      },
    ],
    [
      "MAX(x) OVER (ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m",
      {
        fn: "MAX",
        args: ["x"],
        partitionBy: [],
        orderBy: ["ts"],
        frame: { unit: "RANGE", preceding: null },
      },
    ],
    [
      "my_agg(x, 2) OVER (PARTITION BY k ORDER BY ts) AS m",
      { fn: "MY_AGG", args: ["x", "2"], partitionBy: ["k"], orderBy: ["ts"], frame: null },
    ],
  ];
  for (const [sql, expected] of cases) {
    const item = query(`SELECT ${sql} FROM t`).items[0]!;
    assert.ok(item.k === "expr" && item.expr.k === "over", sql);
    const e = item.expr;
    assert.deepEqual(
      {
        fn: e.fn,
        args: e.args.map(exprText),
        partitionBy: e.partitionBy.map(exprText),
        orderBy: e.orderBy.map((o) => exprText(o.expr) + (o.descending ? " DESC" : "")),
        frame: e.frame,
      },
      expected,
      sql,
    );
    assert.equal(item.alias, sql.slice(sql.lastIndexOf(" AS ") + 4), sql);
  }
});
