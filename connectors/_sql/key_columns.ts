/**
 * The driver-free part of the SQL upsert sinks' option checks (MariaDB's
 * `INSERT … ON DUPLICATE KEY UPDATE`, PostgreSQL's `ON CONFLICT`): the key
 * columns an upsert matches rows on must be a non-empty list of distinct
 * names, each one of the written columns (Flink's JDBC upsert sink takes
 * the same `keyFields`). Pure: no I/O, no driver; each sink throws the
 * problem as its own error, prefixed with its own name, and checks against
 * its database that the key is a unique key of the table.
 *
 * @module
 */

/**
 * What is wrong with `keyColumns` for an upsert writing `columns`, or
 * `undefined` when nothing is.
 *
 * @param columns the columns each row fills (checked by the caller).
 * @param keyColumns the key columns, as the user gave them (may be anything).
 * @returns a sentence naming the rule and the current value, e.g.
 *   `every key column must be one of columns ["a"]: current value is "b"`.
 */
export function keyColumnsProblem(
  columns: readonly string[],
  keyColumns: unknown,
): string | undefined {
  if (!Array.isArray(keyColumns) || keyColumns.length === 0) {
    return `keyColumns must be a non-empty array of column names: current value is ${
      JSON.stringify(keyColumns)
    }`;
  }
  for (const key of keyColumns) {
    if (!columns.includes(key)) {
      return `every key column must be one of columns ${JSON.stringify(columns)}: ` +
        `current value is ${JSON.stringify(key)}`;
    }
  }
  if (new Set(keyColumns).size !== keyColumns.length) {
    return `keyColumns must be distinct: current value is ${JSON.stringify(keyColumns)}`;
  }
  return undefined;
}
