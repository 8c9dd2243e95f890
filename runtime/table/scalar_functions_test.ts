import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import type { SqlValue } from "./row.ts";
import { SCALAR_FUNCTIONS } from "./scalar_functions.ts";
import { formatTimestamp, parseTimestamp } from "./scalar_functions_time.ts";
import { type DataType, TYPES } from "./types.ts";

const { STRING: S, BIGINT: I, DOUBLE: D, BOOLEAN: B, TIMESTAMP: T } = TYPES;

/** One call: function, argument types, argument values, expected value. */
type Case = [string, readonly DataType[], readonly SqlValue[], SqlValue];

const cases: Case[] = [
  // strings
  ["UPPER", [S], ["abc"], "ABC"],
  ["LOWER", [S], ["AbC"], "abc"],
  ["INITCAP", [S], ["hello wORLD"], "Hello World"],
  ["TRIM", [S], ["  a b  "], "a b"],
  ["TRIM", [S, S, S], ["LEADING", "x", "xxaxx"], "axx"],
  ["TRIM", [S, S, S], ["TRAILING", "x", "xxaxx"], "xxa"],
  ["TRIM", [S, S, S], ["BOTH", "xy", "xyaxy"], "a"],
  ["LTRIM", [S], ["  a "], "a "],
  ["RTRIM", [S], ["  a "], "  a"],
  ["CHAR_LENGTH", [S], ["héllo😀"], 6],
  ["CONCAT", [S, I, B], ["a", 1, true], "a1TRUE"],
  ["CONCAT", [S, S], ["a", null], null],
  ["CONCAT_WS", [S, S, S, S], ["-", "a", null, "c"], "a-c"],
  ["CONCAT_WS", [S, S], [null, "a"], null],
  ["SUBSTRING", [S, I], ["hello", 2], "ello"],
  ["SUBSTRING", [S, I, I], ["hello", 2, 3], "ell"],
  ["SUBSTR", [S, I, I], ["hello", 0, 2], "h"],
  ["REPLACE", [S, S, S], ["a-b-c", "-", "+"], "a+b+c"],
  ["POSITION", [S, S], ["lo", "hello"], 4],
  ["POSITION", [S, S], ["z", "hello"], 0],
  ["LOCATE", [S, S, I], ["l", "hello", 4], 4],
  ["LPAD", [S, I, S], ["hi", 5, "ab"], "abahi"],
  ["LPAD", [S, I, S], ["hello", 2, "x"], "he"],
  ["RPAD", [S, I, S], ["hi", 4, "?"], "hi??"],
  ["RPAD", [S, I, S], ["hi", 4, ""], null],
  ["REPEAT", [S, I], ["ab", 3], "ababab"],
  ["REVERSE", [S], ["abc"], "cba"],
  ["REGEXP", [S, S], ["abc123", "\\d+"], true],
  ["REGEXP", [S, S], ["abc", "^\\d"], false],
  ["REGEXP_EXTRACT", [S, S, I], ["foothebar", "foo(.*?)(bar)", 2], "bar"],
  ["REGEXP_EXTRACT", [S, S], ["foothebar", "the"], "the"],
  ["REGEXP_EXTRACT", [S, S, I], ["abc", "x(y)", 1], null],
  ["REGEXP_REPLACE", [S, S, S], ["a1b22", "\\d+", "#"], "a#b#"],
  ["SPLIT_INDEX", [S, S, I], ["a,b,c", ",", 1], "b"],
  ["SPLIT_INDEX", [S, S, I], ["a,b,c", ",", 3], null],
  ["LIKE", [S, S], ["hello", "h%o"], true],
  ["LIKE", [S, S], ["hello", "h_llo"], true],
  ["LIKE", [S, S], ["hello", "h_lo"], false],
  ["LIKE", [S, S], ["a.c", "a.c"], true],
  ["LIKE", [S, S], ["abc", "a.c"], false],
  ["LIKE", [S, S, S], ["50%", "50!%", "!"], true],
  ["LIKE", [S, S, S], ["500", "50!%", "!"], false],
  ["LIKE", [S, S], ["line1\nline2", "line1%"], true],
  // math
  ["ABS", [I], [-3], 3],
  ["MOD", [I, I], [-7, 3], -1],
  ["MOD", [I, I], [null, 3], null],
  ["ROUND", [D], [2.5], 3],
  ["ROUND", [D], [-2.5], -3],
  ["ROUND", [D, I], [1.005, 2], 1.01],
  ["ROUND", [I, I], [1234, -2], 1200],
  ["TRUNCATE", [D, I], [-1.789, 1], -1.7],
  ["FLOOR", [D], [-1.5], -2],
  ["CEIL", [D], [1.2], 2],
  ["SIGN", [D], [-0.5], -1],
  ["POWER", [I, I], [2, 10], 1024],
  ["SQRT", [D], [16], 4],
  ["LN", [D], [Math.E], 1],
  ["LOG10", [I], [1000], 3],
  ["LOG", [I, I], [2, 8], 3],
  ["EXP", [I], [0], 1],
  ["PI", [], [], Math.PI],
  // conditionals
  ["COALESCE", [S, S], [null, "b"], "b"],
  ["NULLIF", [I, I], [1, 1], null],
  ["NULLIF", [I, I], [1, 2], 1],
  ["IF", [B, S, S], [true, "a", "b"], "a"],
  ["IF", [B, S, S], [null, "a", "b"], "b"],
  ["GREATEST", [I, I, I], [3, 9, 4], 9],
  ["LEAST", [S, S], ["b", "a"], "a"],
  ["GREATEST", [I, I], [3, null], null],
  // date and time
  [
    "DATE_FORMAT",
    [T, S],
    ["2026-03-07 09:05:01.250", "yyyy-MM-dd HH:mm:ss.SSS"],
    "2026-03-07 09:05:01.250",
  ],
  [
    "DATE_FORMAT",
    [T, S],
    ["2026-03-07 21:05:00", "EEE, d MMM yy hh:mm a 'o''clock'"],
    "Sat, 7 Mar 26 09:05 PM o'clock",
  ],
  ["DATE_FORMAT", [S, S], ["not a time", "yyyy"], null],
  ["TO_TIMESTAMP", [S], ["2026-03-07 09:05:00"], "2026-03-07 09:05:00.000"],
  ["TO_TIMESTAMP", [S, S], ["07/03/2026 09h", "dd/MM/yyyy HH'h'"], "2026-03-07 09:00:00.000"],
  ["TO_TIMESTAMP", [S, S], ["20260307", "yyyyMMdd"], "2026-03-07 00:00:00.000"],
  ["TO_TIMESTAMP", [S], ["2026-02-30 00:00:00"], null],
  ["UNIX_TIMESTAMP", [T], ["1970-01-02 00:00:01"], 86_401],
  ["UNIX_TIMESTAMP", [S, S], ["1970/01/01", "yyyy/MM/dd"], 0],
  ["FROM_UNIXTIME", [I], [86_401], "1970-01-02 00:00:01"],
  ["FROM_UNIXTIME", [I, S], [0, "yyyy"], "1970"],
  ["TIMESTAMPADD", [S, I, T], ["DAY", 2, "2026-12-31 10:00:00"], "2027-01-02 10:00:00.000"],
  ["TIMESTAMPADD", [S, I, T], ["MONTH", 1, "2026-01-31 00:00:00"], "2026-02-28 00:00:00.000"],
  ["TIMESTAMPADD", [S, I, T], ["YEAR", -1, "2024-02-29 00:00:00"], "2023-02-28 00:00:00.000"],
  ["TIMESTAMPDIFF", [S, T, T], ["HOUR", "2026-01-01 00:00:00", "2026-01-01 05:59:59"], 5],
  ["TIMESTAMPDIFF", [S, T, T], ["MONTH", "2026-01-31 00:00:00", "2026-02-28 00:00:00"], 0],
  ["TIMESTAMPDIFF", [S, T, T], ["MONTH", "2026-01-15 00:00:00", "2026-03-15 00:00:00"], 2],
  ["TIMESTAMPDIFF", [S, T, T], ["SECOND", "2026-01-01 00:00:10", "2026-01-01 00:00:00"], -10],
  ["EXTRACT", [S, T], ["YEAR", "2026-03-07 09:05:01"], 2026],
  ["EXTRACT", [S, T], ["DOW", "2026-03-07 09:05:01"], 7], // a Saturday
  ["EXTRACT", [S, T], ["WEEK", "2026-01-01 00:00:00"], 1],
  ["EXTRACT", [S, T], ["WEEK", "2027-01-01 00:00:00"], 53],
  ["EXTRACT", [S, T], ["MILLISECOND", "2026-01-01 00:00:01.5"], 1500],
  ["YEAR", [T], ["2026-03-07 09:05:01"], 2026],
  ["QUARTER", [T], ["2026-08-07 09:05:01"], 3],
  ["MONTH", [T], ["2026-03-07 09:05:01"], 3],
  ["DAYOFMONTH", [T], ["2026-03-07 09:05:01"], 7],
  ["DAYOFYEAR", [T], ["2026-02-01 00:00:00"], 32],
  ["HOUR", [T], ["2026-03-07 09:05:01"], 9],
  ["MINUTE", [T], ["2026-03-07 09:05:01"], 5],
  ["SECOND", [T], ["2026-03-07 09:05:01"], 1],
  ["FLOOR", [T, S], ["2026-03-07 09:05:01.5", "HOUR"], "2026-03-07 09:00:00.000"],
  ["FLOOR", [T, S], ["2026-08-07 09:05:01", "QUARTER"], "2026-07-01 00:00:00.000"],
  ["CEIL", [T, S], ["2026-03-07 09:05:01", "DAY"], "2026-03-08 00:00:00.000"],
  ["CEIL", [T, S], ["2026-03-07 00:00:00", "DAY"], "2026-03-07 00:00:00.000"],
  ["CEIL", [T, S], ["2026-12-07 00:00:00", "MONTH"], "2027-01-01 00:00:00.000"],
];

