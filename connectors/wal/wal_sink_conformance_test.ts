/**
 * The exactly-once sink conformance suite against the write-ahead-log sink
 * with its PostgreSQL target (values and committer row in one
 * transaction), on the shared server at 127.0.0.1:5432, in tables with
 * unique names dropped afterwards. Small parts (`maxValuesPerCommittable`
 * 3) and statements (`maxRowsPerStatement` 2) so that a checkpoint's
 * records span several committables and statements.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "../testing/exactly_once_sink_conformance.ts";
import { PostgresWalTarget } from "./postgres_wal_target.ts";
import { WriteAheadSink } from "./wal_sink.ts";

const CONNECTION = { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" };

exactlyOnceSinkConformanceSuite("WriteAheadSink on PostgreSQL", async () => {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `wal_conformance_${suffix}`;
  const committerTable = `wal_conformance_committed_${suffix}`;
  const sql = postgres({ ...CONNECTION, max: 1, onnotice: () => {} });
  await sql.unsafe(
    `CREATE TABLE ${table} (id integer NOT NULL, key text NOT NULL, amount integer NOT NULL)`,
  );
  return {
    createSink: () =>
      new WriteAheadSink<ConformanceRecord>({
        target: new PostgresWalTarget<ConformanceRecord>({
          connection: CONNECTION,
          table,
          committerTable,
          columns: ["id", "key", "amount"],
          toRow: (record) => record,
          maxRowsPerStatement: 2,
        }),
        maxValuesPerCommittable: 3,
      }),
    readCommitted: async () => {
      const rows = await sql.unsafe(`SELECT id, key, amount FROM ${table}`);
      return rows.map((r) => ({ id: Number(r.id), key: String(r.key), amount: Number(r.amount) }));
    },
    cleanup: async () => {
      await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
      await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
      await sql.end({ timeout: 0 });
    },
  };
});
