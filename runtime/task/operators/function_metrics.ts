/**
 * Counters a user function keeps itself, read by its operator as the
 * operator's metrics (`StreamOperator.metrics`): a process function that
 * drops late rows (the table runtime's WindowJoin, WindowRank and outer
 * interval join) exposes `numLateRecordsDropped`, Flink's metric name, and
 * its process operator reports it like the window operator does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { functionMetrics } from "./function_metrics.ts";
 *
 * assert.deepEqual(functionMetrics({ numLateRecordsDropped: 2 })?.(), { numLateRecordsDropped: 2 });
 * assert.equal(functionMetrics({ processElement() {} }), undefined);
 * ```
 *
 * @module
 */

/**
 * The metrics reader of a function with a numeric `numLateRecordsDropped`,
 * or `undefined` for a function without counters (its operator then has
 * no metrics, as before).
 */
export function functionMetrics(
  fn: unknown,
): (() => Readonly<Record<string, number>>) | undefined {
  const counted = fn as { numLateRecordsDropped?: unknown } | null;
  if (typeof counted !== "object" || counted === null) return undefined;
  if (typeof counted.numLateRecordsDropped !== "number") return undefined;
  return () => ({ numLateRecordsDropped: counted.numLateRecordsDropped as number });
}
