/**
 * Where savepoints live, and how a job reads one: savepoint ids and paths,
 * the copy of a completed savepoint out of the job's checkpoint directory
 * into its own self-contained location, and a storage view that reads a
 * restored savepoint from there (Flink's `state.savepoints.dir`,
 * `SavepointRestoreSettings`, and the savepoint's external pointer).
 *
 * ## Layout
 *
 * A savepoint is stored like the checkpoints of a job whose id is the
 * savepoint's id, `savepoint-<jobId>-<checkpointId>`, in a storage rooted at
 * the savepoint directory; its path is that pseudo job's location:
 *
 * ```text
 * local:   <dir>/savepoint-<jobId>-<cid>/chk-<cid>/_metadata  (+ the state blobs beside it)
 *          path = <dir>/savepoint-<jobId>-<cid>
 * cluster: nats-object-store://<bucket>/savepoint-<jobId>-<cid>/chk-<cid>/...
 *          path = nats-object-store://<bucket>/savepoint-<jobId>-<cid>/
 * ```
 *
 * The `_metadata` in a savepoint names the savepoint id as its `jobId` and
 * has `kind: "savepoint"`; its state handles are relative to the savepoint
 * path, so the savepoint directory can be moved or copied as a whole.
 * (Flink writes `<dir>/savepoint-<jobid6>-<random>/_metadata`; the extra
 * `chk-<cid>` level here lets every `CheckpointStorage` read a savepoint
 * with the calls it reads checkpoints with.)
 *
 * ## Invariants
 *
 * - A savepoint is complete iff its `_metadata` exists; it is written last,
 *   after every blob was copied (the storage's own commit point).
 * - Nothing here deletes a savepoint: {@linkcode savepointReadingStorage}
 *   refuses writes and discards under the savepoint's id.
 *
 * @module
 */

import { basename, dirname, resolve } from "node:path";
import {
  type CheckpointStorage,
  CheckpointStorageError,
  LocalDirectoryCheckpointStorage,
} from "./storage.ts";
import type { CheckpointId, CheckpointMetadata } from "./types.ts";

/** Where a blob is and how big (a storage's written-blob shape; state handles extend it). */
export interface BlobRef {
  /** Relative to the job's location, e.g. `chk-7/v1-0-a2.keyed-count`. */
  readonly path: string;
  /** Size in bytes. */
  readonly bytes: number;
}

/** Prefix of every savepoint id. */
export const SAVEPOINT_PREFIX = "savepoint-";

/** Scheme of savepoint paths in a NATS Object Store bucket (as `ObjectStoreCheckpointStorage` locations). */
export const OBJECT_STORE_SAVEPOINT_SCHEME = "nats-object-store://";

/**
 * The id of a savepoint of checkpoint `checkpointId` of job `jobId`:
 * `savepoint-<jobId>-<checkpointId>`.
 *
 * @example
 * ```ts
 * import { savepointId } from "./savepoint_storage.ts";
 * console.assert(savepointId("count-1a2b3c4d", 7) === "savepoint-count-1a2b3c4d-7");
 * ```
 */
export function savepointId(jobId: string, checkpointId: CheckpointId): string {
  return `${SAVEPOINT_PREFIX}${jobId}-${checkpointId}`;
}

/**
 * A savepoint path taken apart: where its storage is rooted, and the
 * savepoint's id within it.
 */
export type SavepointPath =
  | {
    /** A local (or mounted shared) directory. */
    readonly kind: "directory";
    /** The savepoint directory: the root of the storage holding it (absolute). */
    readonly directory: string;
    /** The savepoint's id, the last path segment. */
    readonly savepointId: string;
  }
  | {
    /** A NATS Object Store bucket. */
    readonly kind: "object-store";
    /** The bucket. */
    readonly bucket: string;
    /** The savepoint's id, the object-name prefix. */
    readonly savepointId: string;
  };

/** A savepoint path that names no savepoint, or a savepoint that cannot be read. */
export class SavepointPathError extends Error {
  /** The error class name. */
  override name = "SavepointPathError";
}

/**
 * Parses a savepoint path as returned by `triggerSavepoint`.
 *
 * @param path `<dir>/savepoint-…` or `nats-object-store://<bucket>/savepoint-…/`.
 * @returns its parts.
 * @throws {SavepointPathError} when the last segment is not a savepoint id
 *   (`savepoint-<…>`) or an object-store path has no bucket; the message
 *   names the path.
 *
 * @example
 * ```ts
 * import { parseSavepointPath } from "./savepoint_storage.ts";
 * const p = parseSavepointPath("nats-object-store://weir-checkpoints/savepoint-j-1a-3/");
 * console.assert(p.kind === "object-store" && p.bucket === "weir-checkpoints");
 * ```
 */
