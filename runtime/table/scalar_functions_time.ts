/**
 * Built-in date and time functions (Flink's names and semantics):
 * `DATE_FORMAT`, `TO_TIMESTAMP`, `UNIX_TIMESTAMP`, `FROM_UNIXTIME`,
 * `TIMESTAMPADD`, `TIMESTAMPDIFF`, `EXTRACT`, `YEAR`, `QUARTER`, `MONTH`,
 * `WEEK`, `DAYOFYEAR`, `DAYOFMONTH`, `DAYOFWEEK`, `HOUR`, `MINUTE`,
 * `SECOND`, and the time forms of `FLOOR(ts TO unit)` / `CEIL(ts TO unit)`;
 * plus the conversions between a TIMESTAMP value and epoch milliseconds
 * that CAST and `TIMESTAMP ± INTERVAL` use.
 *
 * ## Values and time zone
 *
 * A TIMESTAMP is held as the string `YYYY-MM-DD HH:MM:SS[.fff]`
 * (`types.ts`). These functions read it as UTC and write TIMESTAMP(3)
 * values with three fraction digits (`2026-01-01 12:00:00.000`), as
 * Flink's SQL client prints TIMESTAMP(3). Weir's session time zone is UTC
 * (Flink's `table.local-time-zone` defaults to the JVM's zone; a
 * simplification: `FROM_UNIXTIME`, `UNIX_TIMESTAMP` and `DATE_FORMAT` use
 * UTC).
 *
 * ## Formats
 *
 * Format strings are Java's `SimpleDateFormat` patterns, as Flink's: `yyyy`
 * (year), `yy`, `MM` (month), `MMM` (`Jan`), `dd`, `HH` (0-23), `hh`
 * (1-12), `a` (`AM`/`PM`), `mm`, `ss`, `SSS` (milliseconds), `D` (day of
 * year), `E`/`EEE` (`Mon`), `EEEE` (`Monday`), text in single quotes
 * (`''` is a quote). Parsing (`TO_TIMESTAMP`, `UNIX_TIMESTAMP`) reads the
 * numeric fields `y M d H m s S`. Any other pattern letter is refused
 * with a message naming the letter.
 *
 * ## Determinism
 *
 * Functions that read the clock (`NOW`, `CURRENT_TIMESTAMP`,
 * `LOCALTIMESTAMP`, `CURRENT_DATE`, `UNIX_TIMESTAMP()` without an argument,
 * `PROCTIME`) are refused: a query's result must be the same when a
 * restored job replays its input (exactly-once), and the clock would make
 * the replay differ. NULL in gives NULL out; a string that does not parse
 * gives NULL (Flink's `TO_TIMESTAMP` does the same).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TIME_FUNCTIONS } from "./scalar_functions_time.ts";
 *
 * assert.equal(TIME_FUNCTIONS.DATE_FORMAT!.evaluate(["2026-03-07 09:05:00", "yyyy/MM/dd HH:mm"]), "2026/03/07 09:05");
 * assert.equal(TIME_FUNCTIONS.TIMESTAMPADD!.evaluate(["MONTH", 1, "2026-01-31 00:00:00"]), "2026-02-28 00:00:00.000");
 * ```
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

const TIMESTAMP_TEXT =
  /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$/;

/**
 * The epoch milliseconds (UTC) of a TIMESTAMP value.
 * @param text `YYYY-MM-DD[ HH:MM[:SS[.f...]]]` (`T` may separate date and time).
 * @returns the milliseconds (fractions below a millisecond are cut), or
 *   `null` when `text` is not a valid timestamp (month 13, February 30...).
 */
export function parseTimestamp(text: string): number | null {
  const m = TIMESTAMP_TEXT.exec(text.trim());
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0));
  const millis = Number((m[7] ?? "0").padEnd(3, "0").slice(0, 3));
  return fromFields(year!, month!, day!, hour!, minute!, second!, millis);
}

function fromFields(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number,
): number | null {
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, millis);
  // A day past the month's end rolls over; refuse it instead.
  return d.getUTCDate() === day ? d.getTime() : null;
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/**
 * A TIMESTAMP(3) value of epoch milliseconds (UTC): `YYYY-MM-DD HH:MM:SS.fff`.
 * @throws {RangeError} for a time outside the years 0000-9999.
 */
export function formatTimestamp(millis: number): string {
  const d = new Date(millis);
  const year = d.getUTCFullYear();
  if (!Number.isFinite(millis) || year < 0 || year > 9999) {
    throw new RangeError(`timestamp out of range (years 0000-9999): ${millis} ms since the epoch`);
  }
  return `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ${
    pad(d.getUTCHours(), 2)
  }:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}`;
}

