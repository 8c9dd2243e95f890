/**
 * An exactly-once sink conformance fixture over one
 * {@linkcode CollectingSink} (its store survives the simulated crashes, as a
 * database would), read back through `committed()`: for the suite's own
 * tests, the CollectingSink's conformance test and the breaker's tests of
 * broken sinks.
 *
 * @module
 */

import { CollectingSink, type CollectingTxn } from "./collecting_sink.ts";
import type {
  ConformanceRecord,
  ExactlyOnceSink,
  ExactlyOnceSinkFixture,
} from "./exactly_once_sink_conformance.ts";

/** The CollectingSink's transaction of conformance records. */
export type ConformanceTxn = CollectingTxn<ConformanceRecord>;

/**
 * A fixture factory (one fresh CollectingSink per case) whose `createSink`
 * gives `wrap(inner)` for every incarnation: the CollectingSink itself when
 * `wrap` is omitted, or a sink that breaks one rule of the protocol around it.
 */
export function collectingFixture(
  wrap: (inner: CollectingSink<ConformanceRecord>) => ExactlyOnceSink<ConformanceRecord> = (
    inner,
  ) => inner,
): () => Promise<ExactlyOnceSinkFixture> {
  return () => {
    const inner = new CollectingSink<ConformanceRecord>();
    return Promise.resolve({
      createSink: () => wrap(inner),
      readCommitted: () => Promise.resolve(inner.committed()),
      cleanup: () => Promise.resolve(inner.reset()),
    });
  };
}
