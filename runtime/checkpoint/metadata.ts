/**
 * The checkpoint metadata format (`_metadata`, Flink's
 * `MetadataV2V3SerializerBase` role): {@linkcode parseCheckpointMetadata}
 * checks what a storage reads or is asked to write, and converts the older
 * version it still reads.
 *
 * ## Versions
 *
 * | version | per subtask                                                        |
 * | ------- | ------------------------------------------------------------------ |
 * | 1       | `keyedHandle`, `operatorHandle` (`{ path, bytes }` or `null`),      |
 * |         | `keyGroupRange` (of the keyed file, or `null`), `stateUids`         |
 * | 2       | `handles`: `StateHandle[]`, each with `kind`, `shared`, `uid` and,   |
 * |         | for keyed kinds, `keyGroupRange`; `stateUids`                       |
 *
 * A version-1 subtask becomes version 2 with at most two handles marked
 * `legacyV1` (uid `""`): its keyed file as kind `keyed` with its key-group
 * range, its operator file as kind `operator`. Their content keeps the
 * version-1 layout (every operator's state by uid), which only the restore
 * path reads (`runtime/task/subtask_state.ts`). Storages always write
 * version 2.
 *
 * ## Invariants of a version-2 handle
 *
 * - `path` is `chk-<n>/<name>` when private, `shared/<name>` when shared
 *   (`shared` says which); no `..`, no leading `/`.
 * - A savepoint (`kind: "savepoint"`) holds no shared handle.
 * - `keyGroupRange` is `[first, last]` with `0 <= first <= last`.
 * - `inline` (the blob's bytes kept in the metadata, Flink's
 *   `ByteStreamStateHandle`) only on a private handle, holding exactly
 *   `bytes` bytes. In memory and in acks it is a `Uint8Array`; in the JSON
 *   of `_metadata` a base64 string ({@linkcode encodeCheckpointMetadata}
 *   writes it, {@linkcode parseCheckpointMetadata} reads either form).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type {
  CheckpointMetadata,
  StateHandle,
  StateHandleKind,
  SubtaskStateMetadata,
} from "./types.ts";

const KINDS: ReadonlySet<string> = new Set<StateHandleKind>([
  "keyed",
  "keyed-incremental",
  "timers",
  "operator",
  "source-splits",
  "sink-committables",
  "channel",
  "watermark",
]);

/**
 * The JSON text of a `_metadata` (what storages write): `metadata` as is,
 * but each inline handle's bytes as a base64 string.
 * @param metadata checked metadata ({@linkcode parseCheckpointMetadata}'s result).
 * @param indent JSON indentation (spaces), as `JSON.stringify` takes it.
 * @returns the JSON text.
 */
export function encodeCheckpointMetadata(metadata: CheckpointMetadata, indent?: number): string {
  return JSON.stringify(
    metadata,
    (_key, value) =>
      value instanceof Uint8Array
        ? Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64")
        : value,
    indent,
  );
}

/**
 * Checks that a parsed value is a version-1 or version-2
 * {@linkcode CheckpointMetadata} and returns a clean version-2 copy of it
 * (unknown fields dropped, version 1 converted as the module docs say).
 * For storages to validate what they read and write.
 *
 * @param value the parsed JSON.
 * @returns the metadata, version 2.
 * @throws {TypeError} naming the first field that is missing or of the wrong
 *   type (e.g. `'metadata.vertices[0].subtasks[1].handles[2].kind' must be
 *   one of …: current value is "blob"`), and a savepoint that refers to a
 *   shared handle.
 */
export function parseCheckpointMetadata(value: unknown): CheckpointMetadata {
  const m = record(value, "metadata");
  if (m.version !== 1 && m.version !== 2) fieldError("metadata.version", "1 or 2", m.version);
  const v1 = m.version === 1;
  const kind = m.kind;
  if (kind !== "checkpoint" && kind !== "savepoint") {
    fieldError("metadata.kind", '"checkpoint" or "savepoint"', kind);
  }
  const vertices = array(m.vertices, "metadata.vertices").map((v, i) => {
    const at = `metadata.vertices[${i}]`;
    const vertex = record(v, at);
    return {
      vertexId: string(vertex.vertexId, `${at}.vertexId`),
      operatorUids: array(vertex.operatorUids, `${at}.operatorUids`).map((u, j) =>
        string(u, `${at}.operatorUids[${j}]`)
      ),
      parallelism: integer(vertex.parallelism, `${at}.parallelism`),
      maxParallelism: integer(vertex.maxParallelism, `${at}.maxParallelism`),
      subtasks: array(vertex.subtasks, `${at}.subtasks`).map((s, j) =>
        v1 ? subtaskV1(s, `${at}.subtasks[${j}]`) : subtaskV2(s, `${at}.subtasks[${j}]`, kind)
      ),
    };
  });
  const checkpointId = integer(m.checkpointId, "metadata.checkpointId");
  if (checkpointId < 1) fieldError("metadata.checkpointId", "a positive integer", checkpointId);
  return {
    version: 2,
    jobId: string(m.jobId, "metadata.jobId"),
    jobName: string(m.jobName, "metadata.jobName"),
    checkpointId,
    kind,
    triggeredAt: number(m.triggeredAt, "metadata.triggeredAt"),
    completedAt: number(m.completedAt, "metadata.completedAt"),
    attempt: integer(m.attempt, "metadata.attempt"),
    vertices,
    totalBytes: number(m.totalBytes, "metadata.totalBytes"),
  };
}

