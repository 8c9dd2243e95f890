/**
 * Planning of window table-valued functions and window aggregation
 * (Flink's `StreamPhysicalWindowTableFunction` and
 * `StreamPhysicalWindowAggregate`).
 *
 * - `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))`,
 *   `HOP(..., slide, size)`, `CUMULATE(..., step, size)` and
 *   `SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)` read a relation
 *   whose `ts` is a rowtime attribute and add `window_start`,
 *   `window_end` (`TIMESTAMP(3)`) and `window_time` (`TIMESTAMP(3)
 *   *ROWTIME*`, the window's end minus 1 ms) to every row: a
 *   {@linkcode WindowTableFunctionNode}, one row per window the row falls in.
 * - A GROUP BY over such a relation that names both `window_start` and
 *   `window_end` becomes a {@linkcode WindowAggregateNode}: the TVF is
 *   folded into the aggregate (as Flink's planner does), which assigns
 *   windows itself, keeps one accumulator per key and window, and appends
 *   one `+I` row per key and window when the watermark passes the
 *   window's end. Rows later than that are dropped and counted
 *   (`numLateRecordsDropped`). SESSION windows merge (the runtime's
 *   merging window set).
 *
 * ## Restrictions (each refused with a message)
 *
 * - The time column must be a rowtime attribute, and the input append-only.
 * - SESSION needs an aggregation (Flink 1.19 neither emits session TVF rows
 *   without one); its PARTITION BY columns must be GROUP BY keys.
 * - A WHERE between the TVF and the aggregation may not read the window
 *   columns (it runs before windows are assigned).
 *
 * @module
 */

import { type ChangelogMode, isUpdating, PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr } from "./expressions.ts";
import { planUserAggregates, type UserAggregateExpr } from "./plan_udf_aggregate.ts";
import type { AggregateCall, CalcNode, PlannerContext, PlanNode, Relation } from "./plan.ts";
import type { Expr, TableRef } from "./sql_ast.ts";
import { type Column, TYPES } from "./types.ts";

/** A window of a window TVF (Flink's `WindowingStrategy` of a `TimeAttributeWindowingStrategy`). */
export interface WindowSpec {
  /** The window function. */
  readonly fn: "TUMBLE" | "HOP" | "CUMULATE" | "SESSION";
  /** The time column's name (for explain). */
  readonly timeColumn: string;
  /** The time column's position in the TVF's input. */
  readonly timeIndex: number;
  /** Window size (TUMBLE, HOP), max size (CUMULATE) or gap (SESSION), ms. */
  readonly size: number;
  /** HOP's slide or CUMULATE's step, ms (`null` for TUMBLE and SESSION). */
  readonly slide: number | null;
  /** SESSION's PARTITION BY columns, as positions in the TVF's input. */
  readonly partitionBy: readonly number[];
}

/** The rows of a window TVF with their window columns (Flink's `WindowTableFunction`). */
export interface WindowTableFunctionNode {
  /** The node kind. */
  readonly op: "WindowTableFunction";
  /** The rows windowed. */
  readonly input: PlanNode;
  /** The window. */
  readonly window: WindowSpec;
  /** The input's columns, then `window_start`, `window_end`, `window_time`. */
  readonly columns: readonly Column[];
  /** The input's mode (append). */
  readonly mode: ChangelogMode;
}

/** Where the window columns of a relation are (see `Relation.window`). */
export interface WindowProperties {
  /** The window they describe. */
  readonly spec: WindowSpec;
  /** `window_start`'s position. */
  readonly start: number;
  /** `window_end`'s position. */
  readonly end: number;
  /** `window_time`'s position, or `null` when it was not kept. */
  readonly time: number | null;
  /** The TVF whose output the relation is (a WindowAggregate folds it in), or `null` after an aggregation. */
  readonly tvf: WindowTableFunctionNode | null;
}

/** What a window aggregate's key is: a window column, or a key expression over the input rows. */
export type WindowKeySlot = "window_start" | "window_end" | "window_time" | number;

/**
 * A GROUP BY over a window TVF, or over rows that already carry window
 * columns (Flink's `WindowAggregate`, with a time-attribute or a
 * window-attached windowing strategy); append-only.
 */
