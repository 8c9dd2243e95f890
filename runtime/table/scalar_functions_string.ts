/**
 * Built-in string functions (Flink's names and semantics): `UPPER`,
 * `LOWER`, `INITCAP`, `TRIM`, `LTRIM`, `RTRIM`, `CHAR_LENGTH`
 * (`CHARACTER_LENGTH`), `CONCAT`, `CONCAT_WS`, `SUBSTRING` (`SUBSTR`),
 * `REPLACE`, `POSITION`, `LOCATE`, `LPAD`, `RPAD`, `REPEAT`, `REVERSE`,
 * `REGEXP`, `REGEXP_EXTRACT`, `REGEXP_REPLACE`, `SPLIT_INDEX` and `LIKE`.
 *
 * ## Semantics
 *
 * - NULL in gives NULL out, except `CONCAT_WS`, which skips NULL strings
 *   (NULL only for a NULL separator), as Flink's.
 * - Lengths and positions count characters (code points), 1-based;
 *   `SPLIT_INDEX` is 0-based, as Flink's.
 * - Regular expressions are JavaScript's (`u` flag), which agree with
 *   Java's for the common syntax (classes, groups, quantifiers, anchors);
 *   Java-only constructs (possessive quantifiers, `\p{javaLowerCase}`) are
 *   refused by the compiler with the pattern named. A pattern that does not
 *   compile fails the job, naming the function and the pattern.
 * - `LIKE`: `%` any sequence, `_` one character, an optional one-character
 *   escape (`LIKE 'a!%' ESCAPE '!'`, as `LIKE(s, pattern, escape)`).
 * - `TRIM(s)` removes spaces at both ends; `TRIM(mode, chars, s)` (`TRIM(
 *   LEADING 'x' FROM s)`) removes any of `chars` at the ends `mode` names
 *   (`BOTH`, `LEADING`, `TRAILING`).
 *
 * Pure code; patterns are compiled once per distinct pattern text.
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import {
  argumentOf,
  arity,
  families,
  nullSafe,
  type ScalarFunction,
  unitArgument,
} from "./scalar_function.ts";
import { TYPES } from "./types.ts";

/** Code points of `s`, so that lengths and positions count characters, not UTF-16 units. */
const chars = (s: string): string[] => Array.from(s);

/** The text of a value as CONCAT joins it (`TRUE`/`FALSE` for booleans). */
const text = (v: SqlValue): string => (typeof v === "boolean" ? (v ? "TRUE" : "FALSE") : String(v));

const STRINGS = ["STRING", "TIMESTAMP"] as const;

function unary(name: string, fn: (s: string) => SqlValue, out = TYPES.STRING): ScalarFunction {
  return nullSafe(
    (types) => arity(name, types, 1) ?? families(name, types, STRINGS) ?? out,
    ([s]) => fn(String(s)),
  );
}

const regexCache = new Map<string, RegExp>();

/**
 * The compiled regular expression of `pattern` (cached).
 * @throws {SyntaxError} naming the function and the pattern when it does not compile.
 */
