/**
 * The exactly-once sink conformance suite against PostgresPreparedSink, on
 * one private PostgreSQL server for the whole file (started at import,
 * stopped when the file's tests end, `tests/_postgres_server.ts`). Each
 * case gets a table with a unique name and no key (so a duplicate would be
 * stored and seen, not refused), its own gid prefix and commit table, all
 * removed afterwards. Batches of 2 rows, so a checkpoint's records span
 * several statements.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "../testing/exactly_once_sink_conformance.ts";
import { startPostgresServer } from "../../tests/_postgres_server.ts";
import { uniqueName } from "./_test_kit.ts";
import { PostgresPreparedSink } from "./prepared_sink.ts";

const server = await startPostgresServer();
globalThis.addEventListener("unload", () => server.stopSync());

exactlyOnceSinkConformanceSuite("PostgresPreparedSink", async () => {
  const table = uniqueName("weir_conf");
  const gidPrefix = uniqueName("conf");
  const commitTable = uniqueName("weir_conf_commits");
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  await admin.unsafe(
    `CREATE TABLE ${table} (id int NOT NULL, key text NOT NULL, amount int NOT NULL)`,
  );
  return {
    createSink: () =>
      new PostgresPreparedSink<ConformanceRecord>({
        url: server.url,
        table,
        columns: ["id", "key", "amount"],
        values: (r) => [r.id, r.key, r.amount],
        gidPrefix,
        commitTable,
        batchSize: 2,
      }),
    readCommitted: async () =>
      (await admin.unsafe(`SELECT id, key, amount FROM ${table}`)).map((r) => ({
        id: Number(r.id),
        key: String(r.key),
        amount: Number(r.amount),
      })),
    cleanup: async () => {
      try {
        const lingering = await admin.unsafe(
          "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1)",
          [`weir:${gidPrefix}:`],
        );
        for (const { gid } of lingering) await admin.unsafe(`ROLLBACK PREPARED '${gid}'`);
        await admin.unsafe(`DROP TABLE IF EXISTS ${table}`);
        await admin.unsafe(`DROP TABLE IF EXISTS ${commitTable}`);
      } finally {
        await admin.end();
      }
    },
  };
});
