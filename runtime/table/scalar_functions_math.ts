/**
 * Built-in numeric functions (Flink's names and semantics): `ABS`, `MOD`,
 * `ROUND`, `TRUNCATE`, `FLOOR`, `CEIL` (`CEILING`), `SIGN`, `POWER`
 * (`POW`), `SQRT`, `LN`, `LOG`, `LOG10`, `LOG2`, `EXP`, `PI`, `SIN`,
 * `COS`, `TAN`, `DEGREES`, `RADIANS`.
 *
 * ## Semantics
 *
 * - NULL in gives NULL out.
 * - `ABS`, `SIGN`, `FLOOR`, `CEIL`, `ROUND`, `TRUNCATE` keep their
 *   argument's type; `POWER`, `SQRT`, the logarithms and `EXP` are DOUBLE.
 * - `ROUND(x, d)` rounds half away from zero at `d` decimal places
 *   (negative `d` rounds to tens, hundreds...), as Java's `HALF_UP` that
 *   Flink uses; it rounds the decimal text of the double, so `ROUND(1.005,
 *   2)` is `1.01` as in Flink's DECIMAL arithmetic.
 * - `MOD` by zero throws (Flink's `ArithmeticException` for integers),
 *   which fails the job; for doubles too (Java gives NaN there: a
 *   simplification, as an integral double cannot be told from an integer
 *   at run time).
 * - Domain errors follow Java's `Math`: `SQRT(-1)` and `LN(-1)` are NaN,
 *   `LN(0)` is `-Infinity`.
 *
 * `RAND` and `RAND_INTEGER` are refused (see `scalar_functions_time.ts`'
 * module docs on determinism). Pure code.
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import {
  argumentOf,
  arity,
  commonType,
  families,
  nullSafe,
  type ScalarFunction,
} from "./scalar_function.ts";
import { type DataType, TYPES } from "./types.ts";

const NUMBERS = ["BIGINT", "DOUBLE"] as const;

/** One numeric argument, a result of the argument's type. */
function sameType(name: string, fn: (x: number) => number): ScalarFunction {
  return nullSafe(
    (types) => arity(name, types, 1) ?? families(name, types, NUMBERS) ?? types[0]!,
    ([x]) => fn(Number(x)),
  );
}

/** Numeric arguments, a DOUBLE result. */
function toDouble(
  name: string,
  fn: (...xs: number[]) => number,
  min = 1,
  max = min,
): ScalarFunction {
  return nullSafe(
    (types) => arity(name, types, min, max) ?? families(name, types, NUMBERS) ?? TYPES.DOUBLE,
    (args) => fn(...args.map(Number)),
  );
}

/** `x` rounded half away from zero at `digits` decimal places (negative: left of the point). */
export function roundHalfUp(x: number, digits: number): number {
  if (!Number.isFinite(x)) return x;
  const shifted = Math.round(Number(`${Math.abs(x)}e${digits}`));
  return Math.sign(x) * Number(`${shifted}e${-digits}`);
}

/** `x` truncated toward zero at `digits` decimal places. */
function truncateTo(x: number, digits: number): number {
  if (!Number.isFinite(x)) return x;
  return Math.sign(x) * Number(`${Math.trunc(Number(`${Math.abs(x)}e${digits}`))}e${-digits}`);
}

function rounding(name: string, fn: (x: number, d: number) => number): ScalarFunction {
  return nullSafe(
    (types) =>
      arity(name, types, 1, 2) ?? argumentOf(name, types, 0, NUMBERS) ??
        argumentOf(name, types, 1, ["BIGINT"]) ?? types[0]!,
    ([x, d]) => fn(Number(x), Number(d ?? 0)),
  );
}

const intOrDouble = (types: readonly DataType[], name: string): DataType | string =>
  families(name, types, NUMBERS) ?? commonType(name, types);

/** Every built-in numeric function by its upper-case name. */
export const MATH_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  ABS: sameType("ABS", Math.abs),
  SIGN: sameType("SIGN", Math.sign),
  FLOOR: sameType("FLOOR", Math.floor),
  CEIL: sameType("CEIL", Math.ceil),
  CEILING: sameType("CEILING", Math.ceil),
  ROUND: rounding("ROUND", roundHalfUp),
  TRUNCATE: rounding("TRUNCATE", truncateTo),
  MOD: nullSafe(
    (types) => arity("MOD", types, 2) ?? intOrDouble(types, "MOD"),
    ([a, b]: readonly SqlValue[]) => {
      const x = Number(a);
      const y = Number(b);
      if (y === 0) {
        throw new RangeError(`MOD by zero: MOD(${a}, 0)`);
      }
      return x % y;
    },
  ),
  POWER: toDouble("POWER", Math.pow, 2),
  POW: toDouble("POW", Math.pow, 2),
  SQRT: toDouble("SQRT", Math.sqrt),
  EXP: toDouble("EXP", Math.exp),
  LN: toDouble("LN", Math.log),
  LOG10: toDouble("LOG10", Math.log10),
  LOG2: toDouble("LOG2", Math.log2),
  /** `LOG(x)` is the natural logarithm; `LOG(base, x)` the logarithm to `base`. */
  LOG: toDouble(
    "LOG",
    (a, b) => (b === undefined ? Math.log(a!) : Math.log(b) / Math.log(a!)),
    1,
    2,
  ),
  PI: toDouble("PI", () => Math.PI, 0),
  SIN: toDouble("SIN", Math.sin),
  COS: toDouble("COS", Math.cos),
  TAN: toDouble("TAN", Math.tan),
  DEGREES: toDouble("DEGREES", (x) => (x * 180) / Math.PI),
  RADIANS: toDouble("RADIANS", (x) => (x * Math.PI) / 180),
};
