import assert from "node:assert/strict";
import { decideCommitOutcome } from "./commit_outcome.ts";

const error = (code: string) => Object.assign(new Error(`failure ${code}`), { code });
const notPrepared = error("42704");

Deno.test("decideCommitOutcome: a successful COMMIT PREPARED is committed", () => {
  assert.deepEqual(decideCommitOutcome({ commitError: undefined, recorded: undefined }), {
    kind: "committed",
  });
});

Deno.test("decideCommitOutcome: a gid not prepared is already committed when the commit table records it, else vanished", () => {
  assert.equal(
    decideCommitOutcome({ commitError: notPrepared, recorded: true }).kind,
    "already-committed",
  );
  assert.equal(decideCommitOutcome({ commitError: notPrepared, recorded: false }).kind, "vanished");
});

Deno.test("decideCommitOutcome retries lost connections and a server restarting, and fails on other errors", () => {
  for (const code of ["CONNECTION_CLOSED", "ECONNREFUSED", "57P01", "57P03", "08006"]) {
    assert.equal(
      decideCommitOutcome({ commitError: error(code), recorded: undefined }).kind,
      "retry",
      code,
    );
  }
  assert.equal(
    decideCommitOutcome({ commitError: notPrepared, recorded: error("CONNECTION_CLOSED") }).kind,
    "retry",
  );
  assert.equal(
    decideCommitOutcome({ commitError: error("42501"), recorded: undefined }).kind,
    "failed",
  );
  assert.equal(
    decideCommitOutcome({ commitError: notPrepared, recorded: error("42P01") }).kind,
    "failed",
  );
  assert.equal(
    decideCommitOutcome({ commitError: notPrepared, recorded: undefined }).kind,
    "failed",
  );
});
