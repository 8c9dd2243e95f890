/**
 * User-defined functions written in TypeScript: Flink's `ScalarFunction`,
 * `TableFunction` and `AggregateFunction`, as plain definitions made by
 * {@linkcode scalarFunction}, {@linkcode tableFunction} and
 * {@linkcode aggregateFunction} and registered on a table environment with
 * `createTemporarySystemFunction(name, fn)` or `createTemporaryFunction`.
 *
 * ```ts ignore
 * tEnv.createTemporarySystemFunction("HASH_CODE", scalarFunction({
 *   arguments: ["STRING"],
 *   result: "BIGINT",
 *   eval: (s) => s === null ? null : [...String(s)].reduce((h, c) => (h * 31 + c.codePointAt(0)!) | 0, 0),
 * }));
 * await tEnv.executeSql("SELECT HASH_CODE(url) FROM clicks");
 * ```
 *
 * ## Types
 *
 * A definition declares its argument types (`arguments`, SQL type names
 * of `types.ts`: `STRING`, `BIGINT`, `DOUBLE`, `BOOLEAN`, `TIMESTAMP(3)`...)
 * and its result type (`result`, a name), or infers the result from the
 * argument types (`result` as a callback: Flink's `getTypeInference`).
 * Calls are checked at planning time: an argument fits a declared type of
 * its family, and a BIGINT fits a DOUBLE. Without `arguments`, any
 * arguments are taken and the callback (or nothing) checks them. A value
 * `eval` returns that does not fit the result type fails the job, naming
 * the function and the value.
 *
 * ## Calls
 *
 * - `eval` gets the arguments' values, NULL as `null` (Flink passes NULL
 *   to boxed parameters); it returns NULL as `null`.
 * - A table function's `eval` yields rows (arrays of the declared
 *   `columns`' values): zero, one or many per input row (`LATERAL
 *   TABLE(f(x)) AS T(a, b)`).
 * - An aggregate function's `accumulate(acc, ...args)` changes `acc` in
 *   place; `retract` undoes an accumulate (needed when its input carries
 *   updates or deletes: a query that would need it is refused at planning
 *   time when it is missing); `merge` folds other accumulators in;
 *   `getValue` reads the result.
 *
 * ## Determinism and state
 *
 * Functions must be deterministic: a restored job replays its input and
 * must compute the same results (exactly-once). An aggregate function's
 * accumulator is kept in keyed state and checkpointed with the runtime's
 * MessagePack codec, so it must be plain data: objects, arrays, strings,
 * finite numbers, booleans and `null`. No class instances, `Map`, `Set`,
 * `Date`, `undefined` or functions (the first accumulator is checked, and
 * a violation fails the job naming the function). The GROUP BY operator
 * copies an accumulator ({@linkcode copyPlainData}) before changing it, so
 * a snapshot never sees a half-applied row: keep accumulators small.
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import type { ChangelogMode } from "./changelog_mode.ts";
import type { SqlValue } from "./row.ts";
import type { ScalarFunction } from "./scalar_function.ts";
import { type Column, type DataType, dataTypeOf, SUPPORTED_TYPES, valueFits } from "./types.ts";

/**
 * The result type of a function: a SQL type name, or a callback that
 * infers it from the argument types (Flink's `TypeInference`): it returns
 * the type (a name or a `DataType`), or a message saying what is wrong
 * with the arguments.
 */
export type ResultTypeSpec =
  | string
  | ((argumentTypes: readonly DataType[]) => DataType | string | { readonly error: string });

/** A user-defined scalar function (Flink's `ScalarFunction`): one value per call. */
export interface ScalarFunctionDefinition {
  /** Always `"scalar"`. */
  readonly kind: "scalar";
  /** The argument types (SQL names), or `undefined` for any arguments. */
  readonly arguments?: readonly string[];
  /** The result type (see {@linkcode ResultTypeSpec}). */
  readonly result: ResultTypeSpec;
  /** The value for one call's arguments. */
  readonly eval: (...args: SqlValue[]) => SqlValue;
}

