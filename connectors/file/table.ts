/**
 * The `filesystem` table connector: a source of the rows of CSV or JSON
 * lines files and an append-only, exactly-once sink into part files
 * (Flink's `filesystem` connector with the `csv` and `json` formats), on
 * {@linkcode FileSource} and {@linkcode FileSink}.
 *
 * ```sql
 * CREATE TABLE orders (id BIGINT, customer VARCHAR, amount DOUBLE)
 *   WITH ('connector' = 'filesystem', 'path' = 'data/orders.csv', 'format' = 'csv');
 * CREATE TABLE totals (customer VARCHAR, amount DOUBLE)
 *   WITH ('connector' = 'filesystem', 'path' = 'out/totals', 'format' = 'json');
 * ```
 *
 * ## Options
 *
 * | option | role | meaning |
 * |---|---|---|
 * | `path` | both | source: a file, or a directory whose visible files (names not starting with `.` or `_`) are read in name order; sink: the output directory |
 * | `format` | both | `csv` or `json` (JSON lines) |
 * | `sink.rolling-policy.file-size` | sink | roll a part file at this many bytes (default 128 MiB; `128mb`, `1kb`, or bytes) |
 * | `sink.rolling-policy.rollover-interval` | sink | roll a part file this long after it opened (default 60 s; `30 s`, `1 min`, or ms) |
 * | `sink.rolling-policy.inactivity-interval` | sink | roll a part file not written to for this long (default 60 s) |
 *
 * ## Formats
 *
 * - `csv` (RFC 4180, `connectors/file/csv.ts`): one record per line, the
 *   columns in order. An empty field is NULL, except in a `VARCHAR` column
 *   (the empty string); the sink writes NULL as an empty field. Numbers
 *   must be written as numbers (`12`, `-3.5`), booleans as `true`/`false`
 *   (any case), timestamps as `YYYY-MM-DD HH:MM:SS[.fff]`.
 * - `json`: one object per line with a property per column (missing or
 *   `null`: NULL; other properties ignored), values of the column's JSON
 *   type (timestamps as strings). The sink writes every column.
 *
 * A line that does not fit fails the job once (no restart), naming the
 * file, the line, the column and the value (`FileSource`'s
 * `DeserializationError`).
 *
 * ## Guarantees
 *
 * The source is bounded and exactly-once (byte offsets are checkpointed).
 * The sink is append-only (an updating query is refused at planning,
 * naming the operator that produces updates) and exactly-once: rows become
 * visible in finished part files when a checkpoint completes, or at the
 * end of a bounded job (see `file_sink.ts`).
 *
 * ## Simplifications
 *
 * No partitioned tables (`PARTITIONED BY`), no other formats, no
 * monitoring of a directory for new files (Flink's
 * `source.monitor-interval`): the files are listed when the job is built.
 * A PRIMARY KEY is refused (part files cannot be upserted).
 * No header line in CSV files (Flink's `csv` format has none either).
 * The source runs at parallelism 1 (files are read one after the other,
 * so rows keep the files' order).
 *
 * @module
 */

import { join } from "node:path";
import { WatermarkStrategy } from "../../runtime/time/watermark.ts";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import {
  checkTableOptions,
  choiceOption,
  stringOption,
} from "../../runtime/table/connector_options.ts";
import type { Row, SqlValue } from "../../runtime/table/row.ts";
import type { ConnectorTable, TableConnector } from "../../runtime/table/table_connectors.ts";
import { parseDuration } from "../../runtime/table/table_config.ts";
import { castValue, type Column } from "../../runtime/table/types.ts";
import { jsonRow, rowJson } from "../_table/json_row.ts";
import { refusePrimaryKey } from "../_table/upsert_sink.ts";

export { jsonRow };
import { type CsvField, decodeCsvLine } from "./csv.ts";
import { FileSink } from "./file_sink.ts";
import { FileSource } from "./file_source.ts";
import { DefaultRollingPolicy } from "./rolling_policy.ts";
import { csvEncoder, type RowEncoder } from "./row_encoders.ts";

const SOURCE_OPTIONS = ["path", "format"];
const SINK_OPTIONS = [
  "sink.rolling-policy.file-size",
  "sink.rolling-policy.rollover-interval",
  "sink.rolling-policy.inactivity-interval",
];

/**
 * Parses one CSV field into a column's value (see the module docs).
 * @throws {TypeError} naming the column and the text when it does not fit.
 */
export function csvFieldValue(text: string, column: Column): SqlValue {
  const family = column.type.family;
  if (family === "STRING") return text;
  if (text === "") return null;
  const fail = (): never => {
    throw new TypeError(
      `column ${column.name} is ${column.type.name}: cannot read ${JSON.stringify(text)}`,
    );
  };
  switch (family) {
    case "BIGINT":
      return /^\s*[-+]?\d+\s*$/.test(text) && Number.isSafeInteger(Number(text))
        ? Number(text)
        : fail();
    case "DOUBLE": {
      const n = Number(text);
      return text.trim() !== "" && !Number.isNaN(n) ? n : fail();
    }
    case "BOOLEAN":
      return /^\s*true\s*$/i.test(text) ? true : /^\s*false\s*$/i.test(text) ? false : fail();
    case "TIMESTAMP":
      try {
        return castValue(text, column.type);
      } catch {
        return fail();
      }
  }
}

