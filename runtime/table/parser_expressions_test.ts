// SQL parser: operator precedence, expressions, aggregate FILTER and interval literals.
import assert from "node:assert/strict";
import { exprText } from "./sql_text.ts";
import type { Expr } from "./sql_ast.ts";
import { col, expr, exprOf, lit, parseErrorAt, query } from "./_parser_test_kit.ts";

Deno.test("precedence: NOT over AND over OR, mixed freely (the old parser had to refuse mixing)", () => {
  const where = (c: string) => exprText(query(`SELECT a FROM t WHERE ${c}`).where!);
  const cases: [string, string][] = [
    ["a OR b AND c", "(a OR (b AND c))"],
    ["a AND b OR c", "((a AND b) OR c)"],
    ["NOT a AND b", "(NOT a AND b)"],
    ["NOT a OR b AND NOT c", "(NOT a OR (b AND NOT c))"],
    ["(a OR b) AND c", "((a OR b) AND c)"],
    ["a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))"],
    ["NOT a = 1", "NOT (a = 1)"],
    ["a OR b OR c", "((a OR b) OR c)"],
    ["x > 1 AND x IS NOT NULL OR y IS NULL", "(((x > 1) AND x IS NOT NULL) OR y IS NULL)"],
    ["a OR b AND c BETWEEN 1 AND 2", "(a OR (b AND c BETWEEN 1 AND 2))"],
  ];
  for (const [sql, text] of cases) assert.equal(where(sql), text, sql);
});

Deno.test("precedence: IS over NOT, BETWEEN/LIKE/IN over comparisons, as in Flink (the grammar differs)", () => {
  const where = (c: string) => query(`SELECT a FROM t WHERE ${c}`).where!;
  const isNull = (expr: Expr, negated = false): Expr => ({ k: "isNull", expr, negated });
  const not = (expr: Expr): Expr => ({ k: "not", expr });
  const bin = (op: string, left: Expr, right: Expr): Expr => ({ k: "binary", op, left, right });
  const inList = (expr: Expr, list: Expr[]): Expr => ({ k: "in", expr, list, negated: false });
  const between = (expr: Expr, low: Expr, high: Expr, negated = false): Expr => ({
    k: "between",
    expr,
    low,
    high,
    negated,
  });
  const cases: [string, Expr][] = [
    ["NOT a IS NULL IS NULL", not(isNull(isNull(col("a"))))],
    ["NOT a IN (1) IS NOT NULL", not(isNull(inList(col("a"), [lit(1)]), true))],
    [
      "a OR b AND c IN (1) IS NULL",
      bin("OR", col("a"), bin("AND", col("b"), isNull(inList(col("c"), [lit(1)])))),
    ],
    ["(NOT a) IS NULL", isNull(not(col("a")))],
    ["a = b IS NULL", isNull(bin("=", col("a"), col("b")))],
    ["x = a LIKE 'p'", bin("=", col("x"), bin("LIKE", col("a"), lit("p")))],
    ["a LIKE 'p' = x", bin("=", bin("LIKE", col("a"), lit("p")), col("x"))],
    ["x <> a NOT LIKE 'p'", bin("<>", col("x"), not(bin("LIKE", col("a"), lit("p"))))],
    ["x = a BETWEEN 1 AND 2", bin("=", col("x"), between(col("a"), lit(1), lit(2)))],
    [
      "a BETWEEN 1 AND 2 + 3 = x",
      bin("=", between(col("a"), lit(1), bin("+", lit(2), lit(3))), col("x")),
    ],
    ["a BETWEEN b = c AND d", between(col("a"), bin("=", col("b"), col("c")), col("d"))],
    [
      "y < x = a NOT BETWEEN 1 AND 2",
      bin("=", bin("<", col("y"), col("x")), between(col("a"), lit(1), lit(2), true)),
    ],
    ["x = a IN (1, 2)", bin("=", col("x"), inList(col("a"), [lit(1), lit(2)]))],
    ["(x = a) LIKE b", bin("LIKE", bin("=", col("x"), col("a")), col("b"))],
  ];
  for (const [sql, e] of cases) assert.deepEqual(where(sql), e, sql);
  // Flink SQL the grammar cannot parse: refused, asking for parentheses.
  parseErrorAt(
    "SELECT a FROM t WHERE a IN (1, 2) <> b",
    1,
    35,
    /a comparison after x IN \(\.\.\.\) needs parentheses: write \(x IN \(\.\.\.\)\) <> /,
  );
  parseErrorAt(
    "SELECT a FROM t WHERE a LIKE 'p' = b NOT BETWEEN 1 AND 2",
    1,
    38,
    /a comparison of two BETWEEN, LIKE or IN predicates needs parentheses: write \(a LIKE \.\.\.\) = \(b BETWEEN \.\.\.\)/,
  );
});

