/**
 * {@linkcode SqliteKeyedStateBackend} against the keyed state backend
 * conformance suite (`runtime/state/backend_conformance.ts`). The factory
 * uses a cache of 4096 entries (write-back batches of 256), smaller than
 * the suite's larger tests (20 000 keys over five states), so that those
 * run through evictions and write-backs, not only through cached entries;
 * snapshot blobs of about 50 000 rows. A smaller cache makes the suite much
 * slower (each miss is a SQLite read) without covering more: the unit tests
 * (`sqlite_keyed_backend_test.ts`) run caches of 2 to 100 entries.
 *
 * @module
 */

import { keyedStateBackendConformanceSuite } from "../backend_conformance.ts";
import { SqliteKeyedStateBackend } from "./sqlite_keyed_backend.ts";
import { fuzzRuns } from "../../../tests/_fuzz.ts";

keyedStateBackendConformanceSuite(
  "SqliteKeyedStateBackend (cache of 4096 entries)",
  (options) =>
    SqliteKeyedStateBackend.create({
      ...options,
      name: "conformance",
      cacheEntries: 4096,
      writeBatchSize: 256,
      snapshotChunkRows: 50_000,
    }),
  { propertyRuns: fuzzRuns(100) },
);
