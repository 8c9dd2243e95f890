/**
 * The built-in scalar functions of this slice (Flink's names and SQL
 * semantics): `UPPER`, `LOWER`, `CHAR_LENGTH` (and `CHARACTER_LENGTH`),
 * `CONCAT`, `SUBSTRING`, `TRIM`, `COALESCE`, `ABS`, `MOD`.
 *
 * NULL in gives NULL out, except `COALESCE` (the first non-NULL argument)
 * and `CONCAT` (NULL when any argument is NULL, as Flink's `CONCAT`).
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
   * @returns the type, or a message saying what is wrong with the arguments.
   */
  resultType(types: readonly DataType[]): DataType | string;
  /** The value for `args` (already evaluated). */
  evaluate(args: readonly SqlValue[]): SqlValue;
}

function arity(name: string, types: readonly DataType[], min: number, max: number): string | null {
  if (types.length < min || types.length > max) {
    const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`;
    return `${name} takes ${want} argument(s), got ${types.length}`;
  }
  return null;
}

function families(
  name: string,
  types: readonly DataType[],
  allowed: readonly TypeFamily[],
): string | null {
  const bad = types.findIndex((t) => !allowed.includes(t.family));
  return bad === -1
    ? null
    : `argument ${bad + 1} of ${name} is ${types[bad]!.name}, expected ${allowed.join(" or ")}`;
}

function stringFunction(name: string, fn: (s: string) => SqlValue, out: DataType): ScalarFunction {
  return {
    resultType: (types) =>
      arity(name, types, 1, 1) ?? families(name, types, ["STRING", "TIMESTAMP"]) ?? out,
    evaluate: ([s]) => (s === null || s === undefined ? null : fn(String(s))),
  };
}

/** Code points of `s`, so that CHAR_LENGTH and SUBSTRING count characters, not UTF-16 units. */
const chars = (s: string): string[] => Array.from(s);

/** Every built-in scalar function by its upper-case name. */
export const SCALAR_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  UPPER: stringFunction("UPPER", (s) => s.toUpperCase(), TYPES.STRING),
  LOWER: stringFunction("LOWER", (s) => s.toLowerCase(), TYPES.STRING),
  TRIM: stringFunction("TRIM", (s) => s.trim(), TYPES.STRING),
  CHAR_LENGTH: stringFunction("CHAR_LENGTH", (s) => chars(s).length, TYPES.BIGINT),
  CHARACTER_LENGTH: stringFunction("CHARACTER_LENGTH", (s) => chars(s).length, TYPES.BIGINT),
  CONCAT: {
    resultType: (types) => arity("CONCAT", types, 1, Infinity) ?? TYPES.STRING,
    evaluate: (args) =>
      args.some((a) => a === null)
        ? null
        : args.map((a) => typeof a === "boolean" ? (a ? "TRUE" : "FALSE") : String(a)).join(""),
  },
  SUBSTRING: {
    resultType: (types) =>
      arity("SUBSTRING", types, 2, 3) ??
        families("SUBSTRING", types.slice(0, 1), ["STRING"]) ??
        families("SUBSTRING", types.slice(1), ["BIGINT"]) ??
        TYPES.STRING,
    /** 1-based start; a start below 1 counts from 1, as SQL's SUBSTRING. */
    evaluate([s, start, length]) {
      if (s === null || start === null || length === null) return null;
      const cs = chars(String(s));
      const from = Number(start) - 1;
      const end = length === undefined ? cs.length : from + Number(length);
      if (length !== undefined && Number(length) < 0) {
        throw new RangeError(`SUBSTRING length must not be negative: current value is ${length}`);
      }
      return cs.slice(Math.max(0, from), Math.max(0, end)).join("");
    },
  },
  COALESCE: {
    resultType: (types) => arity("COALESCE", types, 1, Infinity) ?? types[0]!,
    evaluate: (args) => args.find((a) => a !== null) ?? null,
  },
  ABS: {
    resultType: (types) =>
      arity("ABS", types, 1, 1) ?? families("ABS", types, ["BIGINT", "DOUBLE"]) ?? types[0]!,
    evaluate: ([x]) => (x === null || x === undefined ? null : Math.abs(Number(x))),
  },
  MOD: {
    resultType: (types) =>
      arity("MOD", types, 2, 2) ?? families("MOD", types, ["BIGINT"]) ?? TYPES.BIGINT,
    evaluate([a, b]) {
      if (a === null || b === null || a === undefined || b === undefined) return null;
      if (b === 0) throw new RangeError(`MOD by zero: MOD(${a}, 0)`);
      return Number(a) % Number(b);
    },
  },
};
