/**
 * The exactly-once sink conformance suite against the MariaDB XA sink, on
 * the server at 127.0.0.1:3306 (database `test`), in a table with a unique
 * name and no key (so a duplicate would be stored and seen, not refused),
 * with its own xid prefix and commit-log table, all removed afterwards.
 * Batches of 2 rows, so a checkpoint's records span several statements.
 *
 * @module
 */

import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "../testing/exactly_once_sink_conformance.ts";
import { cleanupPrefix, rows, sql, TEST_CONNECTION, uniqueName } from "./_test_kit.ts";
import { mariaDbXaSink } from "./xa_sink.ts";

exactlyOnceSinkConformanceSuite("MariaDbXaSink", async () => {
  const table = uniqueName("xa_conf");
  const prefix = uniqueName("conf");
  const commitLogTable = uniqueName("xa_conf_log");
  await sql(
    `CREATE TABLE \`${table}\` (id INT NOT NULL, \`key\` VARCHAR(16) NOT NULL, ` +
      `amount INT NOT NULL) ENGINE=InnoDB`,
  );
  return {
    createSink: () =>
      mariaDbXaSink<ConformanceRecord>({
        connection: TEST_CONNECTION,
        sql: `INSERT INTO \`${table}\` (id, \`key\`, amount) VALUES (?, ?, ?)`,
        parameters: (r) => [r.id, r.key, r.amount],
        batchSize: 2,
        xidPrefix: prefix,
        commitLogTable,
        detachTimeoutMs: 5000,
      }),
    readCommitted: async () =>
      (await rows(table)).map((r) => ({
        id: Number(r.id),
        key: String(r.key),
        amount: Number(r.amount),
      })),
    cleanup: async () => {
      await cleanupPrefix(prefix, commitLogTable);
      await sql(`DROP TABLE IF EXISTS \`${table}\``);
    },
  };
});
