import assert from "node:assert/strict";
import { CsvParseError, decodeCsvLine, encodeCsvRecord, parseCsv } from "./csv.ts";

Deno.test("encodeCsvRecord quotes only fields with a comma, quote or line end, and doubles quotes", () => {
  assert.equal(
    encodeCsvRecord(["a", "b c", 1.5, 7n, true, null, undefined]),
    "a,b c,1.5,7,true,,\r\n",
  );
  assert.equal(
    encodeCsvRecord(['x"y', "p,q", "l1\nl2", "r\r"], "\n"),
    '"x""y","p,q","l1\nl2","r\r"\n',
  );
  assert.equal(encodeCsvRecord([""]), '""\r\n', "one empty field is not an empty line");
  assert.throws(() => encodeCsvRecord([]), /at least one field: current value is \[\]/);
  assert.throws(
    () => encodeCsvRecord(["a", {} as never]),
    /Cannot encode CSV field 1: .* current value is a object/,
  );
});

Deno.test("parseCsv reads quoted fields across lines, CRLF and LF, and a last line without its end", () => {
  assert.deepEqual(parseCsv('a,"b\r\nc",d\r\n"e""f",\ng'), [["a", "b\r\nc", "d"], ['e"f', ""], [
    "g",
  ]]);
  assert.deepEqual(parseCsv(""), []);
  assert.deepEqual(parseCsv("\n\n"), [[""], [""]]);
  assert.deepEqual(decodeCsvLine(""), [""]);
  assert.deepEqual(decodeCsvLine("1,2,3\r\n"), ["1", "2", "3"]);
});

Deno.test("parseCsv names the line and column of what is not CSV", () => {
  const cases: [string, string][] = [
    ['ab\nc"d', "CSV line 2, column 2: a quote inside unquoted field 1"],
    [
      'x,"ab"c',
      `CSV line 1, column 7: expected ',' or a line end after the closing quote of field 2: found "c"`,
    ],
    [
      'a\n"open\nmore',
      "CSV line 3, column 5: a quoted field opened at line 2, column 1 is not closed",
    ],
    ["a\rb", "CSV line 1, column 2: a carriage return not followed by a line feed"],
  ];
  for (const [text, message] of cases) {
    assert.throws(
      () => parseCsv(text),
      (e: unknown) => e instanceof CsvParseError && e.message === message,
      JSON.stringify(text),
    );
  }
  assert.throws(
    () => decodeCsvLine("a\nb", { firstLine: 10, where: "in s.csv " }),
    (e: unknown) =>
      e instanceof CsvParseError && e.line === 11 && e.column === 1 &&
      e.message === "CSV in s.csv line 11, column 1: a second record where one line was expected",
  );
});
