import assert from "node:assert/strict";
import { multiRowSql, parseInsertStatement, quoteIdentifier, rowParameters } from "./statement.ts";

Deno.test("an INSERT's VALUES tuple is repeated per row, keeping an ON DUPLICATE KEY tail", () => {
  const s = parseInsertStatement(
    "INSERT INTO t (a, b) VALUES (?, COALESCE(?, 'x')) ON DUPLICATE KEY UPDATE b = VALUES(b)",
  );
  assert.equal(s.placeholders, 2);
  assert.equal(
    multiRowSql(s, 3),
    "INSERT INTO t (a, b) VALUES (?, COALESCE(?, 'x')),(?, COALESCE(?, 'x')),(?, COALESCE(?, 'x')) ON DUPLICATE KEY UPDATE b = VALUES(b)",
  );
});

Deno.test("VALUES and question marks inside quotes and comments are not the statement's", () => {
  const s = parseInsertStatement(
    "INSERT INTO `values` (a, `b?`) /* VALUES (?) */ VALUES (?, 'values (?)') -- ?\n",
  );
  assert.equal(s.placeholders, 1);
  assert.equal(s.tuple, "(?, 'values (?)')");
});

Deno.test("parseInsertStatement refuses statements it cannot batch, saying why", () => {
  const cases: [string, RegExp][] = [
    ["UPDATE t SET a = ?", /no top-level VALUES keyword/],
    ["INSERT INTO t VALUES (?), (?)", /exactly one VALUES tuple/],
    ["INSERT INTO t VALUES (1)", /has no '\?' placeholder/],
    [
      "INSERT INTO t VALUES (?) ON DUPLICATE KEY UPDATE a = ?",
      /'\?' outside the VALUES tuple at offset 53/,
    ],
    ["INSERT INTO t VALUES (?", /parentheses are not balanced/],
    ["INSERT INTO t VALUES ('?)", /quote opened at offset 22 is not closed/],
    ["INSERT INTO t VALUES ?", /VALUES must be followed by a parenthesised tuple/],
  ];
  for (const [sql, message] of cases) {
    assert.throws(
      () => parseInsertStatement(sql),
      (e: unknown) =>
        e instanceof RangeError && message.test(e.message) &&
        e.message.includes(JSON.stringify(sql)),
    );
  }
});

Deno.test("quoteIdentifier backquotes schema and table and doubles backquotes inside", () => {
  assert.equal(quoteIdentifier("test.a`b", "table"), "`test`.`a``b`");
  assert.throws(
    () => quoteIdentifier("a.b.c", "table"),
    /table must be a name or schema.name .* current value is "a.b.c"/,
  );
  assert.throws(() => quoteIdentifier("", "column"), /column must be/);
});

Deno.test("rowParameters returns one value per '?' and refuses anything else, naming the sink and tuple", () => {
  const statement = parseInsertStatement("INSERT INTO t (a, b) VALUES (?, ?)");
  assert.deepEqual(rowParameters(statement, (r: number) => [r, r + 1], 1, "MariaDbSink 't'"), [
    1,
    2,
  ]);
  assert.throws(
    () => rowParameters(statement, (r: number) => [r], 1, "MariaDbSink 't'"),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message ===
        `MariaDbSink 't': parameters(record) must return an array of 2 values (one per '?' of ` +
          `${JSON.stringify(statement.tuple)}): current value is [1]`,
  );
  assert.throws(
    () => rowParameters(statement, () => "x" as unknown as unknown[], 1, "w"),
    /current value is "x"/,
  );
});
