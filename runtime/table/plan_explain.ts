/**
 * Prints plans (`plan.ts`) as Flink's `EXPLAIN CHANGELOG_MODE` prints its
 * optimized physical plan: one node per line, inputs indented under
 * `+- `, each with `changelogMode=[...]`; a keyed node's inputs show the
 * hash `Exchange` on its keys.
 *
 * @module
 */

import { changelogModeString, isUpdating } from "./changelog_mode.ts";
import type { CompiledExpr } from "./expressions.ts";
import type { PlanNode } from "./plan.ts";
import { attachedWindowText, windowText } from "./plan_window.ts";
import { describeRankingNode } from "./plan_rank.ts";
import { describeOverNode } from "./plan_over.ts";
import { describeCorrelate } from "./plan_lateral.ts";

const names = (xs: readonly CompiledExpr[]) => xs.map((k) => k.text).join(", ");

/** The inputs of a node, in order. */
export function nodeInputs(node: PlanNode): readonly PlanNode[] {
  switch (node.op) {
    case "TableSourceScan":
      return [];
    case "Join":
    case "IntervalJoin":
    case "WindowJoin":
      return [node.left, node.right];
    default:
      return [node.input];
  }
}

/** A one-line description of a node, as Flink's plan prints it (without the mode). */
export function describeNode(node: PlanNode): string {
  switch (node.op) {
    case "TableSourceScan":
      return `TableSourceScan(table=[[${node.table}${
        node.watermark === undefined ? "" : `, watermark=[${node.watermark.text}]`
      }]], fields=[${node.columns.map((c) => c.name).join(", ")}])`;
    case "WatermarkAssigner":
      return `WatermarkAssigner(rowtime=[${
        node.columns[node.watermark.rowtime]!.name
      }], watermark=[${node.watermark.text}])`;
    case "Calc": {
      const select = node.projections.map((p, i) =>
        p.text === node.columns[i]!.name ? p.text : `${p.text} AS ${node.columns[i]!.name}`
      );
      return `Calc(select=[${select.join(", ")}]${
        node.filter === null ? "" : `, where=[${node.filter.text}]`
      })`;
    }
    case "GroupAggregate": {
      const select = [
        ...node.keys.map((k) => k.text),
        ...node.aggregates.map((a, i) => {
          const name = node.columns[node.keys.length + i]!.name;
          return name.startsWith("EXPR$") ? a.text : `${a.text} AS ${name}`;
        }),
      ];
      return `GroupAggregate(groupBy=[${names(node.keys)}], select=[${select.join(", ")}])`;
    }
    case "Rank":
    case "Deduplicate":
    case "WindowRank":
      return describeRankingNode(node);
    case "OverAggregate":
      return describeOverNode(node);
    case "Correlate":
      return describeCorrelate(node);
    case "WindowTableFunction":
      return `WindowTableFunction(window=[${windowText(node.window, node.input.columns)}])`;
    case "WindowAggregate": {
      const select = node.keySlots.map((slot, i) => {
        const name = node.columns[i]!.name;
        if (typeof slot === "number") return node.groupKeys[slot]!.text;
        const prop = slot === "window_start" ? "start" : slot === "window_end" ? "end" : "rowtime";
        return `${prop}('w$) AS ${name}`;
      });
      node.aggregates.forEach((a, i) => {
        const name = node.columns[node.keySlots.length + i]!.name;
        select.push(name.startsWith("EXPR$") ? a.text : `${a.text} AS ${name}`);
      });
      const window = node.attached === null
        ? windowText(node.window, node.input.columns)
        : attachedWindowText(
          node.window,
          node.input.columns,
          node.attached.start,
          node.attached.end,
        );
      return `WindowAggregate(groupBy=[${names(node.groupKeys)}], window=[${window}], select=[${
        select.join(", ")
      }])`;
    }
    case "Join":
      return `Join(joinType=[${node.joinType}], where=[${node.conditionText}], select=[${
        node.columns.map((c) => c.name).join(", ")
      }], leftInputSpec=[NoUniqueKey], rightInputSpec=[NoUniqueKey])`;
    case "IntervalJoin":
      return `IntervalJoin(joinType=[${node.joinType}], windowBounds=[isRowTime=true, leftLowerBound=${node.lower}, leftUpperBound=${node.upper}, leftTimeIndex=${node.leftTime}, rightTimeIndex=${node.rightTime}], where=[${node.conditionText}], select=[${
        node.columns.map((c) => c.name).join(", ")
      }])`;
    case "WindowJoin": {
      const side = (w: typeof node.leftWindow, columns: typeof node.columns) =>
        attachedWindowText(w.spec, columns, w.start, w.end);
      return `WindowJoin(leftWindow=[${side(node.leftWindow, node.left.columns)}], rightWindow=[${
        side(node.rightWindow, node.right.columns)
      }], joinType=[${node.joinType}], where=[${node.conditionText}], select=[${
        node.columns.map((c) => c.name).join(", ")
      }])`;
    }
  }
}

