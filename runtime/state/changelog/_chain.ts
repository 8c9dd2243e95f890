/**
 * Internal: the chain a {@linkcode ChangelogKeyedStateBackend} checkpoint
 * refers to (the current materialization and the changelog segments since
 * it), how a segment is captured from the recorders, encoded at its first
 * write and written once, and the writer that puts a materialization into
 * the shared namespace.
 *
 * @module
 */

import { encode } from "../../actor/codec.ts";
import type { StateHandle, StateWriter } from "../../checkpoint/snapshot_contract.ts";
import type { CapturedChanges, ChangeRecorder } from "./_change_recorder.ts";
import { type ChangelogSegment, SEGMENT_FORMAT, type SegmentState } from "./changelog_segment.ts";

/**
 * One changelog segment of the chain: the captured changes until encoded
 * (at its first write), then its bytes until written, then its handle.
 */
export interface Segment {
  readonly checkpointId: number;
  readonly seq: number;
  /** Changed (key, namespace) entries it holds. */
  readonly entries: number;
  /** Its encoded size, once encoded. */
  bytes: number | undefined;
  captured: (() => Uint8Array) | undefined;
  data: Uint8Array | undefined;
  handle: StateHandle | undefined;
  upload: Promise<StateHandle> | undefined;
}

/** Bytes per changed entry assumed for a segment not yet encoded, before any materialization shows the real figure. */
export const DEFAULT_ENTRY_BYTES = 64;

/** The materialization and the segments after it that a checkpoint refers to. */
export interface Chain {
  /** The checkpoint that captured the materialization; -1 for the empty state or a restore. */
  readonly materializedAt: number;
  readonly base: readonly StateHandle[];
  readonly baseBytes: number;
  /** Entries the materialization held (0 when unknown), for the size estimate of unencoded segments. */
  readonly baseEntries: number;
  readonly segments: Segment[];
  readonly valid: boolean;
}

/** A materialization captured and still being written. */
export interface InFlight {
  readonly checkpointId: number;
  readonly capturedAt: number;
  readonly entries: number;
  readonly segmentsAfter: Segment[];
  /** Checkpoint snapshots captured after it, while its write ran. */
  laterSnapshots: number;
}

/**
 * Bytes the chain's segments hold: encoded sizes, estimated for segments not
 * yet encoded (changed entries × the materialization's bytes per entry, or
 * {@linkcode DEFAULT_ENTRY_BYTES}).
 */
export function chainBytes(chain: Chain): number {
  const { baseBytes, baseEntries } = chain;
  const perEntry = baseEntries > 0 ? baseBytes / baseEntries : DEFAULT_ENTRY_BYTES;
  let n = 0;
  for (const s of chain.segments) n += s.bytes ?? Math.ceil(s.entries * perEntry);
  return n;
}

/** Where a segment is captured: its ordering key, capture time and the backend's key groups. */
export interface CaptureParams {
  readonly checkpointId: number;
  readonly seq: number;
  readonly now: number;
  readonly keyGroupRange: readonly [number, number];
  readonly maxParallelism: number;
}

/**
 * Takes every recorder's changes as a segment (encoded at its first
 * write), or `undefined` when nothing changed (then `useSeq` is not
 * called). O(states), plus a copy of changed reducing and aggregating values.
 */
export function captureSegment(
  recorders: readonly ChangeRecorder[],
  params: CaptureParams,
  useSeq: () => void,
): Segment | undefined {
  const captured: [string, CapturedChanges][] = [];
  let entries = 0;
  for (const log of recorders) {
    const n = log.size;
    if (n === 0) continue;
    entries += n;
    captured.push([log.name, log.capture()]);
  }
  if (captured.length === 0) return undefined;
  useSeq();
  const { checkpointId, seq, now, keyGroupRange, maxParallelism } = params;
  const encodeSegment = (): Uint8Array => {
    const states: Record<string, SegmentState> = {};
    for (const [name, changes] of captured) {
      Object.defineProperty(states, name, {
        value: changes.toSegmentState(),
        enumerable: true,
        writable: true,
      });
    }
    const segment: ChangelogSegment = {
      format: SEGMENT_FORMAT,
      version: 1,
      maxParallelism,
      keyGroupRange: [keyGroupRange[0], keyGroupRange[1]],
      checkpointId,
      seq,
      capturedAt: now,
      states,
    };
    return encode(segment);
  };
  return {
    checkpointId,
    seq,
    entries,
    bytes: undefined,
    captured: encodeSegment,
    data: undefined,
    handle: undefined,
    upload: undefined,
  };
}

/**
 * Writes `segment` as the shared blob `name` once: later calls return its
 * handle, or the write in progress; a failed write is tried again by the
 * next call. Encodes it first if it was not yet.
 */
export function uploadSegment(
  segment: Segment,
  writer: StateWriter,
  name: string,
  uid: string,
  keyGroupRange: readonly [number, number],
): Promise<StateHandle> {
  if (segment.handle !== undefined) return Promise.resolve(segment.handle);
  if (segment.upload !== undefined) return segment.upload;
  if (segment.data === undefined) {
    segment.data = segment.captured!();
    segment.captured = undefined;
    segment.bytes = segment.data.length;
  }
  segment.upload = writer.writeShared(name, segment.data, "keyed-incremental", uid, keyGroupRange)
    .then((handle) => {
      segment.handle = handle;
      segment.data = undefined;
      return handle;
    }, (error) => {
      segment.upload = undefined;
      throw error;
    });
  return segment.upload;
}

/** A writer that puts every blob the inner backend writes into the shared namespace, under `prefix`. */
export function sharedWriter(writer: StateWriter, prefix: string): StateWriter {
  return {
    checkpointId: writer.checkpointId,
    type: "checkpoint",
    get cancelled() {
      return writer.cancelled;
    },
    writePrivate: (name, bytes, kind, uid, keyGroupRange) =>
      writer.writeShared(prefix + name, bytes, kind, uid, keyGroupRange),
    writeShared: (name, bytes, kind, uid, keyGroupRange) =>
      writer.writeShared(prefix + name, bytes, kind, uid, keyGroupRange),
  };
}