function subtaskV2(s: unknown, at: string, kind: "checkpoint" | "savepoint"): SubtaskStateMetadata {
  const sub = record(s, at);
  return {
    subtask: integer(sub.subtask, `${at}.subtask`),
    handles: array(sub.handles, `${at}.handles`).map((h, k) => {
      const handle = stateHandle(h, `${at}.handles[${k}]`);
      if (handle.shared && kind === "savepoint") {
        fieldError(`${at}.handles[${k}].shared`, "false in a savepoint (self-contained)", true);
      }
      return handle;
    }),
    stateUids: stateUids(sub.stateUids, at),
  };
}

function subtaskV1(s: unknown, at: string): SubtaskStateMetadata {
  const sub = record(s, at);
  const handles: StateHandle[] = [];
  const keyGroupRange = sub.keyGroupRange === null
    ? undefined
    : range(sub.keyGroupRange, `${at}.keyGroupRange`);
  if (sub.keyedHandle !== null) {
    const blob = storedBlob(sub.keyedHandle, `${at}.keyedHandle`);
    handles.push({
      ...blob,
      kind: "keyed",
      shared: false,
      uid: "",
      ...(keyGroupRange === undefined ? {} : { keyGroupRange }),
      legacyV1: true,
    });
  }
  if (sub.operatorHandle !== null) {
    const blob = storedBlob(sub.operatorHandle, `${at}.operatorHandle`);
    handles.push({ ...blob, kind: "operator", shared: false, uid: "", legacyV1: true });
  }
  return {
    subtask: integer(sub.subtask, `${at}.subtask`),
    handles,
    stateUids: stateUids(sub.stateUids, at),
  };
}

function stateUids(v: unknown, at: string): string[] {
  return array(v, `${at}.stateUids`).map((u, k) => string(u, `${at}.stateUids[${k}]`));
}

function stateHandle(v: unknown, field: string): StateHandle {
  const h = record(v, field);
  const blob = storedBlob(h, field);
  const kind = h.kind;
  if (typeof kind !== "string" || !KINDS.has(kind)) {
    fieldError(`${field}.kind`, `one of ${[...KINDS].join(", ")}`, kind);
  }
  if (typeof h.shared !== "boolean") fieldError(`${field}.shared`, "a boolean", h.shared);
  const prefix = h.shared ? "shared/" : "chk-";
  if (!blob.path.startsWith(prefix) || blob.path.split("/").includes("..")) {
    fieldError(
      `${field}.path`,
      `a path under '${prefix}${h.shared ? "" : "<n>/"}' without '..' (shared is ${h.shared})`,
      blob.path,
    );
  }
  const handle: StateHandle = {
    ...blob,
    kind: kind as StateHandleKind,
    shared: h.shared,
    uid: string(h.uid, `${field}.uid`),
    ...(h.keyGroupRange === undefined
      ? {}
      : { keyGroupRange: range(h.keyGroupRange, `${field}.keyGroupRange`) }),
    ...(h.legacyV1 === true ? { legacyV1: true as const } : {}),
    ...(h.inline === undefined ? {} : { inline: inlineBytes(h.inline, `${field}.inline`) }),
  };
  if (handle.inline !== undefined) {
    if (handle.shared) fieldError(`${field}.shared`, "false for an inline handle", true);
    if (handle.inline.length !== handle.bytes) {
      fieldError(`${field}.bytes`, `the inline length ${handle.inline.length}`, handle.bytes);
    }
  }
  return handle;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Inline bytes: a `Uint8Array` (from an ack) or its base64 (from JSON), as a fresh `Uint8Array`. */
function inlineBytes(v: unknown, field: string): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (typeof v !== "string" || v.length % 4 !== 0 || !BASE64.test(v)) {
    fieldError(field, "bytes (a Uint8Array, or base64 in JSON)", v);
  }
  return new Uint8Array(Buffer.from(v, "base64")); // a copy: small Buffers share a pool
}

function storedBlob(v: unknown, field: string): { path: string; bytes: number } {
  const h = record(v, field);
  const bytes = integer(h.bytes, `${field}.bytes`);
  if (bytes < 0) fieldError(`${field}.bytes`, "a size >= 0", bytes);
  return { path: string(h.path, `${field}.path`), bytes };
}

function range(v: unknown, field: string): [number, number] {
  const r = array(v, field);
  if (r.length !== 2) fieldError(field, "a pair [first, last]", v);
  const first = integer(r[0], `${field}[0]`);
  const last = integer(r[1], `${field}[1]`);
  if (first < 0 || last < first) fieldError(field, "[first, last] with 0 <= first <= last", v);
  return [first, last];
}

function fieldError(field: string, expected: string, value: unknown): never {
  let shown: string;
  try {
    shown = JSON.stringify(value) ?? String(value);
  } catch {
    shown = String(value);
  }
  throw new TypeError(`'${field}' must be ${expected}: current value is ${shown}`);
}

function record(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) fieldError(field, "an object", v);
  return v as Record<string, unknown>;
}

function array(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) fieldError(field, "an array", v);
  return v;
}

function string(v: unknown, field: string): string {
  if (typeof v !== "string") fieldError(field, "a string", v);
  return v;
}

function number(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) fieldError(field, "a finite number", v);
  return v;
}

function integer(v: unknown, field: string): number {
  if (!Number.isSafeInteger(v)) fieldError(field, "an integer", v);
  return v as number;
}
