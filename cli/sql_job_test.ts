import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { decodeScript, encodeScript, sqlJobArgs } from "./sql_job.ts";

Deno.test("a SQL script survives the job module's --script argument, any Unicode text", () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme" }), (script) => {
      const encoded = encodeScript(script);
      assert.match(encoded, /^[A-Za-z0-9_-]*$/);
      assert.equal(decodeScript(encoded), script);
    }),
  );
  assert.deepEqual(sqlJobArgs("SELECT 1;", 3), ["--script", encodeScript("SELECT 1;"), "-p", "3"]);
  assert.throws(() => decodeScript("not base64!"), /--script must be base64url/);
});
