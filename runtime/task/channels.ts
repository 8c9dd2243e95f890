/**
 * Which producer subtasks connect to which consumer subtasks along an edge,
 * per partitioner. Producer and consumer compute the same answer from the
 * JobGraph, so neither needs to announce its channels.
 *
 * - `forward`: producer i -> consumer i (equal parallelism).
 * - `rescale`: each producer feeds a contiguous block of consumers (or, when
 *   there are fewer consumers, several producers feed one), as Flink's
 *   `RescalePartitioner`.
 * - `rebalance`, `hash`, `broadcast`: all-to-all.
 *
 * @module
 */

import type { Partitioner } from "../graph/stream_graph.ts";

/** The consumer subtasks producer `index` sends to. */
export function channelTargets(
  partitioner: Partitioner,
  producers: number,
  consumers: number,
  index: number,
): number[] {
  switch (partitioner) {
    case "forward":
      return [index];
    case "rescale": {
      if (consumers >= producers) {
        const start = Math.floor((index * consumers) / producers);
        const end = Math.floor(((index + 1) * consumers) / producers);
        return range(start, end);
      }
      return [Math.floor((index * consumers) / producers)];
    }
    default:
      return range(0, consumers);
  }
}

/** The producer subtasks that send to consumer `index`. */
export function channelSources(
  partitioner: Partitioner,
  producers: number,
  consumers: number,
  index: number,
): number[] {
  const sources: number[] = [];
  for (let p = 0; p < producers; p++) {
    if (channelTargets(partitioner, producers, consumers, p).includes(index)) sources.push(p);
  }
  return sources;
}

function range(start: number, end: number): number[] {
  const out: number[] = [];
  for (let i = start; i < end; i++) out.push(i);
  return out;
}
