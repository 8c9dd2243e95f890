/**
 * {@linkcode SqliteKeyedStateBackend} against the keyed state backend
 * conformance suite (`runtime/state/backend_conformance.ts`). The factory
 * uses a cache of 4096 entries (write-back batches of 256), smaller than
 * the suite's larger tests, so that those run through evictions and
 * write-backs, not only through cached entries; the last test checks that
 * they did. A smaller cache makes the suite much slower (each miss is a
 * SQLite read) without covering more: the unit tests
 * (`sqlite_keyed_backend_test.ts`) run caches of 2 to 100 entries.
 *
 * ## Sizes
 *
 * The isolation test "writes made while write() runs" uses 5000 keys
 * (`isolationKeys`), not the suite's default 20 000, with snapshot blobs of
 * about 12 000 rows, not 50 000: its 5000 keys × 5 states weigh 35 000
 * cache entries, 8.5 times the cache, and one mutation round (750 keys)
 * alone outweighs it; the snapshot is still written in 3 blobs with 4
 * mutation rounds between them, as at 20 000 keys. Measured with a
 * temporary counter on that one test (`--filter "writes made while
 * write"`): 20 000 keys took 1 m 4 s (18.0 s of CPU) with 326 137
 * evictions and 501 write-back batches in the live backend; 5000 keys took
 * 16 s (4.0 s of CPU) with 79 074 evictions and 126 write-back batches, on
 * the 2-core machine under a load average near 20.
 *
 * @module
 */

import assert from "node:assert/strict";
import { keyedStateBackendConformanceSuite } from "../backend_conformance.ts";
import { type EntryCacheStats, SqliteKeyedStateBackend } from "./sqlite_keyed_backend.ts";
import { fuzzRuns } from "../../../tests/_fuzz.ts";

const CACHE_ENTRIES = 4096;
/** Cache counters of every backend the suite made, read at its disposal. */
const disposed: EntryCacheStats[] = [];

keyedStateBackendConformanceSuite(
  `SqliteKeyedStateBackend (cache of ${CACHE_ENTRIES} entries)`,
  async (options) => {
    const backend = await SqliteKeyedStateBackend.create({
      ...options,
      name: "conformance",
      cacheEntries: CACHE_ENTRIES,
      writeBatchSize: 256,
      snapshotChunkRows: 12_000,
    });
    const dispose = backend.dispose.bind(backend);
    backend.dispose = async () => {
      disposed.push({ ...backend.cacheStats });
      await dispose();
    };
    return backend;
  },
  { propertyRuns: fuzzRuns(100), isolationKeys: 5000 },
);

Deno.test("SqliteKeyedStateBackend conformance: a backend of the suite evicted more entries than its cache holds and wrote them back in batches", () => {
  const busiest = disposed.reduce(
    (a, b) => (b.evictions > a.evictions ? b : a),
    { misses: 0, evictions: 0, writeBacks: 0, entriesWritten: 0 },
  );
  assert.ok(
    busiest.evictions > 10 * CACHE_ENTRIES && busiest.writeBacks > 10,
    `the suite's largest test no longer outgrows the cache of ${CACHE_ENTRIES} entries: busiest backend's counters ${
      JSON.stringify(busiest)
    } of ${disposed.length} backends`,
  );
});