/** The hash keys each input of a keyed node is exchanged on, or `null` for a node without exchange. */
function exchanges(node: PlanNode): readonly (readonly CompiledExpr[])[] | null {
  switch (node.op) {
    case "GroupAggregate":
      return [node.keys];
    case "WindowAggregate":
      return [node.groupKeys];
    case "Rank":
    case "Deduplicate":
    case "WindowRank":
    case "OverAggregate":
      return [node.partitionKeys];
    case "Join":
    case "IntervalJoin":
      return [node.leftKeys, node.rightKeys];
    case "WindowJoin": {
      // keyed by the equi-keys and the window (window_join.ts)
      const windowed = (
        keys: readonly CompiledExpr[],
        side: PlanNode,
        start: number,
        end: number,
      ) => [
        ...keys,
        ...[start, end].map((i): CompiledExpr => ({
          evaluate: (f) => f[i] ?? null,
          type: side.columns[i]!.type,
          text: side.columns[i]!.name,
        })),
      ];
      return [
        windowed(node.leftKeys, node.left, node.leftWindow.start, node.leftWindow.end),
        windowed(node.rightKeys, node.right, node.rightWindow.start, node.rightWindow.end),
      ];
    }
    default:
      return null;
  }
}

/**
 * The node whose output first carries updates (walking from the sources
 * up), for messages of append-only sinks; `undefined` for an append-only plan.
 */
export function updateProducer(node: PlanNode): PlanNode | undefined {
  for (const input of nodeInputs(node)) {
    const below = updateProducer(input);
    if (below !== undefined) return below;
  }
  return isUpdating(node.mode) ? node : undefined;
}

/**
 * Prints a plan as Flink's `EXPLAIN CHANGELOG_MODE` prints its optimized
 * physical plan (see the module docs).
 */
export function explainPlan(root: PlanNode): string {
  const lines: string[] = [];
  const walk = (node: PlanNode, depth: number, last: boolean[]): void => {
    const prefix = last.slice(0, -1).map((l) => (l ? "   " : ":  ")).join("");
    const indent = depth === 0 ? "" : `${prefix}${last[last.length - 1] ? "+- " : ":- "}`;
    lines.push(
      indent +
        describeNode(node).replace(/\)$/, `, changelogMode=${changelogModeString(node.mode)})`),
    );
    const inputs = nodeInputs(node);
    const keys = exchanges(node);
    inputs.forEach((input, i) => {
      const isLast = i === inputs.length - 1;
      if (keys === null) {
        walk(input, depth + 1, [...last, isLast]);
        return;
      }
      const p = [...last, isLast];
      const pre = p.slice(0, -1).map((l) => (l ? "   " : ":  ")).join("");
      const k = keys[i]!;
      lines.push(
        `${pre}${isLast ? "+- " : ":- "}Exchange(distribution=[${
          k.length === 0 ? "single" : `hash[${names(k)}]`
        }], changelogMode=${changelogModeString(input.mode)})`,
      );
      walk(input, depth + 2, [...p, true]);
    });
  };
  walk(root, 0, []);
  return `== Optimized Physical Plan ==\n${lines.join("\n")}\n`;
}
