/**
 * A user-defined aggregate function (`udf.ts`' `AggregateFunctionDefinition`,
 * Flink's `AggregateFunction`) as the GROUP BY operator runs it: the
 * {@linkcode RetractableAggregate} that `createAggregate` gives for a
 * {@linkcode UserDefinedAggregateSpec}, and the planning of a call.
 *
 * ## Accumulators in state
 *
 * The function's accumulator is kept boxed, `[{ udf: acc }]`, so it has
 * the shape of the built-ins' accumulators (an array whose first element
 * is not an array), and the GROUP BY operator's copy-before-change
 * (`copyAccumulator`, a `slice`) gives a new array holding the same box.
 * `accumulate` and `retract` never change a box: they copy the user's
 * accumulator (`copyPlainData`), let the function change the copy, and
 * put a new box in the (already copied) array. A snapshot therefore never
 * sees a half-applied row, at the cost of one copy per row and call
 * (measured: a UDF `SUM` over `{ s }` through `decideGroupUpdate` ran at
 * 0.2-0.34 of the built-in SUM with `structuredClone`, 0.5-0.8 with
 * `copyPlainData`, in-process on a loaded 2-core machine).
 * The first accumulator a function creates is checked to be plain data
 * (`notPlainData`), since keyed state is checkpointed with MessagePack.
 *
 * ## Arguments
 *
 * The aggregate machinery passes one argument value per call. A call of
 * two or more arguments passes them packed as one array (an in-memory
 * value between the argument's evaluation and `accumulate`; never stored
 * or sent), which the adapter unpacks.
 *
 * @module
 */

import type { Accumulator, RetractableAggregate } from "./aggregates.ts";
import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import type { CompiledExpr } from "./expressions.ts";
import type { SqlValue } from "./row.ts";
import type { DataType } from "./types.ts";
import { valueFits } from "./types.ts";
import {
  type AggregateFunctionDefinition,
  checkAggregateInput,
  checkCallArguments,
  copyPlainData,
  inferResultType,
  notPlainData,
} from "./udf.ts";

/** Which user-defined aggregate a GROUP BY call runs (the `AggregateSpec` of a UDF). */
export interface UserDefinedAggregateSpec {
  /** Always `"UDF"`. */
  readonly fn: "UDF";
  /** The function's registered name, upper-case. */
  readonly name: string;
  /** The function. */
  readonly definition: AggregateFunctionDefinition<unknown>;
  /** How many arguments the call passes (0, 1, or more packed as an array). */
  readonly arity: number;
  /** The result type. */
  readonly resultType: DataType;
  /** Always `false`: DISTINCT is not supported for user-defined aggregates. */
  readonly distinct: false;
  /** Always `false`. */
  readonly integral: false;
}

/** The boxed accumulator of a user-defined aggregate (see the module docs). */
export type UserDefinedAccumulator = [{ readonly udf: unknown }];

const boxOf = (acc: Accumulator): { readonly udf: unknown } => {
  const box = (acc as unknown as UserDefinedAccumulator)[0];
  if (typeof box !== "object" || box === null || !("udf" in box)) {
    throw new TypeError(`not the accumulator of a user-defined aggregate: ${JSON.stringify(acc)}`);
  }
  return box;
};

/**
 * The retractable aggregate of a user-defined function.
 * @throws {TypeError} (from its methods) when the function creates an
 *   accumulator that is not plain data, returns a value that does not fit
 *   its result type, or is asked to retract without a `retract` method.
 */
export function userDefinedAggregate(spec: UserDefinedAggregateSpec): RetractableAggregate {
  const { definition, name, arity, resultType } = spec;
  let checked = false;
  const argsOf = (value: SqlValue): SqlValue[] =>
    arity === 0 ? [] : arity === 1 ? [value] : (value as unknown as SqlValue[]);
  const apply = (
    acc: Accumulator,
    value: SqlValue,
    method: (a: unknown, ...args: SqlValue[]) => void,
  ) => {
    const next = copyPlainData(boxOf(acc).udf);
    method.call(definition, next, ...argsOf(value));
    (acc as unknown as UserDefinedAccumulator)[0] = { udf: next };
  };
  return {
    createAccumulator() {
      const acc = definition.createAccumulator();
      if (!checked) {
        const bad = notPlainData(acc);
        if (bad !== null) {
          throw new TypeError(
            `the accumulator of the aggregate function ${name} must be plain data (objects, arrays, strings, finite numbers, booleans, null) for checkpoints; ${bad} is not`,
          );
        }
        checked = true;
      }
      return [{ udf: acc }] as unknown as Accumulator;
    },
    accumulate(acc, value) {
      apply(acc, value, definition.accumulate);
    },
    retract(acc, value) {
      if (definition.retract === undefined) {
        throw new TypeError(`the aggregate function ${name} has no retract method`);
      }
      apply(acc, value, definition.retract);
    },
    merge(acc, other) {
      if (definition.merge === undefined) {
        throw new TypeError(`the aggregate function ${name} has no merge method`);
      }
      const next = copyPlainData(boxOf(acc).udf);
      definition.merge(next, [boxOf(other).udf]);
      (acc as unknown as UserDefinedAccumulator)[0] = { udf: next };
    },
    getValue(acc) {
      const value = definition.getValue(boxOf(acc).udf);
      if (value === undefined || !valueFits(value, resultType)) {
        throw new TypeError(
          `the aggregate function ${name} returned ${
            value === undefined ? "undefined" : JSON.stringify(value)
          }, which is not a ${resultType.name}`,
        );
      }
      return value;
    },
  };
}

/** A planned call of a user-defined aggregate: its spec and its (packed) argument. */
export interface UserDefinedAggregateCall {
  /** What to run. */
  readonly spec: UserDefinedAggregateSpec;
  /** The argument: `null` without arguments, the packed arguments for two or more. */
  readonly arg: CompiledExpr | null;
}

/**
 * Plans a call of a user-defined aggregate over compiled arguments.
 * @param inputMode the aggregation input's changelog mode (updating input needs `retract`).
 * @param where where the call is, for messages.
 * @throws {PlanningError} when the arguments do not fit, the result type
 *   cannot be inferred, or the input updates and the function has no `retract`.
 */
export function planUserDefinedAggregate(
  name: string,
  definition: AggregateFunctionDefinition<unknown>,
  args: readonly CompiledExpr[],
  inputMode: ChangelogMode,
  where: string,
): UserDefinedAggregateCall {
  const types = args.map((a) => a.type);
  const type = checkCallArguments(name, definition.arguments, types) ??
    inferResultType(name, definition.result, types);
  if (typeof type === "string") throw new PlanningError(`${type}${where}`);
  checkAggregateInput(name, definition, inputMode, where);
  const spec: UserDefinedAggregateSpec = {
    fn: "UDF",
    name: name.toUpperCase(),
    definition,
    arity: args.length,
    resultType: type,
    distinct: false,
    integral: false,
  };
  if (args.length <= 1) return { spec, arg: args[0] ?? null };
  const evaluators = args.map((a) => a.evaluate);
  return {
    spec,
    arg: {
      evaluate: (f) => evaluators.map((e) => e(f)) as unknown as SqlValue,
      type,
      text: args.map((a) => a.text).join(", "),
    },
  };
}