Deno.test("every built-in scalar function gives Flink's value for a table of calls", () => {
  for (const [name, types, args, expected] of cases) {
    const fn = SCALAR_FUNCTIONS[name];
    assert.ok(fn, name);
    const type = fn.resultType(types, args);
    assert.notEqual(typeof type, "string", `${name}: ${type}`);
    const got = fn.evaluate(args);
    if (typeof expected === "number" && typeof got === "number" && !Number.isInteger(expected)) {
      assert.ok(Math.abs(got - expected) < 1e-12, `${name}(${args.join(", ")}) = ${got}`);
    } else {
      assert.deepEqual(got, expected, `${name}(${args.map((a) => JSON.stringify(a)).join(", ")})`);
    }
  }
});

Deno.test("NULL in gives NULL out for every function but COALESCE, IF, NULLIF and CONCAT_WS", () => {
  const exempt = new Set(["COALESCE", "IF", "NULLIF", "CONCAT_WS"]);
  const seen = new Set<string>();
  for (const [name, types, args] of cases) {
    if (exempt.has(name) || args.length === 0) continue;
    seen.add(name);
    const allNull = args.map(() => null);
    assert.equal(SCALAR_FUNCTIONS[name]!.evaluate(allNull), null, `${name}(NULL...)`);
    assert.notEqual(typeof SCALAR_FUNCTIONS[name]!.resultType(types, args), "string");
  }
  assert.ok(seen.size > 50, `covered ${seen.size} functions`);
});