/** A user-defined table function (Flink's `TableFunction`): rows per call. */
export interface TableFunctionDefinition {
  /** Always `"table"`. */
  readonly kind: "table";
  /** The argument types (SQL names), or `undefined` for any arguments. */
  readonly arguments?: readonly string[];
  /** The output columns: names and SQL types (`LATERAL TABLE(f(x)) AS T(a, b)` renames them). */
  readonly columns: readonly { readonly name: string; readonly type: string }[];
  /** The rows for one call's arguments, each an array of the columns' values. */
  readonly eval: (...args: SqlValue[]) => Iterable<readonly SqlValue[]>;
}

/**
 * A user-defined aggregate function (Flink's `AggregateFunction<T, ACC>`)
 * over accumulators of type `A` (plain data; see the module docs). Its
 * methods are declared as methods, so a definition over any accumulator
 * type is a `UserDefinedFunction`.
 */
export interface AggregateFunctionDefinition<A = unknown> {
  /** Always `"aggregate"`. */
  readonly kind: "aggregate";
  /** The argument types (SQL names), or `undefined` for any arguments. */
  readonly arguments?: readonly string[];
  /** The result type (see {@linkcode ResultTypeSpec}). */
  readonly result: ResultTypeSpec;
  /** A new, empty accumulator. */
  createAccumulator(): A;
  /** Adds one row's arguments to `acc`, in place. */
  accumulate(acc: A, ...args: SqlValue[]): void;
  /** Removes one row's arguments from `acc`, in place (needed for updating input). */
  retract?(acc: A, ...args: SqlValue[]): void;
  /**
   * Folds `others` into `acc`, in place (Flink's `merge`): SESSION window
   * aggregation calls it when windows merge, and refuses a function without it.
   */
  merge?(acc: A, others: readonly A[]): void;
  /** The result for `acc`. */
  getValue(acc: A): SqlValue;
}

/** Any user-defined function. */
export type UserDefinedFunction =
  | ScalarFunctionDefinition
  | TableFunctionDefinition
  | AggregateFunctionDefinition<unknown>;

/** What {@linkcode scalarFunction} takes: a definition without its `kind`. */
export type ScalarFunctionOptions = Omit<ScalarFunctionDefinition, "kind">;
/** What {@linkcode tableFunction} takes: a definition without its `kind`. */
export type TableFunctionOptions = Omit<TableFunctionDefinition, "kind">;
/** What {@linkcode aggregateFunction} takes: a definition without its `kind`. */
export type AggregateFunctionOptions<A> = Omit<AggregateFunctionDefinition<A>, "kind">;

/**
 * The type a SQL type name denotes (`VARCHAR(10)`, `TIMESTAMP(3)`, `INT`).
 * @throws {PlanningError} for a type this slice does not hold, naming `what`.
 */
export function typeNamed(name: string, what: string): DataType {
  const base = /^\s*(\w+)/.exec(name)?.[1] ?? "";
  const type = dataTypeOf(base, name.trim());
  if (type === undefined) {
    throw new PlanningError(
      `${what} has type ${
        JSON.stringify(name)
      }, which is not supported (supported: ${SUPPORTED_TYPES})`,
    );
  }
  return type;
}

function checkArguments(spec: readonly string[] | undefined, what: string): void {
  spec?.forEach((t, i) => typeNamed(t, `argument ${i + 1} of ${what}`));
}

function checkResult(result: ResultTypeSpec, what: string): void {
  if (typeof result === "string") typeNamed(result, `the result of ${what}`);
  else if (typeof result !== "function") {
    throw new PlanningError(`${what} needs a result: a SQL type name or a type inference callback`);
  }
}

