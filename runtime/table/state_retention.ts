/**
 * Idle state retention of SQL operators (Flink's `table.exec.state.ttl`,
 * `StateConfigUtil.createTtlConfig`): the keyed state of a GroupAggregate,
 * a deduplication, a Top-N or an OVER aggregation expires when its key was
 * not written for the retention time.
 *
 * As in Flink, the lifetime is measured in processing time and restarts
 * on every write (`OnCreateAndWrite`); expired state is never returned
 * (`NeverReturnExpired`). A key whose state expired starts over: its next
 * row is treated as the first of the key (a GroupAggregate emits `+I` for
 * a group it had already emitted; a `-U`/`-D` for expired state is
 * ignored instead of failing the job, as Flink's `stateCleaningEnabled`).
 * Results are then approximate: that is the trade the option makes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stateTtlConfig } from "./state_retention.ts";
 *
 * assert.equal(stateTtlConfig(0), undefined);
 * assert.deepEqual(stateTtlConfig(3_600_000), {
 *   ttlMs: 3_600_000,
 *   updateType: "OnCreateAndWrite",
 *   timeCharacteristic: "ProcessingTime",
 * });
 * ```
 *
 * @module
 */

import type { StateTtlConfig } from "../api/state.ts";

/**
 * The state TTL of SQL state for a retention time.
 * @param stateTtlMs `table.exec.state.ttl` in ms; 0 (or `undefined`) keeps state forever.
 * @returns the TTL of the operators' state descriptors, or `undefined` for none.
 * @throws {RangeError} for a negative or non-finite retention, naming it.
 */
export function stateTtlConfig(stateTtlMs: number | undefined): StateTtlConfig | undefined {
  if (stateTtlMs === undefined || stateTtlMs === 0) return undefined;
  if (!(stateTtlMs > 0) || !Number.isFinite(stateTtlMs)) {
    throw new RangeError(
      `table.exec.state.ttl must be a finite number of ms >= 0: current value is ${stateTtlMs}`,
    );
  }
  return {
    ttlMs: stateTtlMs,
    updateType: "OnCreateAndWrite",
    timeCharacteristic: "ProcessingTime",
  };
}
