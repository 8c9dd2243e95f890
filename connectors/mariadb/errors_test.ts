import assert from "node:assert/strict";
import {
  classifyMariaDbError,
  insertTarget,
  MariaDbRejectedError,
  PERMANENT_MARIADB_ERRORS,
  rethrowMariaDbError,
} from "./errors.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";

Deno.test("a missing table, column, syntax error or duplicate key is classified permanent", () => {
  for (const errno of [1146, 1054, 1064, 1062]) {
    const decided = classifyMariaDbError({ errno, fatal: false, message: "x" });
    assert.equal(decided.kind, "permanent", `errno ${errno}`);
    assert.ok(decided.kind === "permanent" && decided.name === PERMANENT_MARIADB_ERRORS.get(errno));
  }
});

Deno.test("lock wait timeouts, deadlocks, lost connections and unknown codes are classified transient", () => {
  for (
    const error of [
      { errno: 1205 },
      { errno: 1213 },
      { errno: 1040 },
      { errno: 99999 },
      { errno: 1146, fatal: true },
      new Error("socket closed"),
      "not an error",
      null,
    ]
  ) {
    assert.deepEqual(classifyMariaDbError(error), { kind: "transient" }, JSON.stringify(error));
  }
});

Deno.test("a permanent error is rethrown as a MariaDbRejectedError naming what and the server's message", () => {
  const driver = Object.assign(new Error("Table 'test.t' doesn't exist"), { errno: 1146 });
  assert.throws(
    () => rethrowMariaDbError(driver, "sink s: inserting 3 rows into t"),
    (e: unknown) =>
      e instanceof MariaDbRejectedError && e instanceof SuppressRestartsError &&
      e.errno === 1146 && e.cause === driver &&
      e.message.startsWith("sink s: inserting 3 rows into t: MariaDB refused it with error 1146") &&
      e.message.includes("Table 'test.t' doesn't exist"),
  );
  const transient = Object.assign(new Error("Lock wait timeout exceeded"), { errno: 1205 });
  assert.throws(() => rethrowMariaDbError(transient, "sink s"), (e: unknown) => e === transient);
});

Deno.test("the target of an INSERT statement is found for messages", () => {
  assert.equal(insertTarget("INSERT INTO `a b` (x) VALUES (?)"), "`a b`");
  assert.equal(insertTarget("insert ignore into db.t(x) values (?)"), "db.t");
  assert.equal(insertTarget("VALUES (?)"), "?");
});