/**
 * A scalar function definition (Flink's `ScalarFunction`).
 * @throws {PlanningError} for an argument or result type that is not supported, or no `eval`.
 */
export function scalarFunction(options: ScalarFunctionOptions): ScalarFunctionDefinition {
  if (typeof options.eval !== "function") {
    throw new PlanningError("a scalar function needs an eval function");
  }
  checkArguments(options.arguments, "the scalar function");
  checkResult(options.result, "the scalar function");
  return Object.freeze({ kind: "scalar", ...options });
}

/**
 * A table function definition (Flink's `TableFunction`).
 * @throws {PlanningError} for no columns, a repeated column, an
 *   unsupported type, or no `eval`.
 */
export function tableFunction(options: TableFunctionOptions): TableFunctionDefinition {
  if (typeof options.eval !== "function") {
    throw new PlanningError("a table function needs an eval function (a generator of rows)");
  }
  checkArguments(options.arguments, "the table function");
  if (options.columns.length === 0) throw new PlanningError("a table function needs columns");
  const seen = new Set<string>();
  for (const c of options.columns) {
    if (seen.has(c.name)) {
      throw new PlanningError(`the table function names column ${c.name} twice`);
    }
    seen.add(c.name);
    typeNamed(c.type, `column ${c.name} of the table function`);
  }
  return Object.freeze({ kind: "table", ...options });
}

/**
 * An aggregate function definition (Flink's `AggregateFunction`).
 * @throws {PlanningError} for an unsupported type or a missing
 *   `createAccumulator`, `accumulate` or `getValue`.
 */
export function aggregateFunction<A>(
  options: AggregateFunctionOptions<A>,
): AggregateFunctionDefinition<A> {
  for (const method of ["createAccumulator", "accumulate", "getValue"] as const) {
    if (typeof options[method] !== "function") {
      throw new PlanningError(`an aggregate function needs ${method}`);
    }
  }
  checkArguments(options.arguments, "the aggregate function");
  checkResult(options.result, "the aggregate function");
  return Object.freeze({ kind: "aggregate", ...options });
}

/**
 * Checks a call's argument types against a definition's declared ones.
 * @returns `null`, or a message naming the function and the argument's position.
 */
export function checkCallArguments(
  name: string,
  declared: readonly string[] | undefined,
  types: readonly DataType[],
): string | null {
  if (declared === undefined) return null;
  if (declared.length !== types.length) {
    return `${name} takes ${declared.length} argument(s) (${
      declared.join(", ")
    }), got ${types.length}`;
  }
  for (let i = 0; i < types.length; i++) {
    const want = typeNamed(declared[i]!, `argument ${i + 1} of ${name}`);
    const got = types[i]!;
    const fits = got.family === want.family ||
      (want.family === "DOUBLE" && got.family === "BIGINT");
    if (!fits) return `argument ${i + 1} of ${name} is ${got.name}, expected ${want.name}`;
  }
  return null;
}

/**
 * The result type of a call.
 * @returns the type, or a message naming the function.
 */
export function inferResultType(
  name: string,
  result: ResultTypeSpec,
  types: readonly DataType[],
): DataType | string {
  if (typeof result === "string") return typeNamed(result, `the result of ${name}`);
  let inferred;
  try {
    inferred = result(types);
  } catch (error) {
    return `the type inference of ${name} failed: ${
      error instanceof Error ? error.message : String(error)
    }`;
  }
  if (typeof inferred === "string") {
    const type = dataTypeOf(/^\s*(\w+)/.exec(inferred)?.[1] ?? "", inferred.trim());
    return type ?? `${name}: ${inferred}`;
  }
  if ("error" in inferred) return `${name}: ${inferred.error}`;
  return inferred;
}

function checkValue(name: string, value: SqlValue, type: DataType): SqlValue {
  if (value === undefined || !valueFits(value, type)) {
    throw new TypeError(
      `the user-defined function ${name} returned ${
        value === undefined ? "undefined" : JSON.stringify(value)
      }, which is not a ${type.name}`,
    );
  }
  return value;
}

