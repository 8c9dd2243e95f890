/**
 * The exactly-once sink conformance suite against {@linkcode CollectingSink}:
 * one sink object per case (its store survives the simulated crashes, as a
 * database would), read back through `committed()`.
 *
 * @module
 */

import { collectingFixture } from "./_collecting_fixture.ts";
import { exactlyOnceSinkConformanceSuite } from "./exactly_once_sink_conformance.ts";

exactlyOnceSinkConformanceSuite("CollectingSink", collectingFixture());
