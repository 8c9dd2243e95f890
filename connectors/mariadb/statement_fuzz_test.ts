/**
 * Fuzz test of the INSERT statement splitter (`parseInsertStatement`): any
 * text gives a statement whose multi-row form repeats the tuple, or a
 * RangeError naming the problem and the statement.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { multiRowSql, parseInsertStatement } from "./statement.ts";

const piece = fc.oneof(
  fc.constantFrom(
    "INSERT INTO t (a, b) ",
    "VALUES",
    " (?, ?)",
    "(",
    ")",
    "?",
    ",",
    "'",
    "`",
    '"',
    "-- c\n",
    "/*",
    "*/",
    " ON DUPLICATE KEY UPDATE b = VALUES(b)",
    "\\",
    " ",
  ),
  fc.string({ maxLength: 4 }),
);

Deno.test("parseInsertStatement fuzz: any text gives a batchable statement or a RangeError naming it", () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 12 }).map((p) => p.join("")), (sql) => {
      try {
        const s = parseInsertStatement(sql);
        assert.ok(s.placeholders > 0);
        assert.equal(s.head + s.tuple + s.tail, sql.slice(0, s.head.length) + s.tuple + s.tail);
        assert.ok(s.tuple.startsWith("(") && s.tuple.endsWith(")"));
        const two = multiRowSql(s, 2);
        assert.equal(two, `${s.head} ${s.tuple},${s.tuple}${s.tail}`);
      } catch (error) {
        assert.ok(error instanceof RangeError, `not a RangeError: ${error}`);
        assert.match(
          error.message,
          /^sql must be an INSERT … VALUES \(\?, …\) statement with one tuple: /,
        );
        assert.ok(error.message.endsWith(`current value is ${JSON.stringify(sql)}`));
      }
    }),
    { numRuns: fuzzRuns() },
  );
});
