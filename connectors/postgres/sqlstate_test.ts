import assert from "node:assert/strict";
import {
  classifySqlState,
  PostgresRejectedError,
  sqlStateOf,
  statementFailure,
} from "./sqlstate.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";

Deno.test("undefined tables and columns, syntax errors, constraint violations and bad values are permanent", () => {
  for (
    const code of [
      "42P01",
      "42703",
      "42601",
      "23505",
      "23502",
      "42804",
      "22P02",
      "0A000",
      "3D000",
      "28P01",
    ]
  ) {
    assert.deepEqual(classifySqlState({ code }), { kind: "permanent", sqlState: code });
  }
});

Deno.test("lost connections, restarts, deadlocks, serialization failures and driver codes are transient", () => {
  for (
    const error of [
      { code: "08006" },
      { code: "57P01" },
      { code: "53300" },
      { code: "40001" },
      { code: "40P01" },
      { code: "55P03" },
      { code: "CONNECTION_CLOSED" },
      new Error("no code"),
      undefined,
    ]
  ) {
    assert.deepEqual(classifySqlState(error), { kind: "transient" }, JSON.stringify(error));
  }
  assert.equal(sqlStateOf({ code: "ECONNRESET" }), undefined);
});

Deno.test("a permanent statement failure suppresses restarts and carries the server's detail", () => {
  const driver = Object.assign(new Error("duplicate key value"), {
    code: "23505",
    detail: "Key (id)=(3) already exists.",
  });
  const error = statementFailure(driver, "sink s: INSERT of 2 rows into t failed");
  assert.ok(error instanceof PostgresRejectedError && error instanceof SuppressRestartsError);
  assert.equal(error.sqlState, "23505");
  assert.equal(error.cause, driver);
  assert.ok(
    error.message.startsWith(
      "sink s: INSERT of 2 rows into t failed (Key (id)=(3) already exists.)",
    ),
  );
  const transient = statementFailure({ code: "40P01" }, "sink s: deadlock");
  assert.ok(!(transient instanceof SuppressRestartsError));
  assert.equal(transient.message, "sink s: deadlock");
});
