/**
 * The operators of the OVER-family plan nodes (`plan_rank.ts`,
 * `plan_over.ts`), each a KeyedProcessFunction applied after `keyBy` on
 * the node's PARTITION BY keys:
 *
 * | plan node | function | uid |
 * |---|---|---|
 * | `Rank` | `RankFunction` (`rank.ts`) | `<prefix>-rank-<n>` |
 * | `Deduplicate` | `DeduplicateFunction` (`deduplicate.ts`) | `<prefix>-deduplicate-<n>` |
 * | `WindowRank` | `WindowRankFunction` (`window_rank.ts`) | `<prefix>-window-rank-<n>` |
 * | `OverAggregate` | `OverAggregateFunction` (`over_aggregate.ts`); over an updating input `RetractOverAggregateFunction` (`retract_over_aggregate.ts`) | `<prefix>-over-aggregate-<n>` |
 *
 * Idle state retention (`table.exec.state.ttl`) applies to Rank,
 * Deduplicate and OverAggregate; WindowRank cleans its state when its
 * window fires.
 *
 * @module
 */

import type { KeyedProcessFunction } from "../api/functions.ts";
import { DeduplicateFunction } from "./deduplicate.ts";
import { OverAggregateFunction } from "./over_aggregate.ts";
import type { OverAggregateNode } from "./plan_over.ts";
import { describeRankingNode, type RankingNode } from "./plan_rank.ts";
import { describeOverNode } from "./plan_over.ts";
import { RankFunction } from "./rank.ts";
import { RetractOverAggregateFunction } from "./retract_over_aggregate.ts";
import type { Row } from "./row.ts";
import { WindowRankFunction } from "./window_rank.ts";

/** A node this file translates. */
export type OverFamilyNode = RankingNode | OverAggregateNode;

const UID_NAMES: Readonly<Record<OverFamilyNode["op"], string>> = {
  Rank: "rank",
  Deduplicate: "deduplicate",
  WindowRank: "window-rank",
  OverAggregate: "over-aggregate",
};

/** The uid stem of a node's operator (`rank`, `deduplicate`, `window-rank`, `over-aggregate`). */
export function overFamilyUidName(node: OverFamilyNode): string {
  return UID_NAMES[node.op];
}

/**
 * The keyed function that runs `node`.
 * @param node the plan node.
 * @param stateTtlMs idle state retention in ms; 0 keeps state forever.
 */
export function overFamilyFunction(
  node: OverFamilyNode,
  stateTtlMs: number,
): KeyedProcessFunction<string, Row, Row> {
  switch (node.op) {
    case "Rank":
      return new RankFunction(node.spec, stateTtlMs);
    case "Deduplicate":
      return new DeduplicateFunction(node.spec, stateTtlMs);
    case "WindowRank":
      return new WindowRankFunction(node.spec, describeRankingNode(node));
    case "OverAggregate":
      return node.updating
        ? new RetractOverAggregateFunction(node.spec, stateTtlMs, describeOverNode(node))
        : new OverAggregateFunction(node.spec, stateTtlMs, describeOverNode(node));
  }
}
