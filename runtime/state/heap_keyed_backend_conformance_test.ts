/**
 * {@linkcode HeapKeyedStateBackend} against the keyed state backend
 * conformance suite (`backend_conformance.ts`).
 *
 * @module
 */

import { keyedStateBackendConformanceSuite } from "./backend_conformance.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";

keyedStateBackendConformanceSuite(
  "HeapKeyedStateBackend",
  (options) => new HeapKeyedStateBackend(options),
  { propertyRuns: fuzzRuns(100) },
);
