/**
 * The private PostgreSQL server of the tests (`_postgres_server.ts`):
 * started with prepared transactions, restarted with its data, and gone
 * without a trace when stopped, also when it fails to start.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { startPostgresServer } from "./_postgres_server.ts";

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

Deno.test("a private PostgreSQL server allows prepared transactions, keeps them across a restart, and leaves nothing behind", async () => {
  const server = await startPostgresServer({ maxPreparedTransactions: 8 });
  try {
    assert.ok(exists(`${server.directory}/data/PG_VERSION`), "the data directory is there");
    const sql = postgres(server.url, { max: 1, onnotice: () => {} });
    try {
      const [setting] = await sql.unsafe("SHOW max_prepared_transactions");
      assert.equal(setting!.max_prepared_transactions, "8");
      await sql.unsafe("CREATE TABLE t (x int)");
      await sql.unsafe("BEGIN");
      await sql.unsafe("INSERT INTO t VALUES (1)");
      await sql.unsafe("PREPARE TRANSACTION 'survivor'");
      await server.restart("immediate");
      const prepared = await sql.unsafe("SELECT gid FROM pg_prepared_xacts");
      assert.deepEqual(prepared.map((r) => r.gid), ["survivor"]);
      await sql.unsafe("COMMIT PREPARED 'survivor'");
      assert.deepEqual((await sql.unsafe("SELECT x FROM t")).map((r) => r.x), [1]);
    } finally {
      await sql.end();
    }
  } finally {
    await server.stop();
    await server.stop(); // idempotent
  }
  assert.equal(exists(server.directory), false, "the server's directory is removed");
});

Deno.test("a private PostgreSQL server that cannot start says why and removes its directory", async () => {
  let message = "";
  await assert.rejects(
    () => startPostgresServer({ maxPreparedTransactions: -1, timeoutSeconds: 20 }),
    (e: unknown) => {
      message = e instanceof Error ? e.message : String(e);
      return message.includes("pg_ctl start") && message.includes("--- server log (tail) ---") &&
        message.includes("max_prepared_transactions");
    },
  );
  const dir = /\(server directory (\S+), removed\)/.exec(message);
  assert.ok(dir, `the error names the server directory: ${message}`);
  assert.equal(exists(dir[1]!), false, "the directory is removed");
});
