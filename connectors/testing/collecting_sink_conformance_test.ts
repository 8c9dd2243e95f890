/**
 * The exactly-once sink conformance suite against {@linkcode CollectingSink}:
 * one sink object per case (its store survives the simulated crashes, as a
 * database would), read back through `committed()`.
 *
 * @module
 */

import { CollectingSink } from "./collecting_sink.ts";
import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "./exactly_once_sink_conformance.ts";

exactlyOnceSinkConformanceSuite("CollectingSink", () => {
  const sink = new CollectingSink<ConformanceRecord>();
  return Promise.resolve({
    createSink: () => sink,
    readCommitted: () => Promise.resolve(sink.committed()),
    cleanup: () => {
      sink.reset();
      return Promise.resolve();
    },
  });
});