export function parseSavepointPath(path: string): SavepointPath {
  const bad = (why: string) =>
    new SavepointPathError(
      `Not a savepoint path: ${JSON.stringify(path)}: ${why} ` +
        `(expected <dir>/${SAVEPOINT_PREFIX}<job>-<id> or ` +
        `${OBJECT_STORE_SAVEPOINT_SCHEME}<bucket>/${SAVEPOINT_PREFIX}<job>-<id>/)`,
    );
  if (typeof path !== "string" || path.length === 0) throw bad("it is empty");
  if (path.startsWith(OBJECT_STORE_SAVEPOINT_SCHEME)) {
    const parts = path.slice(OBJECT_STORE_SAVEPOINT_SCHEME.length).split("/").filter((s) =>
      s !== ""
    );
    if (parts.length !== 2) throw bad("it must have exactly a bucket and a savepoint id");
    const [bucket, id] = parts as [string, string];
    if (!id.startsWith(SAVEPOINT_PREFIX)) throw bad(`'${id}' is not a savepoint id`);
    return { kind: "object-store", bucket, savepointId: id };
  }
  const trimmed = path.replace(/[/\\]+$/, "");
  const id = basename(trimmed);
  if (!id.startsWith(SAVEPOINT_PREFIX)) throw bad(`'${id}' is not a savepoint id`);
  return { kind: "directory", directory: resolve(dirname(trimmed)), savepointId: id };
}

/** Every state handle a metadata references (in any subtask field, list or not). */
export function metadataHandles(meta: CheckpointMetadata): BlobRef[] {
  const out: BlobRef[] = [];
  const isHandle = (v: unknown): v is BlobRef =>
    typeof v === "object" && v !== null && typeof (v as BlobRef).path === "string" &&
    typeof (v as BlobRef).bytes === "number";
  for (const v of meta.vertices) {
    for (const s of v.subtasks) {
      for (const value of Object.values(s as unknown as Record<string, unknown>)) {
        if (isHandle(value)) out.push(value);
        else if (Array.isArray(value)) { for (const h of value) if (isHandle(h)) out.push(h); }
      }
    }
  }
  return out;
}

/** Options of {@linkcode copyToSavepoint}. */
export interface CopyToSavepointOptions {
  /** The job's checkpoint storage, holding the completed savepoint as checkpoint `checkpointId`. */
  readonly from: CheckpointStorage;
  /** The job. */
  readonly jobId: string;
  /** The completed savepoint's checkpoint id. */
  readonly checkpointId: CheckpointId;
  /** The storage rooted at the savepoint directory. */
  readonly to: CheckpointStorage;
}

/**
 * Copies a completed savepoint out of the job's checkpoint storage into its
 * own location (see the module docs): every state blob, then the
 * `_metadata` (with `jobId` = the savepoint id and `kind: "savepoint"`).
 * Blobs are copied one at a time (bounded memory: one blob); inline
 * handles (small state kept in the metadata) need no copy, the metadata
 * carries them.
 *
 * @returns the savepoint path (`to.jobLocation(savepointId)`).
 * @throws {CheckpointStorageError} when a read or write fails (`IO`,
 *   `NOT_FOUND`, `CORRUPT`), or `ALREADY_EXISTS` when that savepoint exists.
 * @throws {SavepointPathError} when a handle is not a private blob of the
 *   checkpoint (`chk-<id>/<name>`): a savepoint must not reference shared state.
 */
export async function copyToSavepoint(options: CopyToSavepointOptions): Promise<string> {
  const { from, to, jobId, checkpointId } = options;
  const id = savepointId(jobId, checkpointId);
  const meta = await from.readMetadata(jobId, checkpointId);
  const prefix = `chk-${checkpointId}/`;
  for (const handle of metadataHandles(meta)) {
    const name = handle.path.startsWith(prefix) ? handle.path.slice(prefix.length) : "";
    if (name === "" || name.includes("/")) {
      throw new SavepointPathError(
        `Cannot copy savepoint ${checkpointId} of job ${jobId}: state handle ` +
          `${JSON.stringify(handle.path)} is not a private blob of the savepoint ` +
          `('${prefix}<name>'); a savepoint must be self-contained`,
      );
    }
    if ((handle as { inline?: Uint8Array }).inline !== undefined) continue; // in the metadata
    const data = await from.readState(jobId, handle);
    await to.writeState(id, checkpointId, name, data);
  }
  await to.writeMetadata({ ...meta, jobId: id, kind: "savepoint" });
  return to.jobLocation(id);
}

