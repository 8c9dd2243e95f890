/**
 * The options of a table environment (Flink's `TableConfig`): what `SET
 * 'key' = 'value'` changes and what the planner, the operators and the SQL
 * client read. Only the options below exist; any other key is refused with
 * the list of known ones, and every value is parsed and checked when it is
 * set, so a typo fails at `SET`, not in a running job.
 *
 * | key | type | default | read by |
 * |---|---|---|---|
 * | `table.exec.state.ttl` | duration | `0 ms` (state kept forever) | SQL operators' state (idle state retention) |
 * | `table.exec.source.idle-timeout` | duration | `0 ms` (never idle) | table sources' watermarks |
 * | `parallelism.default` | integer ≥ 1 | the environment's | each SQL job |
 * | `pipeline.name` | string | the statement's own job name | each SQL job |
 * | `execution.checkpointing.interval` | duration | `0 ms` (as configured on the environment) | each SQL job |
 * | `sql-client.execution.result-mode` | `changelog`, `table` or `tableau` | `changelog` | `weir sql` |
 *
 * A duration is written as Flink writes one (`TimeUtils.parseDuration`): a
 * non-negative integer with an optional unit, `ms` (the default), `s`,
 * `min`, `h` or `d`, or their long forms (`milli`, `millis`, `millisecond`,
 * `milliseconds`, `sec`, `secs`, `second`, `seconds`, `minute`, `minutes`,
 * `hour`, `hours`, `day`, `days`), e.g. `'1 h'`, `'30min'`, `'500'`. It is
 * held in milliseconds.
 *
 * Pure code: a `TableConfig` holds values; applying them to a job is the
 * table environment's business.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TableConfig } from "./table_config.ts";
 *
 * const config = new TableConfig();
 * config.set("table.exec.state.ttl", "1 h");
 * assert.equal(config.get("table.exec.state.ttl"), 3_600_000);
 * assert.throws(() => config.set("table.exec.state.tll", "1 h"), /unknown option/);
 * ```
 *
 * @module
 */

/** The SQL client's ways of showing a result (Flink's `sql-client.execution.result-mode`). */
export type ResultMode = "changelog" | "table" | "tableau";

/** The value type of each option, by key. */
export interface TableOptionValues {
  /** Idle state retention of SQL operators, in ms; 0 keeps state forever. */
  "table.exec.state.ttl": number;
  /** How long a source split may send nothing before it is marked idle, in ms; 0 never. */
  "table.exec.source.idle-timeout": number;
  /** The parallelism of SQL jobs; `null` keeps the environment's. */
  "parallelism.default": number | null;
  /** The name of SQL jobs; `null` keeps each statement's own name. */
  "pipeline.name": string | null;
  /** The checkpoint interval of SQL jobs in ms; 0 keeps the environment's setting. */
  "execution.checkpointing.interval": number;
  /** How `weir sql` shows results. */
  "sql-client.execution.result-mode": ResultMode;
}

/** A key of a known option. */
export type TableOptionKey = keyof TableOptionValues;

/** What {@linkcode TableConfig} knows about one option (Flink's `ConfigOption`). */
export interface TableOptionDefinition<K extends TableOptionKey = TableOptionKey> {
  /** The option's key. */
  readonly key: K;
  /** What it does, for `SET` listings. */
  readonly description: string;
  /** Its value when not set. */
  readonly defaultValue: TableOptionValues[K];
  /**
   * Parses a `SET` value.
   * @returns the value, or a message saying what is wrong with `text`.
   */
  readonly parse: (text: string) => TableOptionValues[K] | { readonly error: string };
  /** Prints a value as `SET` shows it. */
  readonly format: (value: TableOptionValues[K]) => string;
}

/** An option's key or value that `SET` refuses; the message names the key, the value and what is allowed. */
export class TableConfigError extends Error {
  /** Always `"TableConfigError"`. */
  override readonly name = "TableConfigError";
}

const UNITS: ReadonlyArray<readonly [readonly string[], number]> = [
  [["ms", "milli", "millis", "millisecond", "milliseconds"], 1],
  [["s", "sec", "secs", "second", "seconds"], 1_000],
  [["min", "m", "minute", "minutes"], 60_000],
  [["h", "hour", "hours"], 3_600_000],
  [["d", "day", "days"], 86_400_000],
];

/**
 * Parses a duration as Flink's `TimeUtils.parseDuration` does (see the
 * module docs).
 * @param text e.g. `'1 h'`, `'30 min'`, `'500'` (ms).
 * @returns the duration in ms, or a message saying what is wrong.
 */
export function parseDuration(text: string): number | { readonly error: string } {
  const m = /^\s*(\d+)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (m === null) {
    return {
      error:
        `'${text}' is not a duration (a non-negative integer with an optional unit: ms, s, min, h, d)`,
    };
  }
  const unit = m[2]!.toLowerCase();
  const factor = unit === "" ? 1 : UNITS.find(([names]) => names.includes(unit))?.[1];
  if (factor === undefined) {
    return {
      error: `'${text}' has an unknown time unit '${m[2]}' (known: ${
        UNITS.map(([names]) => names.join("|")).join(", ")
      })`,
    };
  }
  const ms = Number(m[1]) * factor;
  if (!Number.isSafeInteger(ms)) return { error: `'${text}' is too long a duration` };
  return ms;
}