export function regexOf(pattern: string, fn: string, flags = "u"): RegExp {
  const key = `${flags}/${pattern}`;
  let re = regexCache.get(key);
  if (re === undefined) {
    try {
      re = new RegExp(pattern, flags);
    } catch (error) {
      throw new SyntaxError(
        `${fn}: the regular expression ${JSON.stringify(pattern)} does not compile: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    if (regexCache.size > 256) regexCache.clear();
    regexCache.set(key, re);
  }
  return re;
}

/**
 * The regular expression of a SQL `LIKE` pattern: `%` any sequence, `_`
 * one character, `escape` (one character) makes the next one literal.
 * @throws {RangeError} for an escape that is not one character, or a
 *   pattern ending in the escape.
 */
export function likeRegex(pattern: string, escape: string | null): RegExp {
  if (escape !== null && chars(escape).length !== 1) {
    throw new RangeError(
      `LIKE: the ESCAPE must be one character: current value is ${JSON.stringify(escape)}`,
    );
  }
  const key = `like/${escape ?? ""}/${pattern}`;
  const cached = regexCache.get(key);
  if (cached !== undefined) return cached;
  let source = "";
  const cs = chars(pattern);
  for (let i = 0; i < cs.length; i++) {
    const c = cs[i]!;
    if (escape !== null && c === escape) {
      const next = cs[++i];
      if (next === undefined) {
        throw new RangeError(`LIKE: the pattern ${JSON.stringify(pattern)} ends with its escape`);
      }
      source += next.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
    } else if (c === "%") source += "[^]*";
    else if (c === "_") source += "[^]";
    else source += c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
  }
  const re = new RegExp(`^${source}$`, "u");
  regexCache.set(key, re);
  return re;
}

function pad(name: "LPAD" | "RPAD"): ScalarFunction {
  return nullSafe(
    (types) =>
      arity(name, types, 3) ?? argumentOf(name, types, 0, STRINGS) ??
        argumentOf(name, types, 1, ["BIGINT"]) ?? argumentOf(name, types, 2, ["STRING"]) ??
        TYPES.STRING,
    ([s, length, filler]) => {
      const cs = chars(String(s));
      const n = Number(length);
      const fill = chars(String(filler));
      if (n < 0 || fill.length === 0) return null; // as Flink's
      if (n <= cs.length) return cs.slice(0, n).join("");
      const padding: string[] = [];
      for (let i = 0; padding.length < n - cs.length; i++) padding.push(fill[i % fill.length]!);
      return name === "LPAD" ? padding.join("") + cs.join("") : cs.join("") + padding.join("");
    },
  );
}

function trimChars(s: string, set: string, leading: boolean, trailing: boolean): string {
  const cs = chars(s);
  const drop = new Set(chars(set));
  let start = 0;
  let end = cs.length;
  if (leading) { while (start < end && drop.has(cs[start]!)) start++; }
  if (trailing) { while (end > start && drop.has(cs[end - 1]!)) end--; }
  return cs.slice(start, end).join("");
}

/** 1-based position of `needle` in `haystack` at or after character `from` (1-based); 0 if absent. */
function locate(needle: string, haystack: string, from: number): number {
  const hs = chars(haystack);
  const ns = chars(needle);
  for (let i = Math.max(0, from - 1); i + ns.length <= hs.length; i++) {
    if (ns.every((c, j) => hs[i + j] === c)) return i + 1;
  }
  return 0;
}

/** Every built-in string function by its upper-case name. */
export const STRING_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  UPPER: unary("UPPER", (s) => s.toUpperCase()),
  LOWER: unary("LOWER", (s) => s.toLowerCase()),
  INITCAP: unary(
    "INITCAP",
    (s) => s.toLowerCase().replace(/(^|[^\p{L}\p{N}])(\p{L})/gu, (_, a, b) => a + b.toUpperCase()),
  ),
  LTRIM: unary("LTRIM", (s) => trimChars(s, " ", true, false)),
  RTRIM: unary("RTRIM", (s) => trimChars(s, " ", false, true)),
  TRIM: nullSafe(
    (types, literals) => {
      if (types.length === 1) return families("TRIM", types, STRINGS) ?? TYPES.STRING;
      return arity("TRIM", types, 1, 3) ??
        (types.length === 2
          ? "TRIM takes 1 argument (s) or 3 (mode, characters, s)"
          : unitArgument("TRIM", literals, 0, ["BOTH", "LEADING", "TRAILING"]) ??
            families("TRIM", types, ["STRING"], 1) ?? TYPES.STRING);
    },
    (args) => {
      if (args.length === 1) return trimChars(String(args[0]), " ", true, true);
      const mode = String(args[0]).toUpperCase();
      return trimChars(String(args[2]), String(args[1]), mode !== "TRAILING", mode !== "LEADING");
    },
    [0],
  ),
  CHAR_LENGTH: unary("CHAR_LENGTH", (s) => chars(s).length, TYPES.BIGINT),
  CHARACTER_LENGTH: unary("CHARACTER_LENGTH", (s) => chars(s).length, TYPES.BIGINT),
  CONCAT: nullSafe(
    (types) => arity("CONCAT", types, 1, Infinity) ?? TYPES.STRING,
    (args) => args.map(text).join(""),
  ),
  CONCAT_WS: {
    resultType: (types) =>
      arity("CONCAT_WS", types, 2, Infinity) ?? argumentOf("CONCAT_WS", types, 0, ["STRING"]) ??
        TYPES.STRING,
    evaluate: ([separator, ...rest]) =>
      separator === null || separator === undefined
        ? null
        : rest.filter((v) => v !== null).map(text).join(String(separator)),
  },
  SUBSTRING: substring("SUBSTRING"),
  SUBSTR: substring("SUBSTR"),
  REPLACE: nullSafe(
    (types) => arity("REPLACE", types, 3) ?? families("REPLACE", types, STRINGS) ?? TYPES.STRING,
    ([s, search, replacement]) =>
      String(search) === "" ? String(s) : String(s).replaceAll(String(search), String(replacement)),
  ),
  POSITION: nullSafe(
    (types) => arity("POSITION", types, 2) ?? families("POSITION", types, STRINGS) ?? TYPES.BIGINT,
    ([needle, haystack]) => locate(String(needle), String(haystack), 1),
  ),
  LOCATE: nullSafe(
    (types) =>
      arity("LOCATE", types, 2, 3) ?? families("LOCATE", types.slice(0, 2), STRINGS) ??
        argumentOf("LOCATE", types, 2, ["BIGINT"]) ?? TYPES.BIGINT,
    ([needle, haystack, from]) => locate(String(needle), String(haystack), Number(from ?? 1)),
  ),
  LPAD: pad("LPAD"),
  RPAD: pad("RPAD"),
  REPEAT: nullSafe(
    (types) =>
      arity("REPEAT", types, 2) ?? argumentOf("REPEAT", types, 0, STRINGS) ??
        argumentOf("REPEAT", types, 1, ["BIGINT"]) ?? TYPES.STRING,
    ([s, n]) => String(s).repeat(Math.max(0, Number(n))),
  ),
  REVERSE: unary("REVERSE", (s) => chars(s).reverse().join("")),
  REGEXP: nullSafe(
    (types) => arity("REGEXP", types, 2) ?? families("REGEXP", types, STRINGS) ?? TYPES.BOOLEAN,
    ([s, pattern]) => regexOf(String(pattern), "REGEXP").test(String(s)),
  ),
  REGEXP_EXTRACT: nullSafe(
    (types) =>
      arity("REGEXP_EXTRACT", types, 2, 3) ??
        families("REGEXP_EXTRACT", types.slice(0, 2), STRINGS) ??
        argumentOf("REGEXP_EXTRACT", types, 2, ["BIGINT"]) ?? TYPES.STRING,
    /** Group `index` (default 0, the whole match) of the first match; NULL without a match or such a group. */
    ([s, pattern, index]) => {
      const re = regexOf(String(pattern), "REGEXP_EXTRACT");
      const m = re.exec(String(s));
      const group = Number(index ?? 0);
      if (group < 0 || group > (m?.length ?? 0) - 1) return null;
      return m?.[group] ?? null;
    },
  ),
  REGEXP_REPLACE: nullSafe(
    (types) =>
      arity("REGEXP_REPLACE", types, 3) ?? families("REGEXP_REPLACE", types, STRINGS) ??
        TYPES.STRING,
    ([s, pattern, replacement]) =>
      String(s).replace(
        regexOf(String(pattern), "REGEXP_REPLACE", "gu"),
        // Java's replacement syntax ($1) is JavaScript's too.
        String(replacement),
      ),
  ),
  SPLIT_INDEX: nullSafe(
    (types) =>
      arity("SPLIT_INDEX", types, 3) ?? families("SPLIT_INDEX", types.slice(0, 2), STRINGS) ??
        argumentOf("SPLIT_INDEX", types, 2, ["BIGINT"]) ?? TYPES.STRING,
    ([s, separator, index]) => {
      const parts = String(s).split(String(separator));
      const i = Number(index);
      return i < 0 || i >= parts.length ? null : parts[i]!;
    },
  ),
  LIKE: nullSafe(
    (types) => arity("LIKE", types, 2, 3) ?? families("LIKE", types, ["STRING"]) ?? TYPES.BOOLEAN,
    ([s, pattern, escape]) =>
      likeRegex(String(pattern), escape === undefined ? null : String(escape)).test(String(s)),
  ),
};

function substring(name: string): ScalarFunction {
  return nullSafe(
    (types) =>
      arity(name, types, 2, 3) ?? argumentOf(name, types, 0, STRINGS) ??
        families(name, types, ["BIGINT"], 1) ?? TYPES.STRING,
    /** 1-based start; a start below 1 counts from 1, as SQL's SUBSTRING. */
    ([s, start, length]) => {
      const cs = chars(String(s));
      const from = Number(start) - 1;
      if (length !== undefined && Number(length) < 0) {
        throw new RangeError(`${name} length must not be negative: current value is ${length}`);
      }
      const end = length === undefined ? cs.length : from + Number(length);
      return cs.slice(Math.max(0, from), Math.max(0, end)).join("");
    },
  );
}
