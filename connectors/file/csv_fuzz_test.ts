/**
 * Fuzz tests of the CSV decoder (`csv.ts`): encoded records parse back to
 * what went in; any string gives records or a {@linkcode CsvParseError}
 * whose line and column lie inside the text.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { CsvParseError, decodeCsvLine, encodeCsvRecord, parseCsv } from "./csv.ts";

/** Strings rich in the characters CSV cares about. */
const csvish = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('"', ",", "\r", "\n", "a", " ") },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "binary" }) },
  ),
  maxLength: 20,
});

/** The line and column of offset `at` in `text` (1-based), counting lines by LF. */
function position(text: string, at: number): { line: number; column: number } {
  const before = text.slice(0, at);
  const line = before.split("\n").length;
  return { line, column: at - (before.lastIndexOf("\n") + 1) + 1 };
}

function checkParses(text: string, read: (text: string) => string[][]): void {
  let records: string[][];
  try {
    records = read(text);
  } catch (error) {
    assert.ok(error instanceof CsvParseError, `not a CsvParseError: ${error}`);
    assert.match(error.message, /^CSV line \d+, column \d+: \S/);
    // The position names a place in the text (or just past its end).
    const last = position(text, text.length);
    assert.ok(error.line >= 1 && error.line <= last.line, `line ${error.line} of ${last.line}`);
    assert.ok(error.column >= 1);
    if (error.line === last.line) assert.ok(error.column <= last.column, "column past the end");
    return;
  }
  // A value: re-encoding gives a text that parses to the same records.
  for (const record of records) assert.ok(record.length >= 1);
  const again = records.map((r) => encodeCsvRecord(r)).join("");
  assert.deepEqual(parseCsv(again), records);
}

Deno.test("CSV fuzz: encoded records parse back to their fields", () => {
  fc.assert(
    fc.property(
      fc.array(fc.array(csvish, { minLength: 1, maxLength: 5 }), { maxLength: 5 }),
      fc.constantFrom("\r\n" as const, "\n" as const),
      (records, lineEnding) => {
        const text = records.map((r) => encodeCsvRecord(r, lineEnding)).join("");
        assert.deepEqual(parseCsv(text), records);
        for (const record of records) {
          assert.deepEqual(decodeCsvLine(encodeCsvRecord(record, lineEnding)), record);
        }
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("CSV fuzz: any string gives records or a CsvParseError with a line and column inside it", () => {
  fc.assert(
    fc.property(fc.oneof(csvish, fc.string({ unit: "binary", maxLength: 30 })), (text) => {
      checkParses(text, (t) => parseCsv(t));
      checkParses(text, (t) => [decodeCsvLine(t)]);
    }),
    { numRuns: fuzzRuns() },
  );
});