Deno.test("precedence: * / % || over + -, arithmetic over comparison, unary minus tightest", () => {
  const cases: [string, string][] = [
    ["a + b * c", "(a + (b * c))"],
    ["a * b + c", "((a * b) + c)"],
    ["a - b - c", "((a - b) - c)"],
    ["a / b % c", "((a / b) % c)"],
    ["(a + b) * c", "((a + b) * c)"],
    ["-a * b", "(-a * b)"],
    ["a || b || 'x'", "((a || b) || 'x')"],
    ["a + 1 > b * 2", "((a + 1) > (b * 2))"],
    ["-5", "-5"],
    ["- 2.5", "-2.5"],
    ["+a", "a"],
    // The grammar's select-item ambiguity (`a` then `- 1`) is mended:
    ["a - 1", "(a - 1)"],
    ["a - 2 * b + 1", "((a - (2 * b)) + 1)"],
    ["a + b * c - d", "((a + (b * c)) - d)"],
    ["a - 1 > 0", "((a - 1) > 0)"],
    ["f(x)", "F(x)"],
    ["f(x) + 1", "(F(x) + 1)"],
    ["f(x) * 2 - 1", "((F(x) * 2) - 1)"],
    // `||` binds like `*` in Flink (Calcite's CONCAT, precedence 60); the grammar puts it with `+`:
    ["a + b || c", "(a + (b || c))"],
    ["a || b * c", "((a || b) * c)"],
    ["a || b + c", "((a || b) + c)"],
    ["a - b || c * d + e", "((a - ((b || c) * d)) + e)"],
    ["a - 2 || b", "(a - (2 || b))"],
    // The grammar reads `a * -b` in a SELECT list as `a` then `(*) - b` (`*` the star): mended.
    ["a * -b", "(a * -b)"],
    ["a * -(NOT a)", "(a * -NOT a)"],
    ["a * -b * c - d", "(((a * -b) * c) - d)"],
    ["a * +b", "(a * b)"],
    ["a * -1 + 2", "((a * -1) + 2)"],
    ["t.a * - -b = c", "((t.a * --b) = c)"],
  ];
  for (const [sql, text] of cases) assert.equal(expr(sql), text, sql);
});

