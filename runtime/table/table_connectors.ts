/**
 * The table connectors built into the runtime: `values`, `datagen`,
 * `print` and `blackhole` (Flink's connector identifiers and option names).
 * Each is a {@linkcode TableConnector}: it checks a `CREATE TABLE`'s
 * options and builds a source or a sink of rows. They are built from the
 * runtime's own collection source and print sink, so the runtime still
 * imports no connector (DESIGN §16).
 *
 * ## Registration (Flink's `DynamicTableFactory` discovery)
 *
 * Flink finds its table factories by their `factoryIdentifier()` through
 * Java's service loader. Weir has no class path to scan: a
 * {@linkcode TableConnectorRegistry} holds the factories by identifier, a
 * `StreamTableEnvironment` starts with the built-ins below and takes more
 * with `registerTableConnector` (or `create(env, { connectors })`). The
 * connectors of `connectors/` (`nexmark`, `jetstream`, `filesystem`,
 * `mariadb`, `postgres`) each export a factory from a `table*.ts` file, and
 * `connectors/table.ts` lists them all (`weir sql` registers that list).
 *
 * Both sources run at parallelism 1, so rows keep their order (as the
 * seed's changelog needs) at any job parallelism.
 *
 * | connector | role | options | notes |
 * |---|---|---|---|
 * | `values` | source | none | rows come from `INSERT INTO t VALUES ...` statements run before the query (Flink's test connector holds them by `data-id`) |
 * | `datagen` | source | `number-of-rows` (required here), `fields.<col>.kind` (`random`/`sequence`), `fields.<col>.min`/`max`, `fields.<col>.start`/`end`, `fields.<col>.length` | rows are generated when the job is built, from a fixed seed, so a restart replays them; unbounded generation is not supported yet |
 * | `print` | sink, takes updates | `print-identifier`, `standard-error` | prints each change as `+I(...)`, `-U(...)`, `+U(...)`, `-D(...)`; at-least-once (a restart prints the replayed changes again) |
 * | `blackhole` | sink, takes updates | none | discards every row |
 *
 * @module
 */

import type { SingleOutputStreamOperator } from "../api/datastream.ts";
import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { PrintSink } from "../api/print_sink.ts";
import type { Sink } from "../api/sink.ts";
import { PlanningError } from "./changelog_mode.ts";
import { checkTableOptions as checkOptions, numberOption } from "./connector_options.ts";
import { formatRow, insertRow, type Row, type SqlValue } from "./row.ts";
import type { Expr, WatermarkDefinition } from "./sql_ast.ts";
import type { Column } from "./types.ts";

/**
 * A table created by `CREATE TABLE ... WITH ('connector' = ...)` (Flink's
 * `ResolvedCatalogTable` as a `DynamicTableFactory.Context` sees it).
 */
export interface ConnectorTable {
  /** The table's name. */
  readonly name: string;
  /** Its physical columns, in order (what a source's rows hold, what a sink's rows hold). */
  readonly columns: readonly Column[];
  /** Its `WITH` options. */
  readonly options: Readonly<Record<string, string>>;
  /** Rows inserted with `INSERT INTO ... VALUES` (the `values` connector's data). */
  readonly rows: SqlValue[][];
  /**
   * `PRIMARY KEY (...) NOT ENFORCED`: column names, each one of `columns`;
   * `null` without one. A sink with a primary key takes upserts by it.
   */
  readonly primaryKey: readonly string[] | null;
  /**
   * `WATERMARK FOR col AS expr`, or `null`. The planner applies it on the
   * scan (its column is a `TIMESTAMP` column of `columns`); a source only
   * emits rows.
   */
  readonly watermark: WatermarkDefinition | null;
  /**
   * `name AS expr` columns of the DDL (Flink's computed columns): not
   * read from or written to the connector (`columns` holds the physical
   * ones only); the planner computes them after the scan. `position` is
   * the column's place in the declared schema. Absent or empty: none.
   */
  readonly computedColumns?: readonly ComputedColumn[];
}

