/**
 * Internal: the restore of a {@linkcode ChangelogKeyedStateBackend}
 * (`changelog_keyed_backend.ts`): which handles it reads, the changelog
 * segments decoded and replayed in `(checkpointId, seq)` order over the
 * canonical snapshots (`replay.ts`), the inner backend loaded, and the chain
 * the next checkpoints refer to (reusable only when every handle is shared
 * and of exactly this backend's key-group range: the same subtask after a
 * failure).
 *
 * @module
 */

import type { KeyGroupRange } from "../key_group.ts";
import type { KeyedStateBackend, StateReader } from "../keyed_state_backend.ts";
import type { StateHandle } from "../../checkpoint/snapshot_contract.ts";
import { compareSegments, decodeSegment } from "./changelog_segment.ts";
import { replayChangelog } from "./replay.ts";
import { readCanonical, syntheticHandles } from "./_canonical_blobs.ts";
import type { Chain } from "./_chain.ts";

function intersects(handle: StateHandle, range: KeyGroupRange): boolean {
  const r = handle.keyGroupRange;
  return r === undefined || (r[0] <= range.endKeyGroup && r[1] >= range.startKeyGroup);
}

/**
 * Loads `inner`'s key groups from a checkpoint's handles: canonical `keyed`
 * handles (a materialization, or a full snapshot of any backend) and
 * `keyed-incremental` changelog segments, replayed in order over them.
 * Handles whose key groups miss `inner`'s range are not read.
 *
 * @returns the chain the backend's next checkpoints refer to (not yet
 *   materialized: `materializedAt` -1).
 * @throws {Error} naming the handle when one is of another kind, does not
 *   decode, or was written with another max parallelism; whatever the
 *   inner backend's `restore` throws.
 */
export async function restoreChain(
  inner: KeyedStateBackend,
  handles: readonly StateHandle[],
  read: StateReader,
): Promise<Chain> {
  const range = inner.keyGroupRange;
  const seen = new Set<string>();
  const bases: StateHandle[] = [];
  const segmentHandles: StateHandle[] = [];
  for (const handle of handles) {
    if (seen.has(handle.path) || !intersects(handle, range)) continue;
    seen.add(handle.path);
    if (handle.kind === "keyed") bases.push(handle);
    else if (handle.kind === "keyed-incremental") segmentHandles.push(handle);
    else {
      throw new Error(
        `Cannot restore keyed state handle '${handle.path}': the changelog keyed state backend reads kinds 'keyed' and 'keyed-incremental', current value is '${handle.kind}'`,
      );
    }
  }
  const decoded = await Promise.all(
    segmentHandles.map(async (h) => ({
      handle: h,
      segment: decodeSegment(h, await read(h), inner.maxParallelism),
    })),
  );
  decoded.sort((a, b) => compareSegments(a.segment, b.segment));
  if (decoded.length === 0) {
    await inner.restore(bases, read);
  } else {
    const snapshots = await Promise.all(
      bases.map((h) => readCanonical(h, read, inner.maxParallelism)),
    );
    const replayed = replayChangelog({
      bases: snapshots,
      segments: decoded.map((d) => d.segment),
      keyGroupRange: [range.startKeyGroup, range.endKeyGroup],
      maxParallelism: inner.maxParallelism,
    });
    const synthetic = syntheticHandles(replayed, handles[0]?.uid ?? "");
    await inner.restore(synthetic.handles, synthetic.read);
  }
  const kept = [...bases, ...segmentHandles];
  const reusable = kept.every((h) =>
    h.shared && h.keyGroupRange !== undefined &&
    h.keyGroupRange[0] === range.startKeyGroup && h.keyGroupRange[1] === range.endKeyGroup
  );
  return {
    materializedAt: -1,
    base: bases,
    baseBytes: bases.reduce((n, h) => n + h.bytes, 0),
    baseEntries: inner.numEntries(),
    segments: decoded.map(({ handle, segment }) => ({
      checkpointId: segment.checkpointId,
      seq: segment.seq,
      entries: 0,
      bytes: handle.bytes,
      captured: undefined,
      data: undefined,
      handle,
      upload: undefined,
    })),
    valid: reusable,
  };
}
