/**
 * The last line a benchmark prints, `RESULT key=value key=value ...`, for
 * scripts and the smoke tests to read, and the checks that make a benchmark
 * fail loudly instead of printing figures of a wrong run.
 *
 * ```ts
 * import { expectEqual, parseResultFields, resultLine } from "./_result.ts";
 *
 * expectEqual("records sunk", 10, 10);
 * const line = resultLine({ eps: 1234567.8, ratio: 0.51234 });
 * // "RESULT eps=1234568 ratio=0.512"
 * if (parseResultFields(line).ratio !== "0.512") throw new Error(line);
 * ```
 *
 * @module
 */

/**
 * `RESULT k=v ...`: integers as they are, other numbers of magnitude >= 100
 * rounded to integers, the rest to 3 decimals; strings as they are (they
 * must not contain spaces).
 */
export function resultLine(fields: Readonly<Record<string, number | string>>): string {
  const text = (v: number | string) =>
    typeof v === "string"
      ? v
      : Number.isInteger(v)
      ? String(v)
      : Math.abs(v) >= 100
      ? String(Math.round(v))
      : v.toFixed(3);
  return `RESULT ${Object.entries(fields).map(([k, v]) => `${k}=${text(v)}`).join(" ")}`;
}

/**
 * The fields of the last `RESULT k=v ...` line of `output`.
 * @throws {Error} quoting the output's end when there is no such line.
 */
export function parseResultFields(output: string): Record<string, string> {
  const line = output.split("\n").findLast((l) => l.startsWith("RESULT "));
  if (line === undefined) throw new Error(`no RESULT line in:\n${output.slice(-4000)}`);
  const fields: Record<string, string> = {};
  for (const pair of line.slice("RESULT ".length).trim().split(/\s+/)) {
    const at = pair.indexOf("=");
    if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return fields;
}

/**
 * Throws unless `got === expected`, naming both: a benchmark whose run lost
 * or duplicated records must not print figures.
 * @param what what was compared, e.g. `the sinks' checksum`.
 * @throws {Error} `<what>: expected <expected>, got <got>`.
 */
export function expectEqual(what: string, expected: number, got: number): void {
  if (got !== expected) throw new Error(`${what}: expected ${expected}, got ${got}`);
}