/**
 * The row of one CSV line.
 * @throws {TypeError} for a line with another number of fields than
 *   columns, or a field that does not fit its column, naming them.
 */
export function csvRow(line: string, columns: readonly Column[]): Row {
  const fields = decodeCsvLine(line);
  if (fields.length !== columns.length) {
    throw new TypeError(
      `the line has ${fields.length} field(s), the table ${columns.length} column(s) (${
        columns.map((c) => c.name).join(", ")
      })`,
    );
  }
  return { kind: "INSERT", fields: fields.map((f, i) => csvFieldValue(f, columns[i]!)) };
}

/** The files a source table reads: `path` itself, or the visible files of the directory, by name. */
function sourceFiles(table: ConnectorTable): string[] {
  const path = stringOption(table, "path");
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (error) {
    throw new PlanningError(
      `table ${table.name}: cannot read 'path' ${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (info.isFile) return [path];
  const files = [...Deno.readDirSync(path)]
    .filter((e) => e.isFile && !e.name.startsWith(".") && !e.name.startsWith("_"))
    .map((e) => e.name)
    .sort()
    .map((name) => join(path, name));
  if (files.length === 0) {
    throw new PlanningError(`table ${table.name}: directory ${path} holds no file to read`);
  }
  return files;
}

function sizeOption(table: ConnectorTable, key: string): number | undefined {
  const raw = table.options[key];
  if (raw === undefined) return undefined;
  const m = /^\s*(\d+)\s*(b|kb|mb|gb)?\s*$/i.exec(raw);
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[
    (m?.[2] ?? "b").toLowerCase() as "b"
  ];
  const bytes = m === null ? Number.NaN : Number(m[1]) * unit;
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new PlanningError(
      `option '${key}' of table ${table.name} must be a size such as '128mb' or a number of bytes >= 1: current value is '${raw}'`,
    );
  }
  return bytes;
}

function durationOption(table: ConnectorTable, key: string): number | undefined {
  const raw = table.options[key];
  if (raw === undefined) return undefined;
  const ms = /^\s*\d+\s*$/.test(raw) ? Number(raw) : parseDuration(raw);
  if (typeof ms !== "number" || !(ms > 0)) {
    throw new PlanningError(
      `option '${key}' of table ${table.name} must be a duration > 0 such as '30 s' or ms: current value is '${raw}'${
        typeof ms === "object" ? ` (${ms.error})` : ""
      }`,
    );
  }
  return ms;
}

function rollingPolicy(table: ConnectorTable): DefaultRollingPolicy {
  const size = sizeOption(table, "sink.rolling-policy.file-size");
  const rollover = durationOption(table, "sink.rolling-policy.rollover-interval");
  const inactivity = durationOption(table, "sink.rolling-policy.inactivity-interval");
  return new DefaultRollingPolicy({
    ...(size === undefined ? {} : { maxPartSizeBytes: size }),
    ...(rollover === undefined ? {} : { rolloverIntervalMs: rollover }),
    ...(inactivity === undefined ? {} : { inactivityIntervalMs: inactivity }),
  });
}

function encoder(table: ConnectorTable, format: "csv" | "json"): RowEncoder<Row> {
  if (format === "csv") {
    return csvEncoder<Row>({ toFields: (row) => row.fields as CsvField[], lineEnding: "\n" });
  }
  const columns = table.columns;
  return {
    extension: "json",
    header: undefined,
    encode: (row: Row): string => rowJson(row, columns) + "\n",
  };
}

/** The `filesystem` table connector (see the module docs). */
export const filesystemTableConnector: TableConnector = {
  identifier: "filesystem",
  validate(table) {
    checkTableOptions(table, [...SOURCE_OPTIONS, ...SINK_OPTIONS]);
    refusePrimaryKey(table);
    stringOption(table, "path");
    choiceOption(table, "format", ["csv", "json"]);
    rollingPolicy(table);
  },
  source(table, env) {
    const format = choiceOption(table, "format", ["csv", "json"]);
    const columns = table.columns;
    const toRow = format === "csv" ? csvRow : jsonRow;
    const source = FileSource.forLines<Row>(sourceFiles(table), {
      deserializer: (line) => toRow(line, columns),
    });
    return env.fromSource(
      source,
      WatermarkStrategy.noWatermarks<Row>(),
      `filesystem: ${table.name}`,
    )
      .setParallelism(1);
  },
  sink(table) {
    const format = choiceOption(table, "format", ["csv", "json"]);
    return {
      sink: new FileSink<Row>({
        path: stringOption(table, "path"),
        encoder: encoder(table, format),
        rollingPolicy: rollingPolicy(table),
      }),
      accepts: "append",
    };
  },
};
