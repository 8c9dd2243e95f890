/**
 * Hands one input buffer's records to a subtask's head operator (the inner
 * loop of Flink's `StreamOneInputProcessor`/`StreamTaskNetworkInput`
 * `emitNext`, one buffer at a time).
 *
 * ## What is passed along
 *
 * - A record's timestamp, when the buffer carries timestamps (`null`
 *   becomes `undefined`).
 * - On a hash-partitioned edge whose key selector is the head operator's
 *   own (`keyedByEdge`): the key group the producer computed, so the head
 *   sets its current key without hashing it again, and, for a buffer
 *   handed over in-thread, the key itself, so the head does not run the
 *   key selector again (a tuple key is then built once per record, not
 *   twice). A record without a key (`undefined`: the producer copied it
 *   through the codec) has its key computed by the head. On an edge keyed
 *   by another selector, neither is passed: they are not the head's.
 *
 * A two-input head (`two_input_operator.ts`) is dispatched the same way,
 * through the one-input view of the buffer's input (`inputOf`: its
 * `processElement1` or `processElement2`), with the key groups and keys of
 * an edge keyed by that input's own key selector.
 *
 * One loop per combination, so the per-record path tests nothing it need
 * not. Performs no I/O; the caller counts records, awaits `quiesce` and
 * returns credit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dispatchBuffer } from "./buffer_dispatch.ts";
 *
 * const seen: unknown[] = [];
 * const head = {
 *   processElement(value: unknown, ts: number | undefined, kg?: number, key?: unknown) {
 *     seen.push([value, ts, kg, key]);
 *   },
 * };
 * dispatchBuffer(head, { v: ["a", "b"], ts: [1, null], kg: [7, 9], k: ["A", undefined] }, true);
 * assert.deepEqual(seen, [["a", 1, 7, "A"], ["b", undefined, 9, undefined]]);
 * ```
 *
 * @module
 */

import type { StreamOperator } from "./operators/operator.ts";
import type { ReceivedBufferMessage } from "./messages.ts";

/**
 * Calls `head.processElement` for each record of `buffer`, in order.
 *
 * @param head The subtask's head operator (only `processElement` is used).
 * @param buffer The buffer's columns: records `v`, timestamps `ts` (ms,
 *   `null` = none; `undefined` when no record has one), key groups `kg` and
 *   keys `k` (hash edges; `k` only in-thread), each as long as `v`.
 * @param keyedByEdge Whether the head keys by the edge's own key selector,
 *   so that `kg` and `k` are its key groups and keys.
 * @throws {unknown} whatever `processElement` throws (user code); the records
 *   after it are not processed.
 */
export function dispatchBuffer(
  head: Pick<StreamOperator, "processElement">,
  buffer: Pick<ReceivedBufferMessage, "v" | "ts" | "kg" | "k">,
  keyedByEdge: boolean,
): void {
  const { v: values, ts, kg, k: keys } = buffer;
  const n = values.length;
  if (kg !== undefined && keyedByEdge) {
    if (keys !== undefined) {
      if (ts === undefined) {
        for (let i = 0; i < n; i++) head.processElement(values[i], undefined, kg[i], keys[i]);
      } else {
        for (let i = 0; i < n; i++) {
          head.processElement(values[i], ts[i] ?? undefined, kg[i], keys[i]);
        }
      }
    } else if (ts === undefined) {
      for (let i = 0; i < n; i++) head.processElement(values[i], undefined, kg[i]);
    } else {
      for (let i = 0; i < n; i++) head.processElement(values[i], ts[i] ?? undefined, kg[i]);
    }
  } else if (ts !== undefined) {
    for (let i = 0; i < n; i++) head.processElement(values[i], ts[i] ?? undefined);
  } else {
    for (let i = 0; i < n; i++) head.processElement(values[i], undefined);
  }
}
