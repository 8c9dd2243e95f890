/**
 * Row formats of the file sink (Flink's `Encoder` of a row-format
 * `FileSink`): each record becomes one piece of text, appended to the
 * part file.
 *
 * - {@linkcode lineEncoder}: one line per record (`.txt`);
 * - {@linkcode jsonLinesEncoder}: one JSON document per line (`.jsonl`);
 * - {@linkcode csvEncoder}: one RFC 4180 record per line (`.csv`), with an
 *   optional header row at the top of every part file.
 *
 * A record the format cannot represent (a line with a line end in it, a
 * value JSON cannot encode, a CSV record of the wrong width) throws a
 * {@linkcode RecordEncodingError}: writing it would corrupt the file for
 * every reader, and a retry would meet the same record, so the job fails
 * without restarts, naming the record.
 *
 * @example
 * ```ts
 * import { csvEncoder, jsonLinesEncoder, lineEncoder } from "./row_encoders.ts";
 *
 * console.assert(lineEncoder<number>().encode(7) === "7\n");
 * console.assert(jsonLinesEncoder<{ a: number }>().encode({ a: 1 }) === '{"a":1}\n');
 * const csv = csvEncoder<[string, number]>({ header: ["name", "n"], toFields: (r) => r });
 * console.assert(csv.header === "name,n\r\n" && csv.encode(["x,y", 2]) === '"x,y",2\r\n');
 * ```
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";
import { type CsvField, encodeCsvRecord } from "./csv.ts";

/** Turns records into the text of a row-format part file (Flink's `Encoder`). */
export interface RowEncoder<T> {
  /** The part files' extension, without the dot, e.g. `"csv"`. */
  readonly extension: string;
  /** Text written at the start of every part file (e.g. a CSV header row), or `undefined`. */
  readonly header: string | undefined;
  /**
   * One record's text, with its line end.
   * @throws {RecordEncodingError} when the format cannot represent it.
   */
  encode(value: T): string;
}

/** A record the format cannot represent; the job fails without restarts. */
export class RecordEncodingError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the format, what is wrong and the record.
   * @param options the underlying error, if any.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RecordEncodingError";
  }
}

function preview(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > 80 ? text.slice(0, 80) + "…" : text;
}

/**
 * One line per record (Flink's `SimpleStringEncoder`).
 * @param toLine the record's line, without a line end (default `String`).
 * @param extension the files' extension (default `"txt"`).
 * @returns the encoder; `encode` throws a {@linkcode RecordEncodingError}
 *   for a line that holds CR or LF.
 */
export function lineEncoder<T>(
  toLine: (value: T) => string = String,
  extension = "txt",
): RowEncoder<T> {
  return {
    extension,
    header: undefined,
    encode(value: T): string {
      const line = toLine(value);
      if (typeof line !== "string" || /[\r\n]/.test(line)) {
        throw new RecordEncodingError(
          `Line format: a record's line must be a string without CR or LF: current value is ${
            preview(line)
          }`,
        );
      }
      return line + "\n";
    },
  };
}

/**
 * One JSON document per line (JSON Lines).
 * @param extension the files' extension (default `"jsonl"`).
 * @returns the encoder; `encode` throws a {@linkcode RecordEncodingError}
 *   for a value `JSON.stringify` rejects (a bigint, a cycle) or turns into
 *   nothing (`undefined`, a function).
 */
export function jsonLinesEncoder<T>(extension = "jsonl"): RowEncoder<T> {
  return {
    extension,
    header: undefined,
    encode(value: T): string {
      let json: string | undefined;
      try {
        json = JSON.stringify(value);
      } catch (error) {
        throw new RecordEncodingError(
          `JSON lines format: cannot encode record ${preview(value)}: ${
            error instanceof Error ? error.message : error
          }`,
          { cause: error },
        );
      }
      if (json === undefined) {
        throw new RecordEncodingError(
          `JSON lines format: a record must be JSON-encodable: current value is ${preview(value)}`,
        );
      }
      return json + "\n";
    },
  };
}

/** Options of {@linkcode csvEncoder}. */
export interface CsvEncoderOptions<T> {
  /** A record's fields, in column order. */
  readonly toFields: (value: T) => readonly CsvField[];
  /** Column names, written as the first row of every part file; every record must have as many fields. */
  readonly header?: readonly string[];
  /** `"\r\n"` (RFC 4180, the default) or `"\n"`. */
  readonly lineEnding?: "\r\n" | "\n";
  /** The files' extension (default `"csv"`). */
  readonly extension?: string;
}

/**
 * One RFC 4180 record per record (see `csv.ts` for quoting).
 * @param options how a record becomes fields, and the header.
 * @returns the encoder; `encode` throws a {@linkcode RecordEncodingError}
 *   for a record with no fields, a field that is not a `CsvField`, or a
 *   width other than the header's.
 * @throws {RangeError} when `header` is empty.
 */
export function csvEncoder<T>(options: CsvEncoderOptions<T>): RowEncoder<T> {
  const { toFields, header, lineEnding = "\r\n", extension = "csv" } = options;
  if (header !== undefined && header.length === 0) {
    throw new RangeError("csvEncoder: 'header' must name at least one column: current value is []");
  }
  return {
    extension,
    header: header === undefined ? undefined : encodeCsvRecord(header, lineEnding),
    encode(value: T): string {
      const fields = toFields(value);
      if (header !== undefined && fields.length !== header.length) {
        throw new RecordEncodingError(
          `CSV format: a record must have ${header.length} fields (${header.join(", ")}): ` +
            `current record ${preview(value)} has ${fields.length}`,
        );
      }
      try {
        return encodeCsvRecord(fields, lineEnding);
      } catch (error) {
        throw new RecordEncodingError(
          `CSV format: cannot encode record ${preview(value)}: ${
            error instanceof Error ? error.message : error
          }`,
          { cause: error },
        );
      }
    },
  };
}