Deno.test("expressions: literals, names, predicates, CAST, CASE, calls, intervals", () => {
  const cases: [string, Expr][] = [
    ["1", lit(1)],
    ["0.908", lit(0.908)],
    ["1.5E3", lit(1500)],
    ["'it''s'", lit("it's")],
    ["TRUE", lit(true)],
    ["false", lit(false)],
    ["NULL", lit(null)],
    ["`user`", col("user")],
    ["`dateTime`", col("dateTime")],
    ["B.`dateTime`", col("dateTime", "B")],
    ["t.a", col("a", "t")],
    ["a IS NULL", { k: "isNull", expr: col("a"), negated: false }],
    ["a IS NOT NULL", { k: "isNull", expr: col("a"), negated: true }],
    ["a IN (1, 2)", { k: "in", expr: col("a"), list: [lit(1), lit(2)], negated: false }],
    ["a NOT IN ('x')", { k: "in", expr: col("a"), list: [lit("x")], negated: true }],
    ["a BETWEEN 1 AND b", {
      k: "between",
      expr: col("a"),
      low: lit(1),
      high: col("b"),
      negated: false,
    }],
    ["a NOT BETWEEN 1 AND 2", {
      k: "between",
      expr: col("a"),
      low: lit(1),
      high: lit(2),
      negated: true,
    }],
    ["a LIKE 'x%'", { k: "binary", op: "LIKE", left: col("a"), right: lit("x%") }],
    ["a NOT LIKE 'x%'", {
      k: "not",
      expr: { k: "binary", op: "LIKE", left: col("a"), right: lit("x%") },
    }],
    ["a <> 1", { k: "binary", op: "<>", left: col("a"), right: lit(1) }],
    ["a != 1", { k: "binary", op: "<>", left: col("a"), right: lit(1) }],
    ["a >= 1", { k: "binary", op: ">=", left: col("a"), right: lit(1) }],
    ["CAST(a AS BIGINT)", {
      k: "cast",
      expr: col("a"),
      type: { family: "BIGINT", name: "BIGINT" },
    }],
    ["CAST(a AS VARCHAR(10))", {
      k: "cast",
      expr: col("a"),
      type: { family: "STRING", name: "VARCHAR(10)" },
    }],
    ["CAST(a AS DECIMAL(10, 2))", {
      k: "cast",
      expr: col("a"),
      type: { family: "DOUBLE", name: "DECIMAL(10,2)" },
    }],
    ["CAST(a AS STRING)", {
      k: "cast",
      expr: col("a"),
      type: { family: "STRING", name: "STRING" },
    }],
    [
      "TIMESTAMP '2020-01-01 10:00:00.5'",
      {
        k: "cast",
        expr: lit("2020-01-01 10:00:00.5"),
        type: { family: "TIMESTAMP", name: "TIMESTAMP" },
      },
    ],
    [
      "CASE WHEN a > 0 THEN 'p' WHEN a < 0 THEN 'n' ELSE 'z' END",
      {
        k: "case",
        operand: null,
        whens: [
          { when: { k: "binary", op: ">", left: col("a"), right: lit(0) }, then: lit("p") },
          { when: { k: "binary", op: "<", left: col("a"), right: lit(0) }, then: lit("n") },
        ],
        otherwise: lit("z"),
      },
    ],
    ["CASE a WHEN 1 THEN 'one' END", {
      k: "case",
      operand: col("a"),
      whens: [{ when: lit(1), then: lit("one") }],
      otherwise: null,
    }],
    ["COALESCE(a, 'x')", { k: "call", name: "COALESCE", args: [col("a"), lit("x")] }],
    ["upper(name)", { k: "call", name: "UPPER", args: [col("name")] }],
    ["my_udf(a, 1, 'b')", { k: "call", name: "MY_UDF", args: [col("a"), lit(1), lit("b")] }],
    ["MOD(auction, 123)", { k: "call", name: "MOD", args: [col("auction"), lit(123)] }],
    ["DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')", {
      k: "call",
      name: "DATE_FORMAT",
      args: [col("dateTime"), lit("yyyy-MM-dd")],
    }],
    ["CHAR_LENGTH(name)", { k: "call", name: "CHAR_LENGTH", args: [col("name")] }],
    ["SQRT(x)", { k: "call", name: "SQRT", args: [col("x")] }],
    ["SUBSTRING(name FROM 2)", { k: "call", name: "SUBSTRING", args: [col("name"), lit(2)] }],
    ["SUBSTRING(name FROM 2 FOR 3)", {
      k: "call",
      name: "SUBSTRING",
      args: [col("name"), lit(2), lit(3)],
    }],
    ["SUBSTRING(name, 2, 3)", {
      k: "call",
      name: "SUBSTRING",
      args: [col("name"), lit(2), lit(3)],
    }],
    ["PROCTIME()", { k: "call", name: "PROCTIME", args: [] }],
    ["CURRENT_TIMESTAMP", { k: "call", name: "CURRENT_TIMESTAMP", args: [] }],
    ["EXTRACT(HOUR FROM ts)", { k: "call", name: "EXTRACT", args: [lit("HOUR"), col("ts")] }],
    ["TIMESTAMPADD(HOUR, 1, ts)", {
      k: "call",
      name: "TIMESTAMPADD",
      args: [lit("HOUR"), lit(1), col("ts")],
    }],
    ["COUNT(*)", { k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }],
    ["count(*)", { k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }],
    ["COUNT(DISTINCT bidder)", { k: "aggregate", fn: "COUNT", distinct: true, arg: col("bidder") }],
    ["SUM(price)", { k: "aggregate", fn: "SUM", distinct: false, arg: col("price") }],
    ["avg(Q.final)", { k: "aggregate", fn: "AVG", distinct: false, arg: col("final", "Q") }],
    ["MIN(a)", { k: "aggregate", fn: "MIN", distinct: false, arg: col("a") }],
    ["max(B.price)", { k: "aggregate", fn: "MAX", distinct: false, arg: col("price", "B") }],
    ["x IS TRUE", {
      k: "case",
      operand: null,
      whens: [{ when: col("x"), then: lit(true) }],
      otherwise: lit(false),
    }],
    ["x IS NOT FALSE", {
      k: "case",
      operand: null,
      whens: [{ when: { k: "not", expr: col("x") }, then: lit(false) }],
      otherwise: lit(true),
    }],
  ];
  for (const [sql, expected] of cases) assert.deepEqual(exprOf(sql), expected, sql);
});

