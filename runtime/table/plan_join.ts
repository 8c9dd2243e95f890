/**
 * Planning of joins (Flink's `StreamPhysicalJoin`,
 * `StreamPhysicalIntervalJoin` and `StreamPhysicalWindowJoin`): which of
 * the three a `left JOIN right ON cond` becomes, decided from its
 * condition and inputs.
 *
 * The condition is split into conjuncts. An equality whose one side reads
 * only the left input and whose other side reads only the right is an
 * equi-join key; the rest is a filter evaluated on each joined pair. A
 * join needs at least one equi-join key (streaming joins are hash joins
 * keyed by them, as Flink's).
 *
 * | node | when | output |
 * |---|---|---|
 * | `WindowJoin` | both inputs carry window columns of the same window, and the keys include `l.window_start = r.window_start` and `l.window_end = r.window_end` | append, when the watermark passes the window's end |
 * | `IntervalJoin` | a join (inner or outer) of append-only inputs whose rest bounds `l.rt - r.rt` on both sides (`l.rt BETWEEN r.rt - INTERVAL a AND r.rt + INTERVAL b`, or `>=`/`<=` pairs) with rowtime attributes `l.rt`, `r.rt` | append (an outer side's unmatched rows null-padded when they expire); state dropped as the watermark passes |
 * | `Join` | otherwise | append for INNER over append-only inputs, else retract (`+I`/`-D`, null-padded rows retracted when a match comes) |
 *
 * Filter push-down (Flink's `FlinkFilterJoinRule`): a WHERE over an inner
 * join is planned as part of its ON condition, and a non-key conjunct that
 * reads one input only becomes a `Calc` filter on that input, below the
 * join, unless that input is an outer join's preserved side (its unmatched
 * rows must still show, null-padded).
 *
 * The output has the left columns then the right columns, each qualified
 * as in its input; `SELECT *` renames repeated names as Calcite does
 * (`k`, `k0`). Time attributes do not pass a join (they are materialized:
 * plain `TIMESTAMP(3)`); the window columns do pass a WindowJoin.
 *
 * @module
 */

