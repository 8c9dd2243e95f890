/**
 * The Nexmark benchmark's data generator (Beam's and Flink's Nexmark): the
 * data model, a deterministic generator of event *n*, and a splittable,
 * rate-limited, checkpointed Weir source of the events.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NexmarkGenerator, NexmarkSource } from "./mod.ts";
 *
 * const generator = new NexmarkGenerator();
 * assert.equal(generator.kind(0), "person");
 * const source = new NexmarkSource({ events: 1_000, eventsPerSecond: 10_000 });
 * assert.equal(source.boundedness, "bounded");
 * ```
 *
 * @module
 */

export type { Auction, Bid, NexmarkEvent, Person } from "./model.ts";
export { type NexmarkConfig, NexmarkGenerator } from "./generator.ts";
export { NexmarkSource, type NexmarkSourceOptions, type NexmarkSplit } from "./source.ts";