/** A registered scalar UDF as the expression compiler calls it. */
export function scalarAdapter(name: string, definition: ScalarFunctionDefinition): ScalarFunction {
  let resultType: DataType | undefined;
  return {
    resultType(types) {
      const type = checkCallArguments(name, definition.arguments, types) ??
        inferResultType(name, definition.result, types);
      if (typeof type !== "string") resultType = type;
      return type;
    },
    evaluate(args) {
      const value = definition.eval(...args);
      return resultType === undefined ? value : checkValue(name, value, resultType);
    },
  };
}

/** A table function call planned: its output columns and its rows per call. */
export interface TableFunctionCall {
  /** The output columns (before `AS T(a, b)` renames them). */
  readonly columns: readonly Column[];
  /**
   * The rows for one call's arguments.
   * @throws {TypeError} for a row of the wrong width or a value of the wrong type, naming the function.
   */
  readonly rows: (args: readonly SqlValue[]) => SqlValue[][];
}

/**
 * Plans a call of a table function.
 * @throws {PlanningError} when the argument types do not fit, naming the function.
 */
export function tableFunctionCall(
  name: string,
  definition: TableFunctionDefinition,
  types: readonly DataType[],
): TableFunctionCall {
  const bad = checkCallArguments(name, definition.arguments, types);
  if (bad !== null) throw new PlanningError(bad);
  const columns = definition.columns.map((c) => ({
    name: c.name,
    type: typeNamed(c.type, `column ${c.name} of ${name}`),
  }));
  return {
    columns,
    rows(args) {
      const out: SqlValue[][] = [];
      for (const row of definition.eval(...args)) {
        if (!Array.isArray(row) || row.length !== columns.length) {
          throw new TypeError(
            `the table function ${name} yielded ${
              JSON.stringify(row)
            }, not a row of ${columns.length} value(s) (${columns.map((c) => c.name).join(", ")})`,
          );
        }
        out.push(row.map((v, i) => checkValue(name, v as SqlValue, columns[i]!.type)));
      }
      return out;
    },
  };
}

/**
 * Refuses an aggregate function without `retract` over updating input
 * (Flink: "Function class ... does not implement at least one method named
 * 'retract' which is required for updating input").
 * @throws {PlanningError} naming the function and where.
 */
export function checkAggregateInput(
  name: string,
  definition: AggregateFunctionDefinition<unknown>,
  inputMode: ChangelogMode,
  where: string,
): void {
  if (inputMode !== "append" && definition.retract === undefined) {
    throw new PlanningError(
      `the aggregate function ${name} has no retract method, which its updating input (changelog mode ${inputMode}) needs${where}`,
    );
  }
}

/**
 * Whether `value` is plain data that the state codec round-trips: `null`,
 * booleans, strings, finite numbers, arrays and plain objects of them.
 * @returns `null`, or the path to the first value that is not (`.items[2]`).
 */
export function notPlainData(value: unknown, path = ""): string | null {
  if (value === null || typeof value === "boolean" || typeof value === "string") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : path || "(the value)";
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = notPlainData(value[i], `${path}[${i}]`);
      if (bad !== null) return bad;
    }
    return null;
  }
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) {
      const bad = notPlainData(v, `${path}.${k}`);
      if (bad !== null) return bad;
    }
    return null;
  }
  return path || "(the value)";
}

/**
 * A deep copy of plain data (arrays, plain objects, primitives), as an
 * accumulator must be: faster than `structuredClone` for the small objects
 * accumulators are. Anything else (a class instance, a `Map`) is copied as
 * a plain object of its own enumerable properties, as the state codec would
 * restore it.
 */
export function copyPlainData<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyPlainData(value[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    out[key] = copyPlainData((value as Record<string, unknown>)[key]);
  }
  return out as T;
}