import { type ChangelogMode, isUpdating, PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import {
  type CalcNode,
  columnSource,
  condition,
  materialized,
  type PlannerContext,
  type PlanNode,
  type Relation,
} from "./plan.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, TableRef } from "./sql_ast.ts";
import type { WindowProperties } from "./plan_window.ts";
import type { Column } from "./types.ts";

/** Flink's `FlinkJoinType` names, as its plans print them. */
export type JoinType = "InnerJoin" | "LeftOuterJoin" | "RightOuterJoin" | "FullOuterJoin";

/** The parts every join node shares. */
interface JoinParts {
  /** Inner or which outer join. */
  readonly joinType: JoinType;
  /** The left input. */
  readonly left: PlanNode;
  /** The right input. */
  readonly right: PlanNode;
  /** The equi-join keys over the left rows. */
  readonly leftKeys: readonly CompiledExpr[];
  /** The equi-join keys over the right rows, pairwise equal to `leftKeys`. */
  readonly rightKeys: readonly CompiledExpr[];
  /** The rest of the condition over the joined row (left fields then right fields), or `null`. */
  readonly filter: CompiledExpr | null;
  /** The whole ON condition's text, for explain. */
  readonly conditionText: string;
  /** The left columns, then the right columns. */
  readonly columns: readonly Column[];
}

/** A regular join with retraction (Flink's `Join` / `StreamingJoinOperator`). */
export interface JoinNode extends JoinParts {
  /** The node kind. */
  readonly op: "Join";
  /** `append` for an inner join of append-only inputs, else `retract`. */
  readonly mode: ChangelogMode;
}

/**
 * An event-time interval join (Flink's `IntervalJoin`): a pair joins when
 * `lower <= l.rt - r.rt <= upper`.
 */
export interface IntervalJoinNode extends JoinParts {
  /** The node kind. */
  readonly op: "IntervalJoin";
  /** The left rowtime column's position. */
  readonly leftTime: number;
  /** The right rowtime column's position (in the right rows). */
  readonly rightTime: number;
  /** Least `l.rt - r.rt`, ms. */
  readonly lower: number;
  /** Greatest `l.rt - r.rt`, ms. */
  readonly upper: number;
  /** Always `append`. */
  readonly mode: ChangelogMode;
}

/** A join of two windowed inputs per window (Flink's `WindowJoin`). */
export interface WindowJoinNode extends JoinParts {
  /** The node kind. */
  readonly op: "WindowJoin";
  /** The left input's window columns. */
  readonly leftWindow: WindowProperties;
  /** The right input's window columns. */
  readonly rightWindow: WindowProperties;
  /** Always `append`. */
  readonly mode: ChangelogMode;
}

const JOIN_TYPES: Readonly<Record<"INNER" | "LEFT" | "RIGHT" | "FULL", JoinType>> = {
  INNER: "InnerJoin",
  LEFT: "LeftOuterJoin",
  RIGHT: "RightOuterJoin",
  FULL: "FullOuterJoin",
};

/** Splits `a AND b AND ...` into its conjuncts. */
function conjuncts(e: Expr): Expr[] {
  if (e.k === "binary" && e.op === "AND") return [...conjuncts(e.left), ...conjuncts(e.right)];
  if (e.k === "between" && !e.negated) {
    return [
      { k: "binary", op: ">=", left: e.expr, right: e.low },
      { k: "binary", op: "<=", left: e.expr, right: e.high },
    ];
  }
  return [e];
}

/** `expr` compiled in `scope`, or `null` when it does not compile there. */
function tryCompile(expr: Expr, scope: Scope): CompiledExpr | null {
  try {
    return compileExpr(expr, scope);
  } catch (error) {
    if (error instanceof PlanningError) return null;
    throw error;
  }
}

/**
 * Plans `left JOIN right ON cond` (see the module docs).
 * @param planInput plans each side.
 * @throws {PlanningError} for a join without an equality, a CROSS join,
 *   a condition that is not BOOLEAN, an ambiguous column, or a window join
 *   of different windows.
 */
export function planJoin(
  ref: Extract<TableRef, { k: "join" }>,
  context: PlannerContext,
  planInput: (ref: TableRef, context: PlannerContext) => Relation,
): Relation {
  const at = context.locate("JOIN");
  if (ref.kind === "CROSS" || ref.on === null) {
    throw new PlanningError(
      `a ${
        ref.kind === "CROSS" ? "CROSS " : ""
      }join without an ON condition is not supported (a streaming join needs an equality between its inputs)${at}`,
    );
  }
  let left = planInput(ref.left, context);
  let right = planInput(ref.right, context);
  const nl = left.node.columns.length;
  // A join's output holds no time attribute (Flink materializes rowtimes
  // through a regular join; here through every join, a simplification).
  const columns = [...left.node.columns, ...right.node.columns].map((c) => ({
    name: c.name,
    type: materialized(c.type),
  }));
  const qualifiers = [...left.qualifiers, ...right.qualifiers];
  const scope = (cols: readonly Column[], qs: readonly (readonly string[])[], name: string) => ({
    columns: cols,
    qualifiers: qs,
    inputName: name,
    locate: context.locate,
    aggregatesAllowed: false,
  });
  const both = scope(columns, qualifiers, "the join's inputs");
  const leftScope = scope(left.node.columns, left.qualifiers, "the join's left input");
  const rightScope = scope(right.node.columns, right.qualifiers, "the join's right input");
  condition(ref.on, both, "ON", context); // type and name check of the whole condition
  const leftKeys: CompiledExpr[] = [];
  const rightKeys: CompiledExpr[] = [];
  const rest: Expr[] = [];
  for (const c of conjuncts(ref.on)) {
    if (c.k === "binary" && c.op === "=") {
      const l = tryCompile(c.left, leftScope);
      const r = tryCompile(c.right, rightScope);
      if (l !== null && r !== null && tryCompile(c.left, rightScope) === null) {
        leftKeys.push(l);
        rightKeys.push(r);
        continue;
      }
      const l2 = tryCompile(c.right, leftScope);
      const r2 = tryCompile(c.left, rightScope);
      if (l2 !== null && r2 !== null && tryCompile(c.right, rightScope) === null) {
        leftKeys.push(l2);
        rightKeys.push(r2);
        continue;
      }
    }
    rest.push(c);
  }
  // Conjuncts on one input's columns only filter that input before the
  // join (Flink's filter push-down), where that keeps the join's meaning:
  // not on an outer join's preserved side, whose unmatched rows still show.
  const joinTypeOf = JOIN_TYPES[ref.kind];
  const pushLeft = joinTypeOf === "InnerJoin" || joinTypeOf === "RightOuterJoin";
  const pushRight = joinTypeOf === "InnerJoin" || joinTypeOf === "LeftOuterJoin";
  const leftOnly: CompiledExpr[] = [];
  const rightOnly: CompiledExpr[] = [];
  for (const c of rest.splice(0)) {
    const l = tryCompile(c, leftScope);
    const r = tryCompile(c, rightScope);
    if (pushLeft && l !== null && r === null) leftOnly.push(l);
    else if (pushRight && r !== null && l === null) rightOnly.push(r);
    else rest.push(c);
  }
  left = filtered(left, leftOnly);
  right = filtered(right, rightOnly);
  if (leftKeys.length === 0) {
    throw new PlanningError(
      `the join condition ${
        exprText(ref.on)
      } has no equality between a column of each input; a streaming join needs at least one (an equi-join key)${at}`,
    );
  }
  const joinType = JOIN_TYPES[ref.kind];
  const filter = rest.length === 0 ? null : condition(
    rest.reduce((a, b) => ({ k: "binary", op: "AND", left: a, right: b })),
    both,
    "ON",
    context,
  );
  const parts: JoinParts = {
    joinType,
    left: left.node,
    right: right.node,
    leftKeys,
    rightKeys,
    filter,
    conditionText: exprText(ref.on),
    columns,
  };
  const windowed = windowJoin(left, right, parts, context);
  if (windowed !== null) {
    return { node: windowed, qualifiers, window: { ...windowed.leftWindow, tvf: null } };
  }
  const appendOnly = !isUpdating(left.node.mode) && !isUpdating(right.node.mode);
  if (appendOnly) {
    const timed = scope(
      [...left.node.columns, ...right.node.columns],
      qualifiers,
      "the join's inputs",
    );
    const interval = intervalBounds(rest, nl, timed);
    if (interval !== null) {
      const node: IntervalJoinNode = {
        op: "IntervalJoin",
        ...parts,
        filter: interval.rest.length === 0 ? null : condition(
          interval.rest.reduce((a, b) => ({ k: "binary", op: "AND", left: a, right: b })),
          both,
          "ON",
          context,
        ),
        leftTime: interval.leftTime,
        rightTime: interval.rightTime - nl,
        lower: interval.lower,
        upper: interval.upper,
        mode: "append",
      };
      return { node, qualifiers, window: null };
    }
  }
  const node: JoinNode = {
    op: "Join",
    ...parts,
    mode: joinType === "InnerJoin" && appendOnly ? "append" : "retract",
  };
  return { node, qualifiers, window: null };
}

/** `relation` behind a Calc keeping its rows where every one of `filters` is TRUE (columns unchanged). */
function filtered(relation: Relation, filters: readonly CompiledExpr[]): Relation {
  if (filters.length === 0) return relation;
  const input = relation.node;
  const filter: CompiledExpr = filters.length === 1 ? filters[0]! : {
    evaluate: (f) => filters.every((x) => x.evaluate(f) === true),
    type: filters[0]!.type,
    text: filters.map((x) => x.text).join(" AND "),
  };
  const node: CalcNode = {
    op: "Calc",
    input,
    projections: input.columns.map((c, i) => ({
      evaluate: (f) => f[i] ?? null,
      type: c.type,
      text: c.name,
    })),
    filter,
    columns: input.columns,
    mode: input.mode,
  };
  return { ...relation, node };
}

/** The WindowJoin of `parts`, when both inputs are windowed and the keys pair their window columns. */
function windowJoin(
  left: Relation,
  right: Relation,
  parts: JoinParts,
  context: PlannerContext,
): WindowJoinNode | null {
  const lw = left.window;
  const rw = right.window;
  if (lw === null || rw === null) return null;
  const pairs = parts.leftKeys.map((k, i) => [columnSource(k), columnSource(parts.rightKeys[i]!)]);
  const isPair = (l: number, r: number) => pairs.some(([a, b]) => a === l && b === r);
  if (!isPair(lw.start, rw.start) || !isPair(lw.end, rw.end)) return null;
  const same = lw.spec.fn === rw.spec.fn && lw.spec.size === rw.spec.size &&
    lw.spec.slide === rw.spec.slide;
  if (!same || lw.spec.fn === "SESSION") {
    throw new PlanningError(
      `a window join needs the same TUMBLE, HOP or CUMULATE window on both inputs; got ${lw.spec.fn} and ${rw.spec.fn}${
        context.locate("JOIN")
      }`,
    );
  }
  const keep = parts.leftKeys.map((k, i) => {
    const l = columnSource(k);
    const r = columnSource(parts.rightKeys[i]!);
    return !((l === lw.start && r === rw.start) || (l === lw.end && r === rw.end));
  });
  const rightLw = rw;
  return {
    op: "WindowJoin",
    ...parts,
    leftKeys: parts.leftKeys.filter((_, i) => keep[i]),
    rightKeys: parts.rightKeys.filter((_, i) => keep[i]),
    leftWindow: lw,
    rightWindow: rightLw,
    mode: "append",
  };
}

/** A side of a time comparison: a rowtime column of the joined row plus an offset, ms. */
interface TimeTerm {
  readonly index: number;
  readonly offset: number;
}

function timeTerm(e: Expr, scope: Scope): TimeTerm | null {
  if (e.k === "binary" && (e.op === "+" || e.op === "-") && e.right.k === "interval") {
    const inner = timeTerm(e.left, scope);
    if (inner === null) return null;
    return { index: inner.index, offset: inner.offset + (e.op === "+" ? 1 : -1) * e.right.millis };
  }
  if (e.k !== "column") return null;
  const compiled = tryCompile(e, scope);
  if (compiled === null || compiled.type.timeAttribute !== "rowtime") return null;
  const index = columnSource(compiled);
  return index === null ? null : { index, offset: 0 };
}

/**
 * The bounds on `l.rt - r.rt` that `rest` sets with rowtime columns of
 * each side, or `null` when it does not bound both ways. The conjuncts
 * used are taken out of `rest` in the result.
 */
function intervalBounds(
  rest: readonly Expr[],
  nl: number,
  scope: Scope,
): { leftTime: number; rightTime: number; lower: number; upper: number; rest: Expr[] } | null {
  let leftTime: number | null = null;
  let rightTime: number | null = null;
  let lower = -Infinity;
  let upper = Infinity;
  const left: Expr[] = [];
  for (const c of rest) {
    const ops: Record<string, string> = { ">=": "<=", ">": "<", "<=": ">=", "<": ">" };
    if (c.k !== "binary" || ops[c.op] === undefined) {
      left.push(c);
      continue;
    }
    const a = timeTerm(c.left, scope);
    const b = timeTerm(c.right, scope);
    if (a === null || b === null || (a.index < nl) === (b.index < nl)) {
      left.push(c);
      continue;
    }
    // Normalize to  L + lo  op  R + ro,  i.e.  L - R  op  ro - lo.
    const [l, r, op] = a.index < nl ? [a, b, c.op] : [b, a, ops[c.op]!];
    if (
      (leftTime !== null && leftTime !== l.index) || (rightTime !== null && rightTime !== r.index)
    ) {
      left.push(c);
      continue;
    }
    leftTime = l.index;
    rightTime = r.index;
    const bound = r.offset - l.offset;
    if (op === ">=") lower = Math.max(lower, bound);
    else if (op === ">") lower = Math.max(lower, bound + 1);
    else if (op === "<=") upper = Math.min(upper, bound);
    else upper = Math.min(upper, bound - 1);
  }
  if (
    leftTime === null || rightTime === null || !Number.isFinite(lower) || !Number.isFinite(upper)
  ) {
    return null;
  }
  return { leftTime, rightTime, lower, upper, rest: left };
}
