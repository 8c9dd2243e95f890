/**
 * CSV after RFC 4180, written here (no library): {@linkcode encodeCsvRecord}
 * for the file sink's CSV format, {@linkcode parseCsv} and
 * {@linkcode decodeCsvLine} for reading it back.
 *
 * ## Format
 *
 * - Fields are separated by `,`; records end with CRLF (or LF, see
 *   `lineEnding`); the last record of a text may lack its line end.
 * - A field is quoted (`"…"`) when it holds `,`, `"`, CR or LF, and a `"`
 *   inside is doubled. A record of one empty field is written `""`, so it
 *   is not an empty line.
 * - `null` and `undefined` are written as empty fields; numbers, bigints and
 *   booleans as `String(value)`. Reading gives strings only.
 *
 * ## Reading, strictly
 *
 * Reading accepts exactly what RFC 4180 allows (plus LF alone as a line
 * end) and throws a {@linkcode CsvParseError} naming the line and column
 * (1-based; columns count UTF-16 code units) for anything else:
 * - a `"` inside an unquoted field;
 * - anything but `,` or a line end after a closing quote;
 * - a CR not followed by LF outside quotes;
 * - a quoted field that is never closed (the error names where it opened).
 *
 * An empty line is a record of one empty field (RFC 4180 has no blank-line
 * rule); a text ending with a line end has no empty record after it.
 *
 * With a line reader such as `FileSource.forLines`, pass
 * `deserializer: (line) => decodeCsvLine(line)`: the source names the file
 * and line of a failure, the {@linkcode CsvParseError} the column. A record
 * whose quoted field holds a line end spans lines, which a line reader
 * cannot give; read such files whole with {@linkcode parseCsv}.
 *
 * ## Invariants
 *
 * - For every non-empty array of fields `f`, `parseCsv(encodeCsvRecord(f))`
 *   is `[f.map(String-or-empty)]`; concatenated records parse back one by
 *   one.
 * - Reading never returns a partial record: a text gives all its records
 *   or an error.
 *
 * @example
 * ```ts
 * import { decodeCsvLine, encodeCsvRecord, parseCsv } from "./csv.ts";
 *
 * const line = encodeCsvRecord(["a,b", 'say "hi"', 3, null]);
 * console.assert(line === '"a,b","say ""hi""",3,\r\n');
 * console.assert(JSON.stringify(parseCsv(line)) === '[["a,b","say \\"hi\\"","3",""]]');
 * console.assert(decodeCsvLine("x,y").length === 2);
 * ```
 *
 * @module
 */

/** A value {@linkcode encodeCsvRecord} writes as one field. */
export type CsvField = string | number | bigint | boolean | null | undefined;

/** A text that is not CSV by the rules of `csv.ts`, with where. */
export class CsvParseError extends Error {
  /** The line (1-based) of the offending character. */
  readonly line: number;
  /** The column (1-based, UTF-16 code units) of the offending character. */
  readonly column: number;

  /**
   * Builds the error; the message reads `CSV <where>line L, column C: <problem>`.
   * @param problem what is wrong there.
   * @param position the line and column.
   * @param where a prefix naming the input (e.g. a file name and a space), or `""`.
   */
  constructor(problem: string, position: { line: number; column: number }, where = "") {
    super(`CSV ${where}line ${position.line}, column ${position.column}: ${problem}`);
    this.name = "CsvParseError";
    this.line = position.line;
    this.column = position.column;
  }
}