/**
 * A storage that reads one savepoint from its own location and passes
 * everything else to the job's storage: what a job restored from a
 * savepoint in another directory gives its subtasks, so they read the
 * savepoint's state with the calls they read checkpoints with.
 *
 * Reads under `savepointId` (`readState`, `readMetadata`, `latestCompleted`,
 * `listCompleted`, `listAll`, `jobLocation`) go to `savepointStorage`;
 * `writeState`, `writeMetadata`, `discard` and `discardJob` under it throw a
 * `CheckpointStorageError` (a job never changes or deletes a savepoint);
 * every other call, and every other job id, goes to `base` (so methods the
 * interface gains later pass through unchanged).
 *
 * @param base the job's checkpoint storage.
 * @param savepointId the restored savepoint's id.
 * @param savepointStorage the storage rooted at the savepoint's directory.
 * @returns the combined storage.
 */
export function savepointReadingStorage(
  base: CheckpointStorage,
  savepointId: string,
  savepointStorage: CheckpointStorage,
): CheckpointStorage {
  const pick = (jobId: string) => (jobId === savepointId ? savepointStorage : base);
  const refuse = (jobId: string, what: string) => {
    if (jobId !== savepointId) return;
    throw new CheckpointStorageError(
      `Cannot ${what} savepoint ${jobId}: savepoints are read-only`,
      {
        code: "IO",
        jobId,
        path: savepointStorage.jobLocation(jobId),
        cause: "a job never writes or deletes the savepoint it was restored from",
      },
    );
  };
  const overrides: Partial<CheckpointStorage> = {
    readState: (jobId, handle) => pick(jobId).readState(jobId, handle),
    readMetadata: (jobId, id) => pick(jobId).readMetadata(jobId, id),
    latestCompleted: (jobId) => pick(jobId).latestCompleted(jobId),
    listCompleted: (jobId) => pick(jobId).listCompleted(jobId),
    listAll: (jobId) => pick(jobId).listAll(jobId),
    jobLocation: (jobId) => pick(jobId).jobLocation(jobId),
    writeState: async (jobId, id, name, data) => {
      refuse(jobId, "write state into");
      return await base.writeState(jobId, id, name, data);
    },
    writeMetadata: async (meta) => {
      refuse(meta.jobId, "write the metadata of");
      return await base.writeMetadata(meta);
    },
    discard: async (jobId, id) => {
      refuse(jobId, "discard");
      return await base.discard(jobId, id);
    },
    discardJob: async (jobId) => {
      refuse(jobId, "discard");
      return await base.discardJob(jobId);
    },
  };
  return new Proxy(base, {
    get(target, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof CheckpointStorage];
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * The one completed savepoint under `savepointId` in `storage`: its metadata.
 *
 * @throws {SavepointPathError} when there is none (naming the path), or
 *   the metadata is not a savepoint's.
 * @throws {CheckpointStorageError} when listing or reading fails.
 */
export async function readSavepointMetadata(
  storage: CheckpointStorage,
  savepointId: string,
): Promise<CheckpointMetadata> {
  const ids = await storage.listCompleted(savepointId);
  const where = storage.jobLocation(savepointId);
  if (ids.length !== 1) {
    throw new SavepointPathError(
      `No savepoint at ${where}: ` +
        (ids.length === 0
          ? "it holds no completed savepoint (no _metadata)"
          : `it holds ${ids.length} checkpoints [${ids.join(", ")}], a savepoint holds one`),
    );
  }
  const meta = await storage.readMetadata(savepointId, ids[0]!);
  if (meta.kind !== "savepoint") {
    throw new SavepointPathError(
      `No savepoint at ${where}: its _metadata is of kind ${JSON.stringify(meta.kind)}`,
    );
  }
  return meta;
}

/**
 * The storage of a local savepoint directory (a `LocalDirectoryCheckpointStorage` rooted there).
 * @throws {RangeError} when `directory` is empty.
 */
export function localSavepointStorage(directory: string): CheckpointStorage {
  return new LocalDirectoryCheckpointStorage({ directory });
}
