/**
 * Checks of a `CREATE TABLE ... WITH (...)` table's options, shared by every
 * table connector (Flink's `FactoryUtil.TableFactoryHelper.validate` and its
 * `ConfigOption`s, reduced to string options): unknown keys are refused by
 * name, numbers and enumerations are parsed with a message that states the
 * current value. Pure: no I/O.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTableOptions, numberOption } from "./connector_options.ts";
 *
 * const table = { name: "t", columns: [], options: { connector: "x", "rows": "5" }, rows: [], primaryKey: null, watermark: null };
 * checkTableOptions(table, ["rows"]);
 * assert.equal(numberOption(table, "rows"), 5);
 * assert.throws(() => checkTableOptions(table, []), /Unsupported option 'rows'/);
 * ```
 *
 * @module
 */

import { PlanningError } from "./changelog_mode.ts";
import type { ConnectorTable } from "./table_connectors.ts";

/**
 * Refuses every option of `table` but `connector` and the `allowed` ones.
 * @param table the table.
 * @param allowed option keys, exact strings or patterns (e.g. `/^fields\.[^.]+\.kind$/`).
 * @throws {PlanningError} naming the first unsupported key, the connector,
 *   the table and the supported keys.
 */
export function checkTableOptions(
  table: ConnectorTable,
  allowed: readonly (string | RegExp)[],
): void {
  for (const key of Object.keys(table.options)) {
    if (key === "connector") continue;
    if (!allowed.some((a) => typeof a === "string" ? a === key : a.test(key))) {
      throw new PlanningError(
        `Unsupported option '${key}' for connector '${table.options.connector}' of table ${table.name}; supported: ${
          allowed.length === 0 ? "none" : allowed.map(String).join(", ")
        }`,
      );
    }
  }
}

/**
 * A numeric option.
 * @param table the table.
 * @param key the option's key.
 * @param fallback the value when the option is absent; without one the option is required.
 * @returns the number.
 * @throws {PlanningError} when a required option is missing or the value is
 *   not a finite number, naming the key, the table and the current value.
 */
export function numberOption(table: ConnectorTable, key: string, fallback?: number): number {
  const raw = table.options[key];
  if (raw === undefined) {
    if (fallback !== undefined) return fallback;
    throw new PlanningError(`table ${table.name} needs option '${key}'`);
  }
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n)) {
    throw new PlanningError(
      `option '${key}' of table ${table.name} must be a number: current value is '${raw}'`,
    );
  }
  return n;
}

/**
 * An integer option within `[min, max]`.
 * @throws {PlanningError} as {@linkcode numberOption}, and for a value that
 *   is not an integer in the range, naming it.
 */
export function integerOption(
  table: ConnectorTable,
  key: string,
  range: { readonly min: number; readonly max?: number; readonly fallback?: number },
): number {
  const n = numberOption(table, key, range.fallback);
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  if (!Number.isInteger(n) || n < range.min || n > max) {
    throw new PlanningError(
      `option '${key}' of table ${table.name} must be an integer from ${range.min} to ${max}: current value is '${
        table.options[key]
      }'`,
    );
  }
  return n;
}

/**
 * A string option.
 * @param table the table.
 * @param key the option's key.
 * @param fallback the value when absent; without one the option is required.
 * @throws {PlanningError} when a required option is missing or empty, naming it.
 */
export function stringOption(table: ConnectorTable, key: string, fallback?: string): string {
  const raw = table.options[key];
  if (raw === undefined) {
    if (fallback !== undefined) return fallback;
    throw new PlanningError(`table ${table.name} needs option '${key}'`);
  }
  if (raw === "") {
    throw new PlanningError(`option '${key}' of table ${table.name} must not be empty`);
  }
  return raw;
}

/**
 * An option that takes one of `choices`.
 * @throws {PlanningError} for another value, naming the choices and the current value.
 */
export function choiceOption<C extends string>(
  table: ConnectorTable,
  key: string,
  choices: readonly C[],
  fallback?: C,
): C {
  const raw = stringOption(table, key, fallback);
  if (!(choices as readonly string[]).includes(raw)) {
    throw new PlanningError(
      `option '${key}' of table ${table.name} must be one of ${
        choices.map((c) => `'${c}'`).join(", ")
      }: current value is '${raw}'`,
    );
  }
  return raw as C;
}

/**
 * A `true`/`false` option.
 * @throws {PlanningError} for another value, naming it.
 */
export function booleanOption(table: ConnectorTable, key: string, fallback: boolean): boolean {
  return choiceOption(table, key, ["true", "false"], fallback ? "true" : "false") === "true";
}