export interface WindowAggregateNode {
  /** The node kind. */
  readonly op: "WindowAggregate";
  /** The TVF's input (through the WHERE, when there is one), or the windowed rows. */
  readonly input: PlanNode;
  /** The window assigned to the input's rows. */
  readonly window: WindowSpec;
  /**
   * `null`: windows are assigned from the rows' time column. Else the rows
   * carry their window (e.g. a window aggregation's output): its
   * `window_start` and `window_end` positions in them.
   */
  readonly attached: { readonly start: number; readonly end: number } | null;
  /** The GROUP BY keys that are not window columns, over the input's rows. */
  readonly groupKeys: readonly CompiledExpr[];
  /** Per GROUP BY item (the first output columns): a window column or an index into `groupKeys`. */
  readonly keySlots: readonly WindowKeySlot[];
  /** The aggregates, with arguments over the input's rows. */
  readonly aggregates: readonly AggregateCall[];
  /** The output columns: the GROUP BY items, then the aggregates. */
  readonly columns: readonly Column[];
  /** Always `append`. */
  readonly mode: ChangelogMode;
}

const WINDOW_COLUMNS = ["window_start", "window_end", "window_time"] as const;

/**
 * Plans a window TVF over its planned input.
 * @throws {PlanningError} for a time column that is no rowtime attribute,
 *   an updating input, bad intervals or unknown PARTITION BY columns.
 */
export function planWindowTvf(
  ref: Extract<TableRef, { k: "windowTvf" }>,
  context: PlannerContext,
  input: Relation,
): Relation {
  const at = context.locate(ref.fn);
  const columns = input.node.columns;
  const timeIndex = columns.findIndex((c) => c.name === ref.timeColumn);
  if (timeIndex === -1) {
    throw new PlanningError(
      `${ref.fn}: DESCRIPTOR(${ref.timeColumn}) names no column of its input (columns: ${
        columns.map((c) => c.name).join(", ")
      })${at}`,
    );
  }
  if (columns[timeIndex]!.type.timeAttribute !== "rowtime") {
    throw new PlanningError(
      `${ref.fn}: the time column ${ref.timeColumn} must be a rowtime attribute (declare WATERMARK FOR ${ref.timeColumn} on its table); it is ${
        columns[timeIndex]!.type.name
      }${at}`,
    );
  }
  if (isUpdating(input.node.mode)) {
    throw new PlanningError(
      `${ref.fn} over an updating input is not supported (window TVFs need append-only rows)${at}`,
    );
  }
  const wanted = ref.fn === "TUMBLE" || ref.fn === "SESSION" ? 1 : 2;
  if (ref.intervals.length !== wanted) {
    throw new PlanningError(
      `${ref.fn} takes ${wanted} interval(s), got ${ref.intervals.length}${at}`,
    );
  }
  for (const ms of ref.intervals) {
    if (!Number.isSafeInteger(ms) || ms <= 0) {
      throw new PlanningError(
        `${ref.fn} needs positive intervals of whole milliseconds: current value is ${ms}${at}`,
      );
    }
  }
  const size = wanted === 1 ? ref.intervals[0]! : ref.intervals[1]!;
  const slide = wanted === 1 ? null : ref.intervals[0]!;
  if (ref.fn === "CUMULATE" && size % slide! !== 0) {
    throw new PlanningError(
      `CUMULATE needs a max size that is a multiple of its step: step ${slide} ms, size ${size} ms${at}`,
    );
  }
  if (ref.fn !== "SESSION" && ref.partitionBy.length > 0) {
    throw new PlanningError(`${ref.fn} takes no PARTITION BY${at}`);
  }
  const partitionBy = ref.partitionBy.map((name) => {
    const i = columns.findIndex((c) => c.name === name);
    if (i === -1) {
      throw new PlanningError(
        `SESSION: PARTITION BY ${name} names no column of its input${context.locate(name)}`,
      );
    }
    return i;
  });
  for (const name of WINDOW_COLUMNS) {
    if (columns.some((c) => c.name === name)) {
      throw new PlanningError(
        `${ref.fn}: its input already has a column ${name} (rename it in a subquery)${at}`,
      );
    }
  }
  const window: WindowSpec = {
    fn: ref.fn,
    timeColumn: ref.timeColumn,
    timeIndex,
    size,
    slide,
    partitionBy,
  };
  const plainTime = { family: "TIMESTAMP", name: "TIMESTAMP(3)" } as const;
  const node: WindowTableFunctionNode = {
    op: "WindowTableFunction",
    input: input.node,
    window,
    columns: [
      ...columns,
      { name: "window_start", type: plainTime },
      { name: "window_end", type: plainTime },
      { name: "window_time", type: { ...TYPES.TIMESTAMP, timeAttribute: "rowtime" } },
    ],
    mode: input.node.mode,
  };
  const q = ref.alias === null ? [] : [ref.alias];
  const n = columns.length;
  return {
    node,
    qualifiers: [...input.qualifiers.map((qs) => [...q, ...qs]), q, q, q],
    window: { spec: window, start: n, end: n + 1, time: n + 2, tvf: node },
  };
}