/** Prints a duration in ms as the largest unit that divides it (`3600000` -> `1 h`). */
export function formatDuration(ms: number): string {
  for (const [names, factor] of [...UNITS].reverse()) {
    if (ms !== 0 && ms % factor === 0) return `${ms / factor} ${names[0]}`;
  }
  return `${ms} ms`;
}

const duration = <K extends TableOptionKey>(
  key: K,
  description: string,
): TableOptionDefinition<K> =>
  ({
    key,
    description,
    defaultValue: 0,
    parse: parseDuration,
    format: (v: number) => formatDuration(v),
  }) as unknown as TableOptionDefinition<K>;

/** Every known option, in the order `SET` lists them. */
export const TABLE_OPTIONS: readonly TableOptionDefinition[] = [
  duration(
    "table.exec.state.ttl",
    "How long SQL operators keep the state of a key that is not updated (idle state retention); 0 keeps it forever.",
  ),
  duration(
    "table.exec.source.idle-timeout",
    "How long a source split may send no record before it is marked idle, so the watermark advances without it; 0 never marks it idle.",
  ),
  {
    key: "parallelism.default",
    description: "The parallelism of the operators of SQL jobs.",
    defaultValue: null,
    parse: (text) => {
      const n = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
      return Number.isSafeInteger(n) && n >= 1
        ? n
        : { error: `'${text}' is not a positive integer` };
    },
    format: (v) => (v === null ? "(the environment's)" : String(v)),
  } satisfies TableOptionDefinition<"parallelism.default">,
  {
    key: "pipeline.name",
    description: "The name of SQL jobs.",
    defaultValue: null,
    parse: (text) => (text.trim() === "" ? { error: "the name is empty" } : text),
    format: (v) => v ?? "(each statement's own)",
  } satisfies TableOptionDefinition<"pipeline.name">,
  duration(
    "execution.checkpointing.interval",
    "The interval between checkpoints of SQL jobs; 0 keeps the environment's setting.",
  ),
  {
    key: "sql-client.execution.result-mode",
    description:
      "How weir sql shows a query's result: changelog (one +I/-U/+U/-D line per change), table (a refreshing table) or tableau (the table printed as it changes).",
    defaultValue: "changelog",
    parse: (text) => {
      const mode = text.trim().toLowerCase();
      return mode === "changelog" || mode === "table" || mode === "tableau"
        ? mode
        : { error: `'${text}' is not one of changelog, table, tableau` };
    },
    format: (v) => v,
  } satisfies TableOptionDefinition<"sql-client.execution.result-mode">,
] as readonly TableOptionDefinition[];

const BY_KEY: ReadonlyMap<string, TableOptionDefinition> = new Map(
  TABLE_OPTIONS.map((o) => [o.key, o]),
);

/** One row of {@linkcode TableConfig.list}. */
export interface TableOptionEntry {
  /** The option's key. */
  readonly key: TableOptionKey;
  /** Its current value, printed. */
  readonly value: string;
  /** Whether it was set (otherwise it has its default). */
  readonly isSet: boolean;
  /** What it does. */
  readonly description: string;
}

/**
 * The options of one table environment (Flink's `TableConfig`; see the
 * module docs for the options).
 */
export class TableConfig {
  readonly #values = new Map<TableOptionKey, unknown>();

  /**
   * The current value of `key` (its default when not set).
   * @throws {TableConfigError} for an unknown key.
   */
  get<K extends TableOptionKey>(key: K): TableOptionValues[K] {
    const definition = TableConfig.definition(key);
    return (this.#values.has(key)
      ? this.#values.get(key)
      : definition.defaultValue) as TableOptionValues[K];
  }

  /**
   * Sets `key` from its text (what `SET 'key' = 'value'` does).
   * @throws {TableConfigError} for an unknown key (listing the known ones)
   *   or a value that does not parse (naming the key and the value).
   */
  set(key: string, value: string): void {
    const definition = TableConfig.definition(key);
    const parsed = definition.parse(value);
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      throw new TableConfigError(`invalid value for option '${key}': ${parsed.error}`);
    }
    this.#values.set(definition.key, parsed);
  }

  /**
   * Puts `key` back to its default (Flink's `RESET 'key'`).
   * @throws {TableConfigError} for an unknown key.
   */
  reset(key: string): void {
    this.#values.delete(TableConfig.definition(key).key);
  }

  /** Every option with its current value, in {@linkcode TABLE_OPTIONS}' order (what `SET` alone shows). */
  list(): TableOptionEntry[] {
    return TABLE_OPTIONS.map((o) => ({
      key: o.key,
      value: this.format(o.key),
      isSet: this.#values.has(o.key),
      description: o.description,
    }));
  }

  /**
   * The current value of `key`, printed as `SET` shows it.
   * @throws {TableConfigError} for an unknown key.
   */
  format(key: string): string {
    const definition = TableConfig.definition(key) as TableOptionDefinition<TableOptionKey>;
    return (definition.format as (v: unknown) => string)(this.get(definition.key));
  }

  /** The idle state retention of SQL operators in ms (`table.exec.state.ttl`); 0 is forever. */
  get stateTtlMs(): number {
    return this.get("table.exec.state.ttl");
  }

  /**
   * The definition of option `key`.
   * @throws {TableConfigError} for an unknown key, listing the known ones.
   */
  static definition(key: string): TableOptionDefinition {
    const definition = BY_KEY.get(key);
    if (definition === undefined) {
      throw new TableConfigError(
        `unknown option '${key}' (known options: ${TABLE_OPTIONS.map((o) => o.key).join(", ")})`,
      );
    }
    return definition;
  }
}
