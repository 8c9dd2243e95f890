/**
 * The small state participants of an operator's snapshot (DESIGN §13):
 * timers, operator (list / union list) state, source splits, sink
 * committables and writer state, and the watermark floor. Each captures
 * synchronously (the caller hands over a fresh, unshared copy, which is
 * small) and encodes in `write`, off the record path, into one private blob
 * (MessagePack, `runtime/actor/codec.ts`).
 *
 * | kind                | blob content                                   | key groups      |
 * | ------------------- | ---------------------------------------------- | --------------- |
 * | `timers`            | `TimerServiceSnapshot`                         | the subtask's   |
 * | `operator`          | `OperatorStateSnapshot` of the user's state    |                 |
 * | `source-splits`     | `OperatorStateSnapshot` of the reader's splits |                 |
 * | `sink-committables` | `OperatorStateSnapshot` of committables/writer |                 |
 * | `watermark`         | the floor, a number in ms                      |                 |
 *
 * A participant with nothing to keep (no timer, no list entry, no
 * watermark yet) writes nothing, so it adds neither a file nor a handle.
 * Blob names are `<kind>-<uid, URI-encoded>`; the checkpointer's writer
 * prefixes vertex, subtask and attempt.
 *
 * The three operator-state kinds share one format, so a restore merges them
 * per uid before redistributing (`runtime/task/subtask_state.ts`); each
 * operator writes one of them.
 *
 * @module
 */

import { encode } from "../../actor/codec.ts";
import {
  EMPTY_SNAPSHOT,
  type SnapshotResult,
  type StateHandleKind,
} from "../../checkpoint/snapshot_contract.ts";
import type { KeyGroupRange } from "../../state/key_group.ts";
import type { OperatorStateSnapshot } from "../../state/operator_state.ts";
import type { TimerServiceSnapshot } from "../../state/timer_service.ts";

/** The operator-state kinds: one format (`OperatorStateSnapshot`), redistributed alike on restore. */
export type OperatorStateKind = "operator" | "source-splits" | "sink-committables";

/**
 * A participant whose capture is `value` (already a private copy): `write`
 * encodes it into one private blob `<kind>-<uid>`.
 * @param keyGroupRange the key groups the blob covers, for keyed kinds.
 */
export function encodedSnapshot(
  kind: StateHandleKind,
  uid: string,
  value: unknown,
  keyGroupRange?: KeyGroupRange,
): SnapshotResult {
  let captured: { value: unknown } | undefined = { value };
  return {
    async write(writer) {
      if (captured === undefined) {
        throw new Error(
          `The ${kind} snapshot of operator ${uid} was discarded before it was written`,
        );
      }
      const bytes = encode(captured.value);
      captured = undefined;
      if (writer.cancelled) return [];
      const name = `${kind}-${encodeURIComponent(uid)}`;
      const range = keyGroupRange === undefined
        ? undefined
        : [keyGroupRange.startKeyGroup, keyGroupRange.endKeyGroup] as const;
      return [await writer.writePrivate(name, bytes, kind, uid, range)];
    },
    discard() {
      captured = undefined;
    },
  };
}

/** The timers participant: nothing when no timer is pending. */
export function timersSnapshot(
  uid: string,
  timers: TimerServiceSnapshot,
  keyGroupRange: KeyGroupRange,
): SnapshotResult {
  if (timers.eventTime.length === 0 && timers.processingTime.length === 0) return EMPTY_SNAPSHOT;
  return encodedSnapshot("timers", uid, timers, keyGroupRange);
}

/** An operator-state participant: nothing when every list is empty. */
export function operatorStateSnapshot(
  kind: OperatorStateKind,
  uid: string,
  state: OperatorStateSnapshot,
): SnapshotResult {
  if (!Object.values(state).some((entry) => entry.items.length > 0)) return EMPTY_SNAPSHOT;
  return encodedSnapshot(kind, uid, state);
}

/**
 * The watermark floor participant (beyond Flink, see
 * `runtime/time/watermark.ts`): nothing before the first watermark.
 * @param watermark ms, or `undefined` / `-Infinity` for none.
 */
export function watermarkSnapshot(uid: string, watermark: number | undefined): SnapshotResult {
  if (watermark === undefined || watermark === Number.NEGATIVE_INFINITY) return EMPTY_SNAPSHOT;
  return encodedSnapshot("watermark", uid, watermark);
}