Deno.test("result types follow the arguments' types", () => {
  const type = (name: string, types: DataType[], literals: SqlValue[] = []) =>
    SCALAR_FUNCTIONS[name]!.resultType(types, literals);
  assert.equal(type("ABS", [I]), I);
  assert.equal(type("ABS", [D]), D);
  assert.equal(type("ROUND", [D, I]), D);
  assert.equal(type("MOD", [I, D]), D);
  assert.equal(type("COALESCE", [I, D]), D);
  assert.equal(type("IF", [B, I, I]), I);
  assert.equal(type("FLOOR", [T, S], [null, "DAY"]), T);
  assert.equal(type("FLOOR", [D]), D);
  assert.equal(type("CHAR_LENGTH", [S]), I);
  assert.equal(type("REGEXP", [S, S]), B);
  assert.equal(type("UNIX_TIMESTAMP", [T]), I);
  // A NULL literal (typed STRING by the compiler as a placeholder) fits any type.
  assert.equal(type("COALESCE", [S, I], [null, undefined!]), I);
  assert.equal(type("IF", [B, S, D], [undefined!, null, undefined!]), D);
});

Deno.test("signature errors name the function and the argument's position", () => {
  const error = (name: string, types: DataType[], literals: SqlValue[] = []) =>
    SCALAR_FUNCTIONS[name]!.resultType(types, literals);
  assert.equal(error("LPAD", [S, S, S]), "argument 2 of LPAD is STRING, expected BIGINT");
  assert.equal(error("UPPER", [I]), "argument 1 of UPPER is BIGINT, expected STRING or TIMESTAMP");
  assert.equal(error("SUBSTRING", [S]), "SUBSTRING takes 2 to 3 argument(s), got 1");
  assert.equal(error("IF", [S, I, I]), "argument 1 of IF is STRING, expected BOOLEAN");
  assert.equal(
    error("IF", [B, I, S]),
    "argument 3 of IF is STRING, which does not fit argument 2's BIGINT",
  );
  assert.equal(
    error("COALESCE", [S, I]),
    "argument 2 of COALESCE is BIGINT, which does not fit argument 1's STRING",
  );
  assert.equal(
    error("EXTRACT", [S, T], ["FORTNIGHT", null]),
    "argument 1 of EXTRACT is the unit FORTNIGHT, expected one of YEAR, QUARTER, MONTH, WEEK, DAY, DOW, DAYOFWEEK, DOY, DAYOFYEAR, HOUR, MINUTE, SECOND, MILLISECOND, EPOCH",
  );
  assert.match(
    String(error("TIMESTAMPADD", [S, I, T], [undefined!, null, null])),
    /argument 1 of TIMESTAMPADD must be a time unit/,
  );
  assert.match(
    String(error("FLOOR", [T, S], [null, "WEEK"])),
    /argument 2 of FLOOR is the unit WEEK/,
  );
  assert.match(String(error("UNIX_TIMESTAMP", [])), /reads the clock/);
  assert.equal(
    error("DATE_FORMAT", [I, S]),
    "argument 1 of DATE_FORMAT is BIGINT, expected TIMESTAMP or STRING",
  );
});

