/**
 * Throughput of {@linkcode NexmarkGenerator.event}: `deno bench connectors/datagen/nexmark/`.
 *
 * @module
 */

import { NexmarkGenerator } from "./generator.ts";

const generator = new NexmarkGenerator();
const BATCH = 100_000;
let next = 0;

Deno.bench(`NexmarkGenerator.event(n), ${BATCH} events`, () => {
  let sink = 0;
  for (let i = 0; i < BATCH; i++) sink += generator.event(next++).type.length;
  if (sink === 0) throw new Error("no events generated");
});

Deno.bench(`NexmarkGenerator.kind(n), ${BATCH} events`, () => {
  let bids = 0;
  for (let i = 0; i < BATCH; i++) if (generator.kind(i) === "bid") bids++;
  if (bids === 0) throw new Error("no bids");
});