/** A computed column of a `CREATE TABLE` (see {@linkcode ConnectorTable.computedColumns}). */
export interface ComputedColumn {
  /** Its name. */
  readonly name: string;
  /** Its expression, over the physical columns. */
  readonly expr: Expr;
  /** Its index in the declared schema (physical and computed columns in order). */
  readonly position: number;
}

/** A sink of rows and what it accepts. */
export interface TableSink {
  /** The sink (a SinkFunction-style `Sink` or a SinkV2). */
  readonly sink: Sink<Row>;
  /**
   * `append` only (`+I`; an updating query is refused at planning, naming
   * the operator that produces the updates), or `updates` too (any RowKind;
   * an upsert sink keyed by the table's primary key ignores `-U`).
   */
  readonly accepts: "append" | "updates";
}

/** A connector for `CREATE TABLE ... WITH ('connector' = '<identifier>')` (Flink's `DynamicTableFactory`). */
export interface TableConnector {
  /** The `connector` option's value. */
  readonly identifier: string;
  /**
   * Checks a table's options.
   * @throws {PlanningError} naming an unknown option or a bad value.
   */
  validate(table: ConnectorTable): void;
  /**
   * The source reads any subset of the table's columns, given as the
   * `columns` of the table passed to `source` (Flink's
   * `SupportsProjectionPushDown`; `projection_pushdown.ts`); absent: it is
   * always given every column.
   */
  readonly supportsProjection?: boolean;
  /** Reads the table as an append-only stream of `+I` rows; absent for sink-only connectors. */
  source?(table: ConnectorTable, env: StreamExecutionEnvironment): SingleOutputStreamOperator<Row>;
  /** Writes rows into the table; absent for source-only connectors. */
  sink?(table: ConnectorTable): TableSink;
}

const values: TableConnector = {
  identifier: "values",
  validate: (table) => checkOptions(table, []),
  source: (table, env) =>
    env.fromCollection(table.rows.map((r) => insertRow(r))).name(`values: ${table.name}`)
      .setParallelism(1),
};

/** mulberry32: a small seeded generator, so datagen tables repeat across runs and restarts. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MAX_DATAGEN_ROWS = 10_000_000;

const datagen: TableConnector = {
  identifier: "datagen",
  validate(table) {
    checkOptions(table, ["number-of-rows", /^fields\.[^.]+\.(kind|min|max|start|end|length)$/]);
    const rows = numberOption(table, "number-of-rows");
    if (!Number.isInteger(rows) || rows < 0 || rows > MAX_DATAGEN_ROWS) {
      throw new PlanningError(
        `option 'number-of-rows' of table ${table.name} must be an integer from 0 to ${MAX_DATAGEN_ROWS}: current value is ${rows}`,
      );
    }
    for (const key of Object.keys(table.options)) {
      const m = /^fields\.([^.]+)\.(\w+)$/.exec(key);
      if (m === null) continue;
      const column = table.columns.find((c) => c.name === m[1]);
      if (column === undefined) {
        throw new PlanningError(`option '${key}' of table ${table.name} names no column`);
      }
      if (m[2] === "kind" && !["random", "sequence"].includes(table.options[key]!)) {
        throw new PlanningError(
          `option '${key}' must be 'random' or 'sequence': current value is '${
            table.options[key]
          }'`,
        );
      }
      if (m[2] !== "kind" && m[2] !== "length") numberOption(table, key);
    }
  },
  source(table, env) {
    const n = numberOption(table, "number-of-rows");
    const random = seeded(0x5eed);
    const rows: Row[] = [];
    for (let i = 0; i < n; i++) {
      rows.push(insertRow(table.columns.map((c) => generate(table, c, i, random))));
    }
    return env.fromCollection(rows).name(`datagen: ${table.name}`).setParallelism(1);
  },
};

function generate(
  table: ConnectorTable,
  column: Column,
  i: number,
  random: () => number,
): SqlValue {
  const option = (name: string, fallback: number) =>
    numberOption(table, `fields.${column.name}.${name}`, fallback);
  if (table.options[`fields.${column.name}.kind`] === "sequence") {
    const start = option("start", 0);
    const end = option("end", Number.MAX_SAFE_INTEGER);
    const v = start + i;
    if (v > end) {
      throw new PlanningError(
        `the sequence of fields.${column.name} of table ${table.name} ends at ${end}, before row ${
          i + 1
        }`,
      );
    }
    return column.type.family === "STRING" ? String(v) : v;
  }
  switch (column.type.family) {
    case "BIGINT": {
      const min = option("min", 0);
      const max = option("max", 1_000_000);
      return min + Math.floor(random() * (max - min + 1));
    }
    case "DOUBLE": {
      const min = option("min", 0);
      const max = option("max", 1);
      return min + random() * (max - min);
    }
    case "BOOLEAN":
      return random() < 0.5;
    case "TIMESTAMP":
      return new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString().replace("T", " ").slice(0, 23);
    case "STRING": {
      const length = option("length", 10);
      let s = "";
      for (let k = 0; k < length; k++) s += "abcdefghijklmnopqrstuvwxyz"[Math.floor(random() * 26)];
      return s;
    }
  }
}

const print: TableConnector = {
  identifier: "print",
  validate(table) {
    checkOptions(table, ["print-identifier", "standard-error"]);
    const stderr = table.options["standard-error"];
    if (stderr !== undefined && stderr !== "true" && stderr !== "false") {
      throw new PlanningError(
        `option 'standard-error' of table ${table.name} must be 'true' or 'false': current value is '${stderr}'`,
      );
    }
  },
  sink(table) {
    const prefix = table.options["print-identifier"];
    return {
      sink: new PrintSink<Row>({
        formatter: formatRow,
        target: table.options["standard-error"] === "true" ? "stderr" : "stdout",
        ...(prefix === undefined ? {} : { prefix }),
      }),
      accepts: "updates",
    };
  },
};

const blackhole: TableConnector = {
  identifier: "blackhole",
  validate: (table) => checkOptions(table, []),
  sink: () => ({ sink: { kind: "simple", invoke() {} }, accepts: "updates" }),
};

/** The built-in connectors by identifier: `values`, `datagen`, `print`, `blackhole`. */
export const TABLE_CONNECTORS: ReadonlyMap<string, TableConnector> = new Map(
  [values, datagen, print, blackhole].map((c) => [c.identifier, c]),
);