Deno.test("run-time errors name the function and the value", () => {
  assert.throws(() => SCALAR_FUNCTIONS.MOD!.evaluate([7, 0]), /MOD by zero: MOD\(7, 0\)/);
  assert.throws(
    () => SCALAR_FUNCTIONS.SUBSTRING!.evaluate(["abc", 1, -1]),
    /SUBSTRING length must not be negative: current value is -1/,
  );
  assert.throws(
    () => SCALAR_FUNCTIONS.REGEXP!.evaluate(["abc", "(unclosed"]),
    /REGEXP: the regular expression "\(unclosed" does not compile/,
  );
  assert.throws(
    () => SCALAR_FUNCTIONS.LIKE!.evaluate(["a", "a", "!!"]),
    /ESCAPE must be one character/,
  );
  assert.throws(
    () => SCALAR_FUNCTIONS.DATE_FORMAT!.evaluate(["2026-01-01 00:00:00", "yyyy-Q"]),
    /DATE_FORMAT: the pattern letter 'Q' of format 'yyyy-Q' is not supported/,
  );
  assert.throws(
    () => SCALAR_FUNCTIONS.YEAR!.evaluate(["yesterday"]),
    /YEAR got "yesterday", which is not a TIMESTAMP/,
  );
});

const MIN_MS = new Date(Date.UTC(2000, 0, 1)).setUTCFullYear(1); // Date.UTC reads 1 as 1901
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const timestamps = fc.integer({ min: MIN_MS, max: MAX_MS });
const call = (name: string, ...args: SqlValue[]) => SCALAR_FUNCTIONS[name]!.evaluate(args);