/** What {@linkcode planWindowAggregate} needs from the SELECT being planned. */
export interface WindowAggregateRequest {
  /** The FROM relation: a window TVF's output (`window.tvf` set). */
  readonly relation: Relation;
  /** The WHERE condition as written, or `null`. */
  readonly whereExpr: Expr | null;
  /** The WHERE compiled over the TVF's output (checked for its type), or `null`. */
  readonly where: CompiledExpr | null;
  /** The GROUP BY expressions as written. */
  readonly groupBy: readonly Expr[];
  /** The GROUP BY keys compiled over the TVF's output. */
  readonly keys: readonly CompiledExpr[];
  /** Per key, the TVF output column it reads, or `-1`. */
  readonly keySources: readonly number[];
  /**
   * The aggregate calls as written (arguments are recompiled over the
   * input): built-in aggregates, then calls of user-defined aggregate functions.
   */
  readonly aggregates: readonly (Extract<Expr, { k: "aggregate" }> | UserAggregateExpr)[];
  /** The aggregate calls compiled over the TVF's output. */
  readonly calls: readonly AggregateCall[];
  /** The output columns (keys then aggregates). */
  readonly columns: readonly Column[];
  /** The catalog and positions. */
  readonly context: PlannerContext;
}

/**
 * Plans a GROUP BY window_start, window_end[, keys] over a window TVF.
 * @returns the WindowAggregate and where its output keeps the window columns.
 * @throws {PlanningError} when a key or argument reads a window column in
 *   an expression, a SESSION partition column is not grouped, or WHERE
 *   reads a window column.
 */
export function planWindowAggregate(
  request: WindowAggregateRequest,
): { node: WindowAggregateNode; window: WindowProperties } {
  const { relation, context } = request;
  const props = relation.window!;
  const tvf = props.tvf;
  if (tvf === null) return planAttachedWindowAggregate(request, props);
  const inputColumns = tvf.input.columns;
  const n = inputColumns.length;
  const inputScope = {
    columns: inputColumns,
    qualifiers: relation.qualifiers.slice(0, n),
    inputName: `the rows before ${tvf.window.fn} (window columns are not set yet)`,
    locate: context.locate,
    aggregatesAllowed: false,
  };
  let input: PlanNode = tvf.input;
  if (request.whereExpr !== null) {
    const filter = compileExpr(request.whereExpr, inputScope);
    const calc: CalcNode = {
      op: "Calc",
      input,
      projections: inputColumns.map((c, i) => ({
        evaluate: (f) => f[i] ?? null,
        type: c.type,
        text: c.name,
      })),
      filter,
      columns: inputColumns,
      mode: input.mode,
    };
    input = calc;
  }
  const groupKeys: CompiledExpr[] = [];
  const keySlots: WindowKeySlot[] = request.keys.map((_, i) => {
    const source = request.keySources[i]!;
    if (source >= n) return WINDOW_COLUMNS[source - n]!;
    groupKeys.push(compileExpr(request.groupBy[i]!, inputScope));
    return groupKeys.length - 1;
  });
  for (const p of tvf.window.partitionBy) {
    if (
      !groupKeys.some((k) =>
        k.text === inputColumns[p]!.name || k.text.endsWith(`.${inputColumns[p]!.name}`)
      )
    ) {
      throw new PlanningError(
        `SESSION ... PARTITION BY ${inputColumns[p]!.name} needs ${
          inputColumns[p]!.name
        } among the GROUP BY keys${context.locate("SESSION")}`,
      );
    }
  }
  const aggregates: AggregateCall[] = request.calls.map((call, i) => {
    const written = request.aggregates[i]!;
    if (written.k === "call") {
      return planUserAggregates([written], inputScope, input.mode, context)[0]!;
    }
    return {
      ...call,
      arg: written.arg === null ? null : compileExpr(written.arg, inputScope),
    };
  });
  const node: WindowAggregateNode = {
    op: "WindowAggregate",
    input,
    window: tvf.window,
    attached: null,
    groupKeys,
    keySlots,
    aggregates,
    columns: request.columns,
    mode: "append",
  };
  return { node, window: outputWindow(tvf.window, keySlots) };
}

