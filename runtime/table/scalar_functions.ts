/**
 * Every built-in scalar function of Weir's SQL by its upper-case name
 * (Flink's names and semantics), gathered from:
 *
 * | file | functions |
 * |---|---|
 * | `scalar_functions_string.ts` | `UPPER`, `LOWER`, `TRIM`, `CONCAT`, `CONCAT_WS`, `SUBSTRING`, `REPLACE`, `POSITION`, `LOCATE`, `CHAR_LENGTH`, `LPAD`, `RPAD`, `REGEXP`, `REGEXP_EXTRACT`, `SPLIT_INDEX`, `LIKE`... |
 * | `scalar_functions_math.ts` | `ABS`, `MOD`, `ROUND`, `FLOOR`, `CEIL`, `POWER`, `SQRT`, `LN`, `LOG10`, `EXP`... |
 * | `scalar_functions_time.ts` | `DATE_FORMAT`, `TO_TIMESTAMP`, `UNIX_TIMESTAMP`, `FROM_UNIXTIME`, `TIMESTAMPADD`, `TIMESTAMPDIFF`, `EXTRACT`, `YEAR`... `FLOOR(ts TO unit)`, `CEIL(ts TO unit)` |
 * | here | `COALESCE`, `NULLIF`, `IF`, `GREATEST`, `LEAST` |
 *
 * NULL in gives NULL out, except `COALESCE` (the first non-NULL argument),
 * `IF` (a NULL condition takes the else branch), `NULLIF` and `CONCAT_WS`.
 * `CASE`, `CAST`, `IN`, `BETWEEN` and arithmetic are expressions, compiled
 * in `expressions.ts`. Functions that read the clock or a random source
 * are refused by name ({@linkcode NON_DETERMINISTIC_FUNCTIONS}).
 *
 * Pure code.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SCALAR_FUNCTIONS } from "./scalar_functions.ts";
 * import { TYPES } from "./types.ts";
 *
 * const ifFn = SCALAR_FUNCTIONS.IF!;
 * assert.equal(ifFn.resultType([TYPES.BOOLEAN, TYPES.BIGINT, TYPES.DOUBLE]), TYPES.DOUBLE);
 * assert.equal(ifFn.evaluate([null, 1, 2.5]), 2.5);
 * ```
 *
 * @module
 */

import { compareValues } from "./aggregates.ts";
import { argumentOf, arity, commonType, nullSafe, type ScalarFunction } from "./scalar_function.ts";
import { MATH_FUNCTIONS } from "./scalar_functions_math.ts";
import { STRING_FUNCTIONS } from "./scalar_functions_string.ts";
import { TIME_FUNCTIONS, timeRounding } from "./scalar_functions_time.ts";

export type { ScalarFunction } from "./scalar_function.ts";
export { NON_DETERMINISTIC_FUNCTIONS } from "./scalar_functions_time.ts";

function extreme(name: "GREATEST" | "LEAST"): ScalarFunction {
  const better = name === "GREATEST" ? (c: number) => c > 0 : (c: number) => c < 0;
  return nullSafe(
    (types, literals) => arity(name, types, 1, Infinity) ?? commonType(name, types, 0, literals),
    (args) => args.reduce((best, v) => (better(compareValues(v, best)) ? v : best)),
  );
}

const CONDITIONAL_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  COALESCE: {
    resultType: (types, literals) =>
      arity("COALESCE", types, 1, Infinity) ?? commonType("COALESCE", types, 0, literals),
    evaluate: (args) => args.find((a) => a !== null) ?? null,
    evaluateLazily(arg, count) {
      for (let i = 0; i < count; i++) {
        const v = arg(i);
        if (v !== null) return v;
      }
      return null;
    },
  },
  NULLIF: {
    resultType: (types, literals) => {
      const bad = arity("NULLIF", types, 2);
      if (bad !== null) return bad;
      const common = commonType("NULLIF", types, 0, literals);
      return typeof common === "string" ? common : types[0]!;
    },
    evaluate: ([a, b]) =>
      a === null || a === undefined
        ? null
        : b !== null && b !== undefined && compareValues(a, b) === 0
        ? null
        : a,
  },
  IF: {
    resultType: (types, literals) =>
      arity("IF", types, 3) ?? argumentOf("IF", types, 0, ["BOOLEAN"]) ??
        commonType("IF", types, 1, literals),
    evaluate: ([condition, then, otherwise]) =>
      condition === true ? then ?? null : otherwise ?? null,
    evaluateLazily: (arg) => (arg(0) === true ? arg(1) : arg(2)),
  },
  GREATEST: extreme("GREATEST"),
  LEAST: extreme("LEAST"),
};

/** Every built-in scalar function by its upper-case name. */
export const SCALAR_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  ...STRING_FUNCTIONS,
  ...MATH_FUNCTIONS,
  ...TIME_FUNCTIONS,
  ...CONDITIONAL_FUNCTIONS,
  FLOOR: timeRounding("FLOOR", MATH_FUNCTIONS.FLOOR!),
  CEIL: timeRounding("CEIL", MATH_FUNCTIONS.CEIL!),
  CEILING: timeRounding("CEIL", MATH_FUNCTIONS.CEILING!),
};