Deno.test("timestamps: text and epoch milliseconds round-trip, and DATE_FORMAT / TO_TIMESTAMP invert each other", () => {
  fc.assert(
    fc.property(timestamps, (ms) => {
      const text = formatTimestamp(ms);
      assert.equal(parseTimestamp(text), ms);
      assert.equal(call("DATE_FORMAT", text, "yyyy-MM-dd HH:mm:ss.SSS"), text);
      assert.equal(
        call(
          "TO_TIMESTAMP",
          call("DATE_FORMAT", text, "dd/MM/yyyy HH:mm:ss"),
          "dd/MM/yyyy HH:mm:ss",
        ),
        formatTimestamp(ms - (ms % 1000 + 1000) % 1000),
      );
      const d = new Date(ms);
      assert.deepEqual(
        ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"].map((u) => call("EXTRACT", u, text)),
        [
          d.getUTCFullYear(),
          d.getUTCMonth() + 1,
          d.getUTCDate(),
          d.getUTCHours(),
          d.getUTCMinutes(),
          d.getUTCSeconds(),
        ],
      );
    }),
    { numRuns: 500 },
  );
});

Deno.test("TIMESTAMPDIFF undoes TIMESTAMPADD for fixed units and for months from a day that every month has", () => {
  const units = fc.constantFrom("SECOND", "MINUTE", "HOUR", "DAY", "WEEK");
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2100, 0, 1) }),
      units,
      fc.integer({ min: -5000, max: 5000 }),
      (ms, unit, n) => {
        const ts = formatTimestamp(ms);
        assert.equal(call("TIMESTAMPDIFF", unit, ts, call("TIMESTAMPADD", unit, n, ts)), n);
      },
    ),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 1900, max: 2100 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 1, max: 28 }),
      fc.integer({ min: -600, max: 600 }),
      (y, m, d, n) => {
        const ts = formatTimestamp(Date.UTC(y, m - 1, d, 12));
        assert.equal(call("TIMESTAMPDIFF", "MONTH", ts, call("TIMESTAMPADD", "MONTH", n, ts)), n);
        assert.equal(
          call("TIMESTAMPDIFF", "YEAR", ts, call("TIMESTAMPADD", "YEAR", Math.trunc(n / 12), ts)),
          Math.trunc(n / 12) || 0,
        );
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("LIKE '%' || escaped(sub) || '%' holds exactly when the string contains sub", () => {
  const text = fc.string({
    unit: fc.constantFrom("a", "b", "%", "_", "!", "\n", "é"),
    maxLength: 8,
  });
  fc.assert(
    fc.property(text, text, (s, sub) => {
      const escaped = sub.replace(/[!%_]/g, (c) => `!${c}`);
      assert.equal(call("LIKE", s, `%${escaped}%`, "!"), s.includes(sub));
      assert.equal(call("LIKE", s, escaped, "!"), s === sub);
      assert.equal(call("LIKE", s, "_".repeat([...s].length)), true);
    }),
    { numRuns: 500 },
  );
});

Deno.test("FLOOR and CEIL to a unit bracket the timestamp, and FLOOR is on the unit's boundary", () => {
  const units = fc.constantFrom("SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "QUARTER", "YEAR");
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2100, 0, 1) }),
      units,
      (ms, unit) => {
        const ts = formatTimestamp(ms);
        const floor = String(call("FLOOR", ts, unit));
        const ceil = String(call("CEIL", ts, unit));
        assert.ok(floor <= ts && ts <= ceil, `${floor} <= ${ts} <= ${ceil}`);
        assert.equal(call("FLOOR", floor, unit), floor);
        assert.equal(call("CEIL", floor, unit), floor);
        assert.equal(floor === ts, ceil === ts);
      },
    ),
    { numRuns: 500 },
  );
});