/** Where a window aggregate's output keeps its window columns. */
function outputWindow(spec: WindowSpec, keySlots: readonly WindowKeySlot[]): WindowProperties {
  const at = (slot: WindowKeySlot): number | null => {
    const i = keySlots.indexOf(slot);
    return i === -1 ? null : i;
  };
  return {
    spec,
    start: at("window_start")!,
    end: at("window_end")!,
    time: at("window_time"),
    tvf: null,
  };
}

/**
 * A GROUP BY over rows that carry their window columns (a window
 * aggregation's output, through projections): Flink's window-attached
 * WindowAggregate (Nexmark q5's second aggregation). Keys and arguments
 * read the rows as they are.
 */
function planAttachedWindowAggregate(
  request: WindowAggregateRequest,
  props: WindowProperties,
): { node: WindowAggregateNode; window: WindowProperties } {
  const { relation } = request;
  let input: PlanNode = relation.node;
  if (request.where !== null) {
    const calc: CalcNode = {
      op: "Calc",
      input,
      projections: input.columns.map((c, i) => ({
        evaluate: (f) => f[i] ?? null,
        type: c.type,
        text: c.name,
      })),
      filter: request.where,
      columns: input.columns,
      mode: input.mode,
    };
    input = calc;
  }
  const groupKeys: CompiledExpr[] = [];
  const keySlots: WindowKeySlot[] = request.keys.map((key, i) => {
    const source = request.keySources[i]!;
    if (source === props.start) return "window_start";
    if (source === props.end) return "window_end";
    if (props.time !== null && source === props.time) return "window_time";
    groupKeys.push(key);
    return groupKeys.length - 1;
  });
  const node: WindowAggregateNode = {
    op: "WindowAggregate",
    input,
    window: props.spec,
    attached: { start: props.start, end: props.end },
    groupKeys,
    keySlots,
    aggregates: request.calls,
    columns: request.columns,
    mode: "append",
  };
  return { node, window: outputWindow(props.spec, keySlots) };
}

/**
 * A window carried by rows, as Flink prints a window-attached strategy:
 * `HOP(win_start=[starttime], win_end=[endtime], size=[10 s], slide=[2 s])`.
 */
export function attachedWindowText(
  spec: WindowSpec,
  columns: readonly Column[],
  start: number,
  end: number,
): string {
  const rest = windowText(spec, []).replace(/^\w+\(time_col=\[[^\]]*\], /, "");
  return `${spec.fn}(win_start=[${columns[start]!.name}], win_end=[${columns[end]!.name}], ${rest}`;
}

/** A duration as Flink's plans print it: `1 h`, `10 min`, `5 s`, `100 ms`. */
export function durationText(ms: number): string {
  const units: [number, string][] = [[86_400_000, "d"], [3_600_000, "h"], [60_000, "min"], [
    1_000,
    "s",
  ]];
  for (const [unit, name] of units) if (ms % unit === 0) return `${ms / unit} ${name}`;
  return `${ms} ms`;
}

/** A window as Flink prints it: `TUMBLE(time_col=[ts], size=[1 h])`. */
export function windowText(w: WindowSpec, inputColumns: readonly Column[]): string {
  const time = `time_col=[${w.timeColumn}]`;
  switch (w.fn) {
    case "TUMBLE":
      return `TUMBLE(${time}, size=[${durationText(w.size)}])`;
    case "HOP":
      return `HOP(${time}, size=[${durationText(w.size)}], slide=[${durationText(w.slide!)}])`;
    case "CUMULATE":
      return `CUMULATE(${time}, max_size=[${durationText(w.size)}], step=[${
        durationText(w.slide!)
      }])`;
    case "SESSION":
      return `SESSION(${time}, gap=[${durationText(w.size)}]${
        w.partitionBy.length === 0
          ? ""
          : `, partition keys=[${w.partitionBy.map((i) => inputColumns[i]!.name).join(", ")}]`
      })`;
  }
}
