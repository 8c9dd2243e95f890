/**
 * The shape of a scalar function as the expression compiler calls it
 * (built-in or user-defined), and the checks its signature is made of:
 * argument counts, type families, a common type of several arguments and
 * time-unit keywords. Errors name the function and the argument's 1-based
 * position (`argument 2 of LPAD is VARCHAR, expected BIGINT`).
 *
 * Pure code.
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import { type DataType, type TypeFamily, TYPES } from "./types.ts";

/** A scalar function: checks its argument types at planning time, then evaluates per row. */
export interface ScalarFunction {
  /**
   * The result type for arguments of `types`.
   * @param types the arguments' types.
   * @param literals per argument, its value when it is a constant (a
   *   literal, or a time-unit keyword at a position of `unitArguments`),
   *   else `undefined`; absent when the caller knows none.
   * @returns the type, or a message saying what is wrong with the
   *   arguments, naming the function and the argument's position.
   */
  resultType(
    types: readonly DataType[],
    literals?: readonly (SqlValue | undefined)[],
  ): DataType | string;
  /**
   * The value for `args` (already evaluated).
   * @throws {Error} for a value the function cannot take (a negative
   *   length...), naming the function; it fails the job.
   */
  evaluate(args: readonly SqlValue[]): SqlValue;
  /**
   * Evaluates only the arguments it needs, when present (`IF`, `COALESCE`:
   * as SQL's conditional expressions, `IF(b = 0, 0, a / b)` never divides
   * by zero). `arg(i)` evaluates argument `i` (0-based) for the current row.
   */
  evaluateLazily?(arg: (i: number) => SqlValue, count: number): SqlValue;
  /**
   * The 0-based positions of arguments written as a time-unit keyword
   * (`EXTRACT(YEAR FROM ts)`, `TIMESTAMPADD(DAY, 1, ts)`, `FLOOR(ts TO
   * HOUR)`): the compiler reads a bare name there (`YEAR`) as the string
   * literal `'YEAR'` instead of a column.
   */
  readonly unitArguments?: readonly number[];
}

/** A refusal of a signature check: the message. `null`: the check passed. */
export type SignatureError = string | null;

/**
 * Checks the number of arguments.
 * @returns `null`, or `NAME takes 1 to 3 argument(s), got 4`.
 */
export function arity(
  name: string,
  types: readonly DataType[],
  min: number,
  max: number = min,
): SignatureError {
  if (types.length < min || types.length > max) {
    const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
    return `${name} takes ${want} argument(s), got ${types.length}`;
  }
  return null;
}

/**
 * Checks that the arguments from position `from` (0-based) on are of the
 * `allowed` families.
 * @returns `null`, or `argument 2 of NAME is VARCHAR, expected BIGINT`.
 */
export function families(
  name: string,
  types: readonly DataType[],
  allowed: readonly TypeFamily[],
  from: number = 0,
): SignatureError {
  for (let i = from; i < types.length; i++) {
    if (!allowed.includes(types[i]!.family)) {
      return `argument ${i + 1} of ${name} is ${types[i]!.name}, expected ${allowed.join(" or ")}`;
    }
  }
  return null;
}

/** Checks one argument's family, as {@linkcode families}. */
export function argumentOf(
  name: string,
  types: readonly DataType[],
  position: number,
  allowed: readonly TypeFamily[],
): SignatureError {
  const t = types[position];
  if (t === undefined || allowed.includes(t.family)) return null;
  return `argument ${position + 1} of ${name} is ${t.name}, expected ${allowed.join(" or ")}`;
}

/** Whether a type is BIGINT or DOUBLE. */
export const isNumeric = (t: DataType): boolean => t.family === "BIGINT" || t.family === "DOUBLE";

/**
 * The type several arguments share (IF's branches, COALESCE's arguments):
 * one family, or DOUBLE for a mix of BIGINT and DOUBLE. A NULL literal
 * fits any type (the compiler gives it a placeholder type).
 * @param from the first argument position (0-based) that takes part.
 * @param literals the arguments' constant values, as `resultType` gets them.
 * @returns the type, or a message naming the first argument that does not fit.
 */
export function commonType(
  name: string,
  types: readonly DataType[],
  from: number = 0,
  literals?: readonly (SqlValue | undefined)[],
): DataType | string {
  const positions: number[] = [];
  for (let i = from; i < types.length; i++) if (literals?.[i] !== null) positions.push(i);
  if (positions.length === 0) return types[from] ?? TYPES.STRING;
  const taking = positions.map((i) => types[i]!);
  if (taking.every(isNumeric)) {
    return taking.some((t) => t.family === "DOUBLE") ? TYPES.DOUBLE : taking[0]!;
  }
  const first = positions[0]!;
  const bad = positions.find((i) => types[i]!.family !== types[first]!.family);
  return bad === undefined
    ? types[first]!
    : `argument ${bad + 1} of ${name} is ${types[bad]!.name}, which does not fit argument ${
      first + 1
    }'s ${types[first]!.name}`;
}

/** The units of time that `EXTRACT`, `TIMESTAMPADD`, `TIMESTAMPDIFF`, `FLOOR` and `CEIL` take. */
export const TIME_UNITS: readonly string[] = [
  "MILLISECOND",
  "SECOND",
  "MINUTE",
  "HOUR",
  "DAY",
  "WEEK",
  "MONTH",
  "QUARTER",
  "YEAR",
  "DAYOFWEEK",
  "DAYOFYEAR",
  "DOW",
  "DOY",
  "EPOCH",
];

/**
 * Checks a time-unit argument: a constant among `allowed`.
 * @returns `null`, or a message naming the function, the position and the units allowed.
 */
export function unitArgument(
  name: string,
  literals: readonly (SqlValue | undefined)[] | undefined,
  position: number,
  allowed: readonly string[],
): SignatureError {
  const unit = literals?.[position];
  if (typeof unit !== "string") {
    return `argument ${position + 1} of ${name} must be a time unit (${allowed.join(", ")})`;
  }
  return allowed.includes(unit.toUpperCase())
    ? null
    : `argument ${position + 1} of ${name} is the unit ${unit}, expected one of ${
      allowed.join(", ")
    }`;
}

/** A function that gives NULL when any argument is NULL, else `fn` of the arguments. */
export function nullSafe(
  resultType: ScalarFunction["resultType"],
  fn: (args: readonly SqlValue[]) => SqlValue,
  unitArguments?: readonly number[],
): ScalarFunction {
  return {
    resultType,
    evaluate(args) {
      for (let i = 0; i < args.length; i++) if (args[i] === null) return null;
      return fn(args);
    },
    ...(unitArguments === undefined ? {} : { unitArguments }),
  };
}
