import assert from "node:assert/strict";
import { splitStatements, statementKind, StatementReader } from "./_sql_statements.ts";

Deno.test("splitStatements cuts at ';' outside strings, quoted names and comments", () => {
  const script = [
    "CREATE TABLE t (a STRING) WITH ('connector' = 'values'); -- a comment; still one",
    "INSERT INTO t VALUES ('x;y'), ('it''s;');",
    'SELECT "a;b", `c;d` /* ; */ FROM t;;',
    "SELECT 1",
  ].join("\n");
  const { statements, rest } = splitStatements(script);
  for (const s of statements) assert.ok(script.startsWith(s.text, s.offset), s.text);
  assert.deepEqual(statements.map((s) => [s.line, s.text]), [
    [1, "CREATE TABLE t (a STRING) WITH ('connector' = 'values')"],
    [1, "-- a comment; still one\nINSERT INTO t VALUES ('x;y'), ('it''s;')"],
    [3, 'SELECT "a;b", `c;d` /* ; */ FROM t'],
  ]);
  assert.equal(rest, "SELECT 1");
});

Deno.test("a StatementReader fed line by line completes a statement at its ';' and knows an open quote", () => {
  const reader = new StatementReader();
  assert.deepEqual(reader.push("SELECT 'multi\n"), []);
  assert.equal(reader.inQuote, true);
  assert.deepEqual(reader.push("line;' FROM t\n"), []);
  assert.equal(reader.inQuote, false);
  assert.deepEqual(reader.push("WHERE a = 1;\n"), [
    { text: "SELECT 'multi\nline;' FROM t\nWHERE a = 1", line: 1, offset: 0 },
  ]);
  assert.deepEqual(reader.push("\nSET 'k' = 'v'; SET;\n"), [
    { text: "SET 'k' = 'v'", line: 5, offset: 42 },
    { text: "SET", line: 5, offset: 57 },
  ]);
  assert.equal(reader.pending, "");
});

Deno.test("statementKind reads the first keyword, comments skipped", () => {
  assert.equal(statementKind("-- note\nselect 1"), "select");
  assert.equal(statementKind("/* x */ WITH a AS (SELECT 1) SELECT * FROM a"), "select");
  assert.equal(statementKind("insert into t select 1"), "insert");
  assert.equal(statementKind("EXPLAIN SELECT 1"), "explain");
  assert.equal(statementKind("CREATE VIEW v AS SELECT 1"), "create");
  assert.equal(statementKind("SET 'a' = 'b'"), "set");
  assert.equal(statementKind("DROP TABLE t"), "other");
});
