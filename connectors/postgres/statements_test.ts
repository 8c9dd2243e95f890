import assert from "node:assert/strict";
import {
  checkRow,
  checkRowSinkOptions,
  checkTableSpec,
  InsertBatch,
  insertStatement,
  MAX_PARAMETERS,
  quoteIdentifier,
  RowShapeError,
  rowsPerStatement,
  upsertClause,
} from "./statements.ts";

const SPEC = { table: "public.Orders", columns: ["id", "key", 'we"ird'] };

Deno.test("insertStatement writes one multi-row INSERT with numbered parameters and quoted identifiers", () => {
  assert.equal(
    insertStatement(SPEC, 2),
    `INSERT INTO "public"."Orders" ("id", "key", "we""ird") VALUES ($1, $2, $3), ($4, $5, $6)`,
  );
  assert.throws(
    () => insertStatement(SPEC, 0),
    /rows must be an integer in \[1, 21845\] for 3 columns: current value is 0/,
  );
  assert.throws(() => insertStatement(SPEC, 21846), /current value is 21846/);
});

Deno.test("upsertClause updates the non-key columns, or does nothing when every column is a key", () => {
  assert.equal(
    upsertClause("S", SPEC, ["id"]),
    `ON CONFLICT ("id") DO UPDATE SET "key" = EXCLUDED."key", "we""ird" = EXCLUDED."we""ird"`,
  );
  assert.equal(
    upsertClause("S", { table: "t", columns: ["a", "b"] }, ["b", "a"]),
    `ON CONFLICT ("b", "a") DO NOTHING`,
  );
  assert.throws(() => upsertClause("S", SPEC, []), /S: keyColumns must be a non-empty array/);
  assert.throws(
    () => upsertClause("S", SPEC, ["nope"]),
    /every key column must be one of columns .*: current value is "nope"/,
  );
  assert.throws(() => upsertClause("S", SPEC, ["id", "id"]), /keyColumns must be distinct/);
});

Deno.test("rowsPerStatement keeps a statement within PostgreSQL's 65535 parameters", () => {
  assert.equal(rowsPerStatement("S", 1000, 3), 1000);
  assert.equal(rowsPerStatement("S", 100_000, 3), Math.floor(MAX_PARAMETERS / 3));
  assert.equal(rowsPerStatement("S", 10, 70_000), 1);
  assert.throws(
    () => rowsPerStatement("S", 0, 3),
    /S: batchSize must be an integer >= 1 \(rows\): current value is 0/,
  );
});

Deno.test("table specs and rows are checked, naming what is wrong with the current value", () => {
  assert.throws(
    () => quoteIdentifier("S: table", "a.b.c"),
    /S: table must be 'name' or 'schema.name': current value is "a.b.c"/,
  );
  assert.throws(() => quoteIdentifier("S: table", ""), /1-63 byte identifiers/);
  assert.throws(() => quoteIdentifier("S: table", "x".repeat(64)), /1-63 byte identifiers/);
  assert.throws(
    () => checkTableSpec("S", { table: "t", columns: [] }),
    /S: columns must be a non-empty array/,
  );
  assert.throws(
    () => checkTableSpec("S", { table: "t", columns: ["a", "a"] }),
    /columns must be distinct/,
  );
  assert.throws(
    () => checkTableSpec("S", { table: "t", columns: ["t.a"] }),
    /without '.': current value is "t.a"/,
  );
  assert.deepEqual(checkRow("S", SPEC, [1, "k", null]), [1, "k", null]);
  assert.throws(
    () => checkRow("S", SPEC, [1, "k"]),
    RowShapeError,
    "a wrong row fails without restarts",
  );
  assert.throws(
    () => checkRow("S", SPEC, [1, "k"]),
    /one value per column \(3: id, key, we"ird\): current value has 2 values/,
  );
});

Deno.test("InsertBatch buffers checked rows and hands them over with the INSERT for their count, then starts empty", () => {
  const spec = { table: "t", columns: ["a", "b"] };
  const batch = new InsertBatch("S", spec);
  assert.equal(batch.add([1, "x"]), 1);
  assert.equal(batch.add([2, null]), 2);
  assert.throws(() => batch.add([3]), RowShapeError);
  assert.equal(batch.rows, 2, "a rejected row is not buffered");
  assert.deepEqual(batch.take(), {
    rows: 2,
    params: [1, "x", 2, null],
    statement: insertStatement(spec, 2),
  });
  assert.equal(batch.rows, 0);
  batch.add([4, "y"]);
  batch.clear();
  assert.equal(batch.rows, 0);
  batch.add([5, "z"]);
  assert.deepEqual(batch.take(), {
    rows: 1,
    params: [5, "z"],
    statement: insertStatement(spec, 1),
  });
  assert.throws(() => batch.take(), RangeError, "an empty batch has no INSERT");
});

Deno.test("checkRowSinkOptions gives the table spec and rows per statement, and names a bad url, values or batch size", () => {
  const good = {
    url: "postgres://u@h:5432/d",
    table: "t",
    columns: ["a", "b"],
    values: () => [1, 2],
  };
  assert.deepEqual(checkRowSinkOptions("S", good), {
    spec: { table: "t", columns: ["a", "b"] },
    batchRows: 1000,
  });
  assert.equal(checkRowSinkOptions("S", { ...good, batchSize: 7 }).batchRows, 7);
  assert.throws(
    () => checkRowSinkOptions("S", { ...good, url: "mysql://h/d" }),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message === 'S: url must be a postgres:// URL: current value is "mysql://h/d"',
  );
  assert.throws(
    () => checkRowSinkOptions("S", { ...good, values: [1, 2] }),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message === "S: values must be a function: current value is object",
  );
  assert.throws(
    () => checkRowSinkOptions("S", { ...good, batchSize: 0 }),
    (e: unknown) =>
      e instanceof RangeError && /S: batchSize must be an integer >= 1/.test(e.message),
  );
  assert.throws(() => checkRowSinkOptions("S", { ...good, columns: [] }), TypeError);
});