/**
 * Table connectors by identifier (what Flink's `FactoryUtil.discoverFactory`
 * searches): the built-ins plus the ones registered.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TableConnectorRegistry } from "./table_connectors.ts";
 *
 * const registry = new TableConnectorRegistry();
 * assert.ok(registry.get("print") !== undefined);
 * registry.register({ identifier: "mine", validate() {} });
 * assert.deepEqual(registry.identifiers, ["values", "datagen", "print", "blackhole", "mine"]);
 * assert.throws(() => registry.register({ identifier: "print", validate() {} }), /already registered/);
 * ```
 */
export class TableConnectorRegistry {
  readonly #byIdentifier = new Map<string, TableConnector>(TABLE_CONNECTORS);

  /**
   * A registry of the built-ins and `connectors`.
   * @throws {PlanningError} as {@linkcode TableConnectorRegistry.register}.
   */
  constructor(connectors: Iterable<TableConnector> = []) {
    for (const c of connectors) this.register(c);
  }

  /**
   * Adds a connector under its identifier.
   * @returns this registry.
   * @throws {PlanningError} when the identifier is empty or already
   *   registered (two factories for one identifier are ambiguous, as in
   *   Flink's discovery), naming it.
   */
  register(connector: TableConnector): this {
    const id = connector.identifier;
    if (typeof id !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(id)) {
      throw new PlanningError(
        `a table connector's identifier must be letters, digits, '_', '.' or '-': current value is ${
          JSON.stringify(id)
        }`,
      );
    }
    if (this.#byIdentifier.has(id)) {
      throw new PlanningError(`a table connector '${id}' is already registered`);
    }
    this.#byIdentifier.set(id, connector);
    return this;
  }

  /** The connector of `identifier`, or `undefined`. */
  get(identifier: string): TableConnector | undefined {
    return this.#byIdentifier.get(identifier);
  }

  /** The identifiers, built-ins first, then in registration order. */
  get identifiers(): string[] {
    return [...this.#byIdentifier.keys()];
  }
}