/**
 * `ts + millis` as TIMESTAMP(3) (`TIMESTAMP ± INTERVAL`).
 * @throws {TypeError} when `ts` is not a timestamp.
 */
export function addMillis(ts: string, millis: number): string {
  return formatTimestamp(millisOf(ts, "TIMESTAMP + INTERVAL") + millis);
}

function millisOf(value: SqlValue, fn: string): number {
  const ms = typeof value === "string" ? parseTimestamp(value) : null;
  if (ms === null) {
    throw new TypeError(`${fn} got ${JSON.stringify(value)}, which is not a TIMESTAMP`);
  }
  return ms;
}

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

type FormatToken = { readonly letter: string; readonly width: number } | { readonly text: string };

const FORMAT_LETTERS = "yMdHhmsSaEDk";

/**
 * Splits a `SimpleDateFormat` pattern into letter runs and literal text.
 * @throws {RangeError} for a pattern letter this module does not know, naming it.
 */
function tokenize(pattern: string, fn: string): FormatToken[] {
  const tokens: FormatToken[] = [];
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "'") {
      if (pattern[i + 1] === "'") {
        tokens.push({ text: "'" });
        i += 2;
        continue;
      }
      let literal = "";
      let j = i + 1;
      for (;;) {
        if (j >= pattern.length) {
          throw new RangeError(`${fn}: unterminated quote in format '${pattern}'`);
        }
        if (pattern[j] === "'") {
          if (pattern[j + 1] !== "'") break;
          literal += "'";
          j += 2;
          continue;
        }
        literal += pattern[j];
        j++;
      }
      tokens.push({ text: literal });
      i = j + 1;
      continue;
    }
    if (/[a-zA-Z]/.test(c)) {
      if (!FORMAT_LETTERS.includes(c)) {
        throw new RangeError(
          `${fn}: the pattern letter '${c}' of format '${pattern}' is not supported (supported: ${
            FORMAT_LETTERS.split("").join(" ")
          })`,
        );
      }
      let j = i;
      while (pattern[j] === c) j++;
      tokens.push({ letter: c, width: j - i });
      i = j;
      continue;
    }
    tokens.push({ text: c });
    i++;
  }
  return tokens;
}

const cache = new Map<string, FormatToken[]>();
function tokensOf(pattern: string, fn: string): FormatToken[] {
  let tokens = cache.get(pattern);
  if (tokens === undefined) {
    tokens = tokenize(pattern, fn);
    if (cache.size > 256) cache.clear();
    cache.set(pattern, tokens);
  }
  return tokens;
}

/** Formats epoch milliseconds (UTC) with a `SimpleDateFormat` pattern. */
export function formatWithPattern(millis: number, pattern: string, fn = "DATE_FORMAT"): string {
  const d = new Date(millis);
  return tokensOf(pattern, fn).map((t) => {
    if ("text" in t) return t.text;
    const w = t.width;
    switch (t.letter) {
      case "y":
        return w === 2 ? pad(d.getUTCFullYear() % 100, 2) : pad(d.getUTCFullYear(), w);
      case "M":
        return w >= 4
          ? MONTHS[d.getUTCMonth()]!
          : w === 3
          ? MONTHS[d.getUTCMonth()]!.slice(0, 3)
          : pad(d.getUTCMonth() + 1, w);
      case "d":
        return pad(d.getUTCDate(), w);
      case "H":
        return pad(d.getUTCHours(), w);
      case "k":
        return pad(d.getUTCHours() === 0 ? 24 : d.getUTCHours(), w);
      case "h":
        return pad(d.getUTCHours() % 12 === 0 ? 12 : d.getUTCHours() % 12, w);
      case "m":
        return pad(d.getUTCMinutes(), w);
      case "s":
        return pad(d.getUTCSeconds(), w);
      case "S":
        return pad(d.getUTCMilliseconds(), 3).slice(0, Math.max(w, 3)).padEnd(w, "0");
      case "a":
        return d.getUTCHours() < 12 ? "AM" : "PM";
      case "E":
        return w >= 4 ? DAYS[d.getUTCDay()]! : DAYS[d.getUTCDay()]!.slice(0, 3);
      default: // "D"
        return pad(dayOfYear(d), w);
    }
  }).join("");
}

