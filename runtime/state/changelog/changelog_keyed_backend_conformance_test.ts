/**
 * {@linkcode ChangelogKeyedStateBackend} over the heap backend against the
 * keyed state backend conformance suite (`backend_conformance.ts`), once
 * materializing at every checkpoint and once never (every checkpoint a
 * chain of changelog segments); and over the SQLite backend (segments only).
 *
 * @module
 */

import { keyedStateBackendConformanceSuite } from "../backend_conformance.ts";
import { HeapKeyedStateBackend } from "../heap_keyed_backend.ts";
import { SqliteKeyedStateBackend } from "../sqlite/sqlite_keyed_backend.ts";
import { ChangelogKeyedStateBackend } from "./changelog_keyed_backend.ts";
import { fuzzRuns } from "../../../tests/_fuzz.ts";

keyedStateBackendConformanceSuite(
  "ChangelogKeyedStateBackend(heap, segments only)",
  (options) =>
    new ChangelogKeyedStateBackend({
      inner: new HeapKeyedStateBackend(options),
      materialization: { intervalMs: Infinity, maxChangelogRatio: Infinity },
      clock: options.clock,
      eventTimeClock: options.eventTimeClock,
    }),
  { propertyRuns: fuzzRuns(100) },
);

keyedStateBackendConformanceSuite(
  "ChangelogKeyedStateBackend(heap, materialize every checkpoint)",
  (options) =>
    new ChangelogKeyedStateBackend({
      inner: new HeapKeyedStateBackend(options),
      materialization: { intervalMs: 0 },
      clock: options.clock,
      eventTimeClock: options.eventTimeClock,
    }),
  { propertyRuns: fuzzRuns(50) },
);

keyedStateBackendConformanceSuite(
  "ChangelogKeyedStateBackend(sqlite, segments only)",
  async (options) =>
    new ChangelogKeyedStateBackend({
      inner: await SqliteKeyedStateBackend.create({
        ...options,
        name: "changelog-conformance",
        cacheEntries: 4096,
      }),
      materialization: { intervalMs: Infinity, maxChangelogRatio: Infinity },
      clock: options.clock,
      eventTimeClock: options.eventTimeClock,
    }),
  // 5000 keys still weigh several times the 4096-entry cache (evictions and
  // write-backs happen), at a quarter of the default's SQLite reads; see
  // sqlite_keyed_backend_conformance_test.ts.
  { propertyRuns: fuzzRuns(30), isolationKeys: 5000 },
);