const NEEDS_QUOTES = /[",\r\n]/;

function fieldText(field: CsvField, index: number): string {
  if (field === null || field === undefined) return "";
  switch (typeof field) {
    case "string":
      return field;
    case "number":
    case "bigint":
    case "boolean":
      return String(field);
    default:
      throw new TypeError(
        `Cannot encode CSV field ${index}: it must be a string, number, bigint, boolean, null or undefined: current value is a ${typeof field}`,
      );
  }
}

/**
 * Encodes one record, with its line end.
 * @param fields the record's fields, at least one.
 * @param lineEnding `"\r\n"` (RFC 4180, the default) or `"\n"`.
 * @returns the record's text, e.g. `a,"b,c"\r\n`.
 * @throws {RangeError} when `fields` is empty (no CSV text stands for it).
 * @throws {TypeError} naming a field that is not a {@linkcode CsvField}.
 */
export function encodeCsvRecord(
  fields: readonly CsvField[],
  lineEnding: "\r\n" | "\n" = "\r\n",
): string {
  if (fields.length === 0) {
    throw new RangeError(
      "Cannot encode a CSV record: it must have at least one field: current value is []",
    );
  }
  if (fields.length === 1) {
    const only = fieldText(fields[0], 0);
    if (only === "") return `""${lineEnding}`;
  }
  let out = "";
  for (let i = 0; i < fields.length; i++) {
    const text = fieldText(fields[i], i);
    if (i > 0) out += ",";
    out += NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  }
  return out + lineEnding;
}

/** Options of {@linkcode parseCsv} and {@linkcode decodeCsvLine}. */
export interface CsvReadOptions {
  /** The line number of the text's first line, for errors (default 1). */
  readonly firstLine?: number;
  /** Names the input in errors, e.g. `"in sales.csv "`. Default `""`. */
  readonly where?: string;
}

const QUOTE = 34, COMMA = 44, CR = 13, LF = 10;

/**
 * Parses records from `text`, stopping after `limit` records (the rest of
 * the text must then be empty).
 */
function parse(text: string, options: CsvReadOptions, limit: number): string[][] {
  const where = options.where ?? "";
  let line = options.firstLine ?? 1;
  let lineStart = 0;
  const fail = (problem: string, at: number, atLine = line, atLineStart = lineStart): never => {
    throw new CsvParseError(problem, { line: atLine, column: at - atLineStart + 1 }, where);
  };
  const records: string[][] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (records.length === limit) fail("a second record where one line was expected", i);
    const record: string[] = [];
    for (;;) {
      // One field, starting at i.
      if (i < n && text.charCodeAt(i) === QUOTE) {
        const openLine = line, openStart = lineStart, openAt = i;
        let value = "";
        let from = ++i;
        for (;;) {
          if (i >= n) {
            fail(
              `a quoted field opened at line ${openLine}, column ${
                openAt - openStart + 1
              } is not closed`,
              i,
            );
          }
          const c = text.charCodeAt(i);
          if (c === QUOTE) {
            if (i + 1 < n && text.charCodeAt(i + 1) === QUOTE) {
              value += text.slice(from, i + 1);
              i += 2;
              from = i;
              continue;
            }
            value += text.slice(from, i);
            i++;
            break;
          }
          if (c === LF) {
            line++;
            lineStart = i + 1;
          }
          i++;
        }
        record.push(value);
        if (i < n) {
          const c = text.charCodeAt(i);
          if (c !== COMMA && c !== CR && c !== LF) {
            fail(
              `expected ',' or a line end after the closing quote of field ${record.length}: found ${
                JSON.stringify(text[i])
              }`,
              i,
            );
          }
        }
      } else {
        const from = i;
        while (i < n) {
          const c = text.charCodeAt(i);
          if (c === COMMA || c === LF || c === CR) break;
          if (c === QUOTE) fail(`a quote inside unquoted field ${record.length + 1}`, i);
          i++;
        }
        record.push(text.slice(from, i));
      }
      // After a field: a separator, a line end, or the end of the text.
      if (i >= n) break;
      const c = text.charCodeAt(i);
      if (c === COMMA) {
        i++;
        continue;
      }
      if (c === CR) {
        if (i + 1 >= n || text.charCodeAt(i + 1) !== LF) {
          fail("a carriage return not followed by a line feed", i);
        }
        i++;
      }
      // LF
      i++;
      line++;
      lineStart = i;
      break;
    }
    records.push(record);
  }
  return records;
}

/**
 * Parses a whole CSV text (quoted fields may span lines).
 * @param text the text.
 * @param options where the text starts and what it is, for errors.
 * @returns its records, each a non-empty array of fields.
 * @throws {CsvParseError} naming line and column (see the module docs).
 */
export function parseCsv(text: string, options: CsvReadOptions = {}): string[][] {
  return parse(text, options, Infinity);
}

/**
 * Decodes one record from one line, e.g. a line a line reader gave
 * (without its line end; a trailing line end is allowed).
 * @param line the line.
 * @param options the line's number and what it is, for errors.
 * @returns the record's fields (at least one).
 * @throws {CsvParseError} naming line and column, also when the line holds
 *   a line end before its last character outside quotes (more than one
 *   record).
 */
export function decodeCsvLine(line: string, options: CsvReadOptions = {}): string[] {
  const records = parse(line, options, 1);
  return records[0] ?? [""];
}