/**
 * Parses `text` with a `SimpleDateFormat` pattern into epoch milliseconds (UTC).
 * @returns the milliseconds, or `null` when `text` does not match.
 * @throws {RangeError} for a pattern letter that parsing does not read.
 */
export function parseWithPattern(text: string, pattern: string, fn: string): number | null {
  const tokens = tokensOf(pattern, fn);
  const fields: Record<string, number> = { y: 1970, M: 1, d: 1, H: 0, m: 0, s: 0, S: 0 };
  let at = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if ("text" in t) {
      if (!text.startsWith(t.text, at)) return null;
      at += t.text.length;
      continue;
    }
    if (!"yMdHmsS".includes(t.letter)) {
      throw new RangeError(
        `${fn}: the pattern letter '${t.letter}' cannot be parsed (parsed: y M d H m s S)`,
      );
    }
    const next = tokens[i + 1];
    const fixed = next !== undefined && "letter" in next;
    const m = (fixed ? new RegExp(`^\\d{${t.width}}`) : /^\d+/).exec(text.slice(at));
    if (m === null) return null;
    at += m[0].length;
    fields[t.letter] = t.letter === "S" ? Number(m[0].padEnd(3, "0").slice(0, 3)) : Number(m[0]);
  }
  if (at !== text.length) return null;
  return fromFields(fields.y!, fields.M!, fields.d!, fields.H!, fields.m!, fields.s!, fields.S!);
}

function dayOfYear(d: Date): number {
  return Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
}

/** ISO 8601 week of the year (weeks start on Monday; week 1 holds the year's first Thursday). */
function isoWeek(d: Date): number {
  const thursday = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  thursday.setUTCDate(thursday.getUTCDate() - ((d.getUTCDay() + 6) % 7) + 3);
  const january4 = new Date(Date.UTC(thursday.getUTCFullYear(), 0, 4));
  const days = (thursday.getTime() - january4.getTime()) / 86_400_000;
  return 1 + Math.round((days - 3 + ((january4.getUTCDay() + 6) % 7)) / 7);
}

/** The value of `unit` of a timestamp (Calcite's EXTRACT). */
function extract(unit: string, ms: number): number {
  const d = new Date(ms);
  switch (unit) {
    case "YEAR":
      return d.getUTCFullYear();
    case "QUARTER":
      return Math.floor(d.getUTCMonth() / 3) + 1;
    case "MONTH":
      return d.getUTCMonth() + 1;
    case "WEEK":
      return isoWeek(d);
    case "DAY":
      return d.getUTCDate();
    case "DOW":
    case "DAYOFWEEK":
      return d.getUTCDay() + 1; // 1 = Sunday, as Flink's
    case "DOY":
    case "DAYOFYEAR":
      return dayOfYear(d);
    case "HOUR":
      return d.getUTCHours();
    case "MINUTE":
      return d.getUTCMinutes();
    case "SECOND":
      return d.getUTCSeconds();
    case "MILLISECOND":
      return d.getUTCSeconds() * 1000 + d.getUTCMilliseconds();
    default: // EPOCH
      return Math.floor(ms / 1000);
  }
}

