/**
 * Measures the two row layouts considered for the SQLite keyed state
 * backend's tables, with the same rows and statements the backend runs
 * (batches of 1000 inserts per transaction, then point reads in another
 * order), interleaved, in CPU time of this process:
 *
 * - **columns**: `(kg INTEGER, k TEXT, ns TEXT, uk TEXT, v BLOB)`,
 *   `PRIMARY KEY (kg, k, ns, uk) WITHOUT ROWID` (the layout chosen);
 * - **blob**: `(key BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID`, the key being
 *   2 bytes of big-endian key group, then the key's UTF-8 bytes (RocksDB's
 *   layout in Flink).
 *
 *     deno run -A runtime/state/sqlite/_layout_measure.ts [rows]
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { readCpu } from "../../../bench/_rounds.ts";

const rows = Number(Deno.args[0] ?? 200_000);
const dir = await Deno.makeTempDir({ prefix: "weir-sqlite-layout-" });
const encoder = new TextEncoder();
const cpu = () => readCpu().selfMs;

interface Layout {
  readonly name: string;
  readonly schema: string;
  readonly put: string;
  readonly get: string;
  readonly key: (i: number) => (string | number | Uint8Array)[];
}

const layouts: Layout[] = [
  {
    name: "columns",
    schema:
      "CREATE TABLE t (kg INTEGER, k TEXT, ns TEXT, uk TEXT, v BLOB, PRIMARY KEY (kg, k, ns, uk)) WITHOUT ROWID",
    put: "INSERT OR REPLACE INTO t VALUES (?, ?, ?, ?, ?)",
    get: "SELECT v FROM t WHERE kg = ? AND k = ? AND ns = ? AND uk = ?",
    key: (i) => [i % 128, "n" + i, "", ""],
  },
  {
    name: "blob",
    schema: "CREATE TABLE t (key BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID",
    put: "INSERT OR REPLACE INTO t VALUES (?, ?)",
    get: "SELECT v FROM t WHERE key = ?",
    key: (i) => {
      const k = encoder.encode("n" + i);
      const b = new Uint8Array(k.length + 2);
      b[1] = i % 128;
      b.set(k, 2);
      return [b];
    },
  },
];

const value = new Uint8Array([1, 2, 3]);
try {
  for (let round = 1; round <= 3; round++) {
    for (const layout of layouts) {
      const path = `${dir}/${layout.name}-${round}.db`;
      const db = new DatabaseSync(path);
      db.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; ${layout.schema}`);
      const put = db.prepare(layout.put);
      const get = db.prepare(layout.get);
      let t0 = cpu();
      for (let b = 0; b < rows; b += 1000) {
        db.exec("BEGIN");
        for (let i = b; i < Math.min(rows, b + 1000); i++) {
          put.run(...layout.key((i * 7919) % rows), value);
        }
        db.exec("COMMIT");
      }
      const insertUs = (cpu() - t0) * 1000 / rows;
      t0 = cpu();
      for (let i = 0; i < rows; i++) get.get(...layout.key((i * 104729) % rows));
      const readUs = (cpu() - t0) * 1000 / rows;
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      const bytes = Deno.statSync(path).size;
      db.close();
      console.log(
        `round ${round}: ${layout.name.padEnd(7)} insert ${
          insertUs.toFixed(2)
        } µs CPU/row, point read ${readUs.toFixed(2)} µs CPU/row, ${
          (bytes / rows).toFixed(1)
        } bytes/row`,
      );
    }
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
