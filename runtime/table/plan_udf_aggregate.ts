/**
 * Planning of user-defined aggregate function calls in a grouped SELECT
 * (hooks of `plan.ts`): finds the calls whose name resolves to an
 * aggregate function of the planning call's function catalog, and plans
 * each as an `AggregateCall` of the GroupAggregate, after the built-in
 * aggregates (the output columns are matched by text, so their order does
 * not matter).
 *
 * User-defined aggregates run in non-windowed GROUP BY (GroupAggregate,
 * with retraction when the function has `retract`) and in window
 * aggregation (`plan_window.ts` recompiles their arguments over the
 * window's input); SESSION windows merge accumulators, so there a function
 * needs `merge`. In an OVER window (`plan_over.ts`) a bounded frame drops
 * the rows that leave it with `retract`.
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import { compileExpr, type Scope } from "./expressions.ts";
import { collectSelectCalls } from "./plan_aggregate_calls.ts";
import { currentFunctionCatalog } from "./function_catalog.ts";
import type { AggregateCall, PlannerContext } from "./plan.ts";
import type { ChangelogMode } from "./changelog_mode.ts";
import type { Expr, SelectQuery } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";
import { planUserDefinedAggregate } from "./udf_aggregate.ts";

/** A call of a user-defined aggregate in the query. */
export type UserAggregateExpr = Extract<Expr, { k: "call" }>;

/**
 * Every call of a user-defined aggregate function in the SELECT list and
 * HAVING, once each by text, in order.
 */
export function collectUserAggregates(query: SelectQuery): UserAggregateExpr[] {
  const catalog = currentFunctionCatalog();
  return collectSelectCalls(
    query,
    (e): e is UserAggregateExpr => e.k === "call" && catalog.isAggregate(e.name),
  );
}

/**
 * Plans the user-defined aggregate calls of a GroupAggregate.
 * @param inputMode the changelog mode of the aggregation's input.
 * @throws {PlanningError} for arguments that do not fit or updating input
 *   without `retract`, naming the function and where.
 */
export function planUserAggregates(
  calls: readonly UserAggregateExpr[],
  scope: Scope,
  inputMode: ChangelogMode,
  context: PlannerContext,
): AggregateCall[] {
  const catalog = currentFunctionCatalog();
  return calls.map((call) => {
    const where = context.locate(call.name);
    const found = catalog.lookup(call.name);
    if (found?.kind !== "aggregate") {
      throw new PlanningError(`${call.name} is not an aggregate function${where}`);
    }
    const args = call.args.map((a) => compileExpr(a, scope));
    const planned = planUserDefinedAggregate(found.name, found.definition, args, inputMode, where);
    return { spec: planned.spec, arg: planned.arg, text: exprText(call) };
  });
}

/**
 * Checks user-defined aggregates of a window aggregation: merging windows
 * (SESSION) merge accumulators, so each function needs `merge`.
 * @param windowFn the window's TVF (`TUMBLE`, `HOP`, `CUMULATE`, `SESSION`).
 * @throws {PlanningError} naming the first function without `merge` under SESSION, and where.
 */
export function checkUserAggregatesInWindow(
  calls: readonly UserAggregateExpr[],
  windowFn: string,
  context: PlannerContext,
): void {
  if (windowFn !== "SESSION") return;
  const catalog = currentFunctionCatalog();
  for (const call of calls) {
    const found = catalog.lookup(call.name);
    if (found?.kind === "aggregate" && found.definition.merge === undefined) {
      throw new PlanningError(
        `the aggregate function ${found.name} has no merge method, which SESSION windows need to merge their accumulators${
          context.locate(call.name)
        }`,
      );
    }
  }
}

/**
 * Plans `f(args) OVER (...)` of a user-defined aggregate function.
 * @param boundedFrame the frame has `n PRECEDING` (rows leave it: `retract` is needed).
 * @returns the call, or `undefined` when `fn` is not a user-defined aggregate.
 * @throws {PlanningError} for arguments that do not fit, or a bounded frame without `retract`.
 */
export function planUserOverAggregate(
  fn: string,
  args: readonly Expr[],
  scope: Scope,
  boundedFrame: boolean,
  context: PlannerContext,
): AggregateCall | undefined {
  const found = currentFunctionCatalog().lookup(fn);
  if (found?.kind !== "aggregate") return undefined;
  if (boundedFrame && found.definition.retract === undefined) {
    throw new PlanningError(
      `the aggregate function ${found.name} has no retract method, which an OVER window with a bounded frame (n PRECEDING) needs to drop the rows leaving it${
        context.locate(fn)
      }`,
    );
  }
  const call: UserAggregateExpr = { k: "call", name: fn, args };
  // The OVER operator over an updating input recomputes its frames: no retract needed there.
  return planUserAggregates([call], scope, "append", context)[0];
}