Deno.test("aggregate FILTER (WHERE ...) becomes the aggregate of CASE WHEN ... (the same for COUNT, SUM, AVG, MIN, MAX)", () => {
  const cases: [string, string][] = [
    ["count(*) filter (where price < 10000)", "COUNT(CASE WHEN (price < 10000) THEN 1 END)"],
    [
      "COUNT(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000)",
      "COUNT(DISTINCT CASE WHEN ((price >= 10000) AND (price < 1000000)) THEN bidder END)",
    ],
    ["SUM(x) FILTER (WHERE x > 1)", "SUM(CASE WHEN (x > 1) THEN x END)"],
    ["2 * MAX(x) FILTER (WHERE ok)", "(2 * MAX(CASE WHEN ok THEN x END))"],
    ["MIN(x) FILTER (WHERE ok) + 1", "(MIN(CASE WHEN ok THEN x END) + 1)"],
    ["AVG(x) FILTER (WHERE ok) * 2", "(AVG(CASE WHEN ok THEN x END) * 2)"],
  ];
  for (const [sql, text] of cases) assert.equal(expr(sql), text, sql);
  // A column named filter is still a column; FILTER after something else is an error.
  assert.equal(expr("`filter` * (1)"), "(filter * 1)");
  parseErrorAt(
    "SELECT UPPER(a) FILTER (WHERE ok) FROM t",
    1,
    8,
    /FILTER \(WHERE \.\.\.\) must follow an aggregate call/,
  );
});

Deno.test("intervals are day-time milliseconds with a canonical text, in every unit and 'a:b' form", () => {
  const cases: [string, number, string][] = [
    ["INTERVAL '10' SECOND", 10_000, "INTERVAL '10' SECOND"],
    ["INTERVAL '2' SECONDS", 2_000, "INTERVAL '2' SECOND"],
    ["interval '1.5' second", 1_500, "INTERVAL '1.5' SECOND"],
    ["INTERVAL '5' MINUTE", 300_000, "INTERVAL '5' MINUTE"],
    ["INTERVAL '1' HOUR", 3_600_000, "INTERVAL '1' HOUR"],
    ["INTERVAL '1' DAY", 86_400_000, "INTERVAL '1' DAY"],
    ["INTERVAL '250' MILLISECOND", 250, "INTERVAL '250' MILLISECOND"],
    ["INTERVAL '-3' SECOND", -3_000, "INTERVAL '-3' SECOND"],
    ["INTERVAL 10 SECOND", 10_000, "INTERVAL '10' SECOND"],
    ["INTERVAL '1:30' MINUTE TO SECOND", 90_000, "INTERVAL '1:30' MINUTE TO SECOND"],
    ["INTERVAL '1:30' HOUR TO MINUTE", 5_400_000, "INTERVAL '1:30' HOUR TO MINUTE"],
    ["INTERVAL '1:00:01.5' HOUR TO SECOND", 3_601_500, "INTERVAL '1:00:01.5' HOUR TO SECOND"],
    [
      "INTERVAL '2 03:00:00' DAY TO SECOND",
      2 * 86_400_000 + 3 * 3_600_000,
      "INTERVAL '2 03:00:00' DAY TO SECOND",
    ],
    ["INTERVAL '1 12' DAY TO HOUR", 86_400_000 + 12 * 3_600_000, "INTERVAL '1 12' DAY TO HOUR"],
  ];
  for (const [sql, millis, text] of cases) {
    assert.deepEqual(exprOf(sql), { k: "interval", millis, text }, sql);
  }
  assert.equal(expr("ts - INTERVAL '5' SECOND"), "(ts - INTERVAL '5' SECOND)");
  parseErrorAt(
    "SELECT INTERVAL '1:70' HOUR TO MINUTE FROM t",
    1,
    17,
    /'1:70' does not match HOUR TO MINUTE \(expected 'hh:mm'\)/,
  );
  parseErrorAt(
    "SELECT INTERVAL '1' MONTH FROM t",
    1,
    21,
    /the interval unit MONTH .*only day-time intervals/,
  );
  parseErrorAt("SELECT INTERVAL 'x' SECOND FROM t", 1, 17, /'x' is not a SECOND interval value/);
});