const EXTRACT_UNITS = [
  "YEAR",
  "QUARTER",
  "MONTH",
  "WEEK",
  "DAY",
  "DOW",
  "DAYOFWEEK",
  "DOY",
  "DAYOFYEAR",
  "HOUR",
  "MINUTE",
  "SECOND",
  "MILLISECOND",
  "EPOCH",
];
const FIXED_UNITS: Readonly<Record<string, number>> = {
  MILLISECOND: 1,
  SECOND: 1_000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 604_800_000,
};
const MONTH_UNITS: Readonly<Record<string, number>> = { MONTH: 1, QUARTER: 3, YEAR: 12 };
const ADD_UNITS = ["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"];
const FLOOR_UNITS = ["SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "QUARTER", "YEAR"];

/** `ms` plus `months` calendar months; a day past the new month's end becomes its last day (as Java's `plusMonths`). */
function plusMonths(ms: number, months: number): number {
  const d = new Date(ms);
  const target = d.getUTCMonth() + months;
  const day = d.getUTCDate();
  const out = new Date(ms);
  out.setUTCDate(1);
  out.setUTCMonth(target);
  const last = new Date(Date.UTC(out.getUTCFullYear(), out.getUTCMonth() + 1, 0)).getUTCDate();
  out.setUTCDate(Math.min(day, last));
  return out.getTime();
}

/** Whole months from `a` to `b`, truncated toward zero (as Calcite's TIMESTAMPDIFF). */
function monthsBetween(a: number, b: number): number {
  const da = new Date(a);
  const db = new Date(b);
  let months = (db.getUTCFullYear() - da.getUTCFullYear()) * 12 + db.getUTCMonth() -
    da.getUTCMonth();
  const rest = (d: Date) =>
    (((d.getUTCDate() * 24 + d.getUTCHours()) * 60 + d.getUTCMinutes()) * 60 +
        d.getUTCSeconds()) * 1000 + d.getUTCMilliseconds();
  if (months > 0 && rest(db) < rest(da)) months -= 1;
  if (months < 0 && rest(db) > rest(da)) months += 1;
  return months;
}

/** `FLOOR(ts TO unit)` in ms. */
function floorTo(unit: string, ms: number): number {
  const fixed = FIXED_UNITS[unit];
  if (fixed !== undefined) return Math.floor(ms / fixed) * fixed;
  const d = new Date(ms);
  const month = unit === "YEAR"
    ? 0
    : unit === "QUARTER"
    ? d.getUTCMonth() - d.getUTCMonth() % 3
    : d.getUTCMonth();
  return Date.UTC(d.getUTCFullYear(), month, 1);
}

/** `CEIL(ts TO unit)` in ms: the time itself when it is on a unit boundary, else the next boundary. */
function ceilTo(unit: string, ms: number): number {
  const floor = floorTo(unit, ms);
  if (floor === ms) return ms;
  const fixed = FIXED_UNITS[unit];
  return fixed !== undefined ? floor + fixed : plusMonths(floor, MONTH_UNITS[unit]!);
}

const unitOf = (v: SqlValue) => String(v).toUpperCase();

/** The time form of FLOOR/CEIL: `(ts, unit)`; `math` handles one numeric argument. */
export function timeRounding(name: "FLOOR" | "CEIL", math: ScalarFunction): ScalarFunction {
  const round = name === "FLOOR" ? floorTo : ceilTo;
  return {
    unitArguments: [1],
    resultType(types, literals) {
      if (types.length !== 2) return math.resultType(types, literals);
      return argumentOf(name, types, 0, ["TIMESTAMP"]) ??
        unitArgument(name, literals, 1, FLOOR_UNITS) ?? TYPES.TIMESTAMP;
    },
    evaluate(args) {
      if (args.length !== 2) return math.evaluate(args);
      const [ts, unit] = args;
      if (ts === null || ts === undefined) return null;
      return formatTimestamp(round(unitOf(unit!), millisOf(ts, name)));
    },
  };
}

const TIMESTAMP_OR_STRING = ["TIMESTAMP", "STRING"] as const;
const DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss";

/**
 * The epoch ms of a TIMESTAMP or of a string in `format`; without a format,
 * `yyyy-MM-dd HH:mm:ss` with an optional fraction. `null` if it does not parse.
 */
function readTime(value: SqlValue, format: SqlValue | undefined, fn: string): number | null {
  const text = String(value);
  if (format === undefined) return parseTimestamp(text);
  return parseWithPattern(text, String(format), fn);
}

/** A one-timestamp-argument function giving the BIGINT value of `unit`. */
function field(name: string, unit: string): ScalarFunction {
  return nullSafe(
    (types) => arity(name, types, 1) ?? families(name, types, ["TIMESTAMP"]) ?? TYPES.BIGINT,
    ([ts]) => extract(unit, millisOf(ts!, name)),
  );
}

/** Names of functions that read the clock, refused (see the module docs). */
export const NON_DETERMINISTIC_FUNCTIONS: readonly string[] = [
  "NOW",
  "CURRENT_TIMESTAMP",
  "LOCALTIMESTAMP",
  "LOCALTIME",
  "CURRENT_DATE",
  "CURRENT_TIME",
  "CURRENT_ROW_TIMESTAMP",
  "PROCTIME",
  "RAND",
  "RAND_INTEGER",
  "UUID",
];

/** Every built-in date and time function by its upper-case name (FLOOR and CEIL are in `scalar_functions.ts`). */
export const TIME_FUNCTIONS: Readonly<Record<string, ScalarFunction>> = {
  DATE_FORMAT: nullSafe(
    (types) =>
      arity("DATE_FORMAT", types, 2) ??
        argumentOf("DATE_FORMAT", types, 0, TIMESTAMP_OR_STRING) ??
        argumentOf("DATE_FORMAT", types, 1, ["STRING"]) ?? TYPES.STRING,
    ([ts, format]) => {
      const ms = parseTimestamp(String(ts));
      return ms === null ? null : formatWithPattern(ms, String(format));
    },
  ),
  TO_TIMESTAMP: nullSafe(
    (types) =>
      arity("TO_TIMESTAMP", types, 1, 2) ?? families("TO_TIMESTAMP", types, ["STRING"]) ??
        TYPES.TIMESTAMP,
    ([text, format]) => {
      const ms = readTime(text!, format, "TO_TIMESTAMP");
      return ms === null ? null : formatTimestamp(ms);
    },
  ),
  UNIX_TIMESTAMP: nullSafe(
    (types) =>
      types.length === 0
        ? "UNIX_TIMESTAMP() reads the clock, which a restored job would read differently (exactly-once replay); pass a timestamp"
        : arity("UNIX_TIMESTAMP", types, 1, 2) ??
          argumentOf("UNIX_TIMESTAMP", types, 0, TIMESTAMP_OR_STRING) ??
          argumentOf("UNIX_TIMESTAMP", types, 1, ["STRING"]) ?? TYPES.BIGINT,
    ([value, format]) => {
      const ms = readTime(value!, format, "UNIX_TIMESTAMP");
      return ms === null ? null : Math.floor(ms / 1000);
    },
  ),
  FROM_UNIXTIME: nullSafe(
    (types) =>
      arity("FROM_UNIXTIME", types, 1, 2) ??
        argumentOf("FROM_UNIXTIME", types, 0, ["BIGINT", "DOUBLE"]) ??
        argumentOf("FROM_UNIXTIME", types, 1, ["STRING"]) ?? TYPES.STRING,
    ([seconds, format]) =>
      formatWithPattern(
        Math.floor(Number(seconds)) * 1000,
        String(format ?? DEFAULT_FORMAT),
        "FROM_UNIXTIME",
      ),
  ),
  TIMESTAMPADD: nullSafe(
    (types, literals) =>
      arity("TIMESTAMPADD", types, 3) ?? unitArgument("TIMESTAMPADD", literals, 0, ADD_UNITS) ??
        argumentOf("TIMESTAMPADD", types, 1, ["BIGINT"]) ??
        argumentOf("TIMESTAMPADD", types, 2, ["TIMESTAMP"]) ?? TYPES.TIMESTAMP,
    ([unit, n, ts]) => {
      const u = unitOf(unit!);
      const ms = millisOf(ts!, "TIMESTAMPADD");
      const months = MONTH_UNITS[u];
      return formatTimestamp(
        months !== undefined
          ? plusMonths(ms, months * Number(n))
          : ms + FIXED_UNITS[u]! * Number(n),
      );
    },
    [0],
  ),
  TIMESTAMPDIFF: nullSafe(
    (types, literals) =>
      arity("TIMESTAMPDIFF", types, 3) ??
        unitArgument("TIMESTAMPDIFF", literals, 0, ADD_UNITS) ??
        families("TIMESTAMPDIFF", types, ["TIMESTAMP"], 1) ?? TYPES.BIGINT,
    ([unit, a, b]) => {
      const u = unitOf(unit!);
      const from = millisOf(a!, "TIMESTAMPDIFF");
      const to = millisOf(b!, "TIMESTAMPDIFF");
      const months = MONTH_UNITS[u];
      // `|| 0`: no -0 out of a truncated negative fraction.
      return (months !== undefined
        ? Math.trunc(monthsBetween(from, to) / months)
        : Math.trunc((to - from) / FIXED_UNITS[u]!)) || 0;
    },
    [0],
  ),
  EXTRACT: nullSafe(
    (types, literals) =>
      arity("EXTRACT", types, 2) ?? unitArgument("EXTRACT", literals, 0, EXTRACT_UNITS) ??
        argumentOf("EXTRACT", types, 1, ["TIMESTAMP"]) ?? TYPES.BIGINT,
    ([unit, ts]) => extract(unitOf(unit!), millisOf(ts!, "EXTRACT")),
    [0],
  ),
  YEAR: field("YEAR", "YEAR"),
  QUARTER: field("QUARTER", "QUARTER"),
  MONTH: field("MONTH", "MONTH"),
  WEEK: field("WEEK", "WEEK"),
  DAYOFYEAR: field("DAYOFYEAR", "DOY"),
  DAYOFMONTH: field("DAYOFMONTH", "DAY"),
  DAYOFWEEK: field("DAYOFWEEK", "DOW"),
  HOUR: field("HOUR", "HOUR"),
  MINUTE: field("MINUTE", "MINUTE"),
  SECOND: field("SECOND", "SECOND"),
};
