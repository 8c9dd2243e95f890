/**
 * The inside of a slot's checkpoint upload thread (a Web Worker the slot
 * thread starts; see `checkpoint_uploads.ts`): it writes the state blobs of
 * the slot's checkpoints to the cluster's Object Store bucket over a NATS
 * connection of its own, so neither the upload's work (chunking, SHA-256,
 * JetStream publishes and their acknowledgements, the info and purge
 * requests of an overwrite) nor its bytes on the socket delay the slot's
 * mailbox loops and data buffers. Flink runs the same part on the task's
 * `asyncOperationsThreadPool` (`AsyncCheckpointRunnable`).
 *
 * ## Protocol ({@linkcode UploadRequest} in, {@linkcode UploadReply} out)
 *
 * 1. `open`: connect and open the bucket; answers `opened`, or `open-failed`
 *    with the error's message (the thread then only answers `write` with
 *    `write-failed`).
 * 2. `write` (any number, concurrently): `writeState(jobId, checkpointId,
 *    name, data)` of `ObjectStoreCheckpointStorage`; answers `written` with
 *    the handle, or `write-failed` with the error as plain data
 *    ({@linkcode UploadError}: a `CheckpointStorageError`'s code, job,
 *    checkpoint and path survive the thread boundary).
 *
 * @module
 */

import { connectNats } from "../actor/nats_connect.ts";
import { CheckpointStorageError } from "../checkpoint/storage.ts";
import { ObjectStoreCheckpointStorage } from "../checkpoint/object_store_storage.ts";
import type { StoredBlob } from "../checkpoint/types.ts";
import type { SlotLaunch } from "./role.ts";

/** What the slot thread asks its upload thread. */
export type UploadRequest =
  | {
    readonly t: "open";
    /** How to reach NATS (the slot's launch options). */
    readonly nats: SlotLaunch["nats"];
    /** The checkpoint bucket. */
    readonly bucket: string;
    /** The connection's name, e.g. `weir-slot-<slotId>-uploads`. */
    readonly name: string;
  }
  | {
    readonly t: "write";
    /** Correlates the reply. */
    readonly id: number;
    readonly jobId: string;
    readonly checkpointId: number;
    /** The blob's name within the checkpoint. */
    readonly name: string;
    /** The bytes (transferred, not copied). */
    readonly data: Uint8Array;
  };

/** An error crossing the thread boundary as plain data. */
export interface UploadError {
  /** The error's class name (`CheckpointStorageError`, `RangeError`, …). */
  readonly name: string;
  readonly message: string;
  /** A `CheckpointStorageError`'s code, job, checkpoint and path. */
  readonly storage?: {
    readonly code: CheckpointStorageError["code"];
    readonly jobId: string;
    readonly checkpointId: number | undefined;
    readonly path: string;
  };
}

/** What the upload thread answers. */
export type UploadReply =
  | { readonly t: "opened" }
  | { readonly t: "open-failed"; readonly message: string }
  | { readonly t: "written"; readonly id: number; readonly handle: StoredBlob }
  | { readonly t: "write-failed"; readonly id: number; readonly error: UploadError };

/** An error as {@linkcode UploadError}. */
export function toUploadError(error: unknown): UploadError {
  if (error instanceof CheckpointStorageError) {
    return {
      name: error.name,
      message: error.message,
      storage: {
        code: error.code,
        jobId: error.jobId,
        checkpointId: error.checkpointId,
        path: error.path,
      },
    };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}

/**
 * The error an {@linkcode UploadError} describes: a `CheckpointStorageError`
 * with its code, job, checkpoint and path, a `RangeError`, or an `Error`,
 * each with the original message.
 */
export function fromUploadError(e: UploadError): Error {
  let error: Error;
  if (e.storage !== undefined) {
    error = new CheckpointStorageError("", {
      code: e.storage.code,
      jobId: e.storage.jobId,
      ...(e.storage.checkpointId === undefined ? {} : { checkpointId: e.storage.checkpointId }),
      path: e.storage.path,
    });
  } else if (e.name === "RangeError") error = new RangeError("");
  else {
    error = new Error("");
    error.name = e.name;
  }
  error.message = e.message;
  return error;
}

/**
 * Serves one slot's uploads in this thread: what this module does when it is
 * a Web Worker's entry module (exported for tests that wrap it).
 * @param scope the worker's global scope.
 */
export function serveUploads(scope: UploadScope): void {
  let storage: Promise<ObjectStoreCheckpointStorage> | undefined;
  scope.onmessage = (e) => {
    const req = e.data;
    if (req.t === "open") {
      storage = (async () => {
        const nc = await connectNats({ ...req.nats, name: req.name });
        return await ObjectStoreCheckpointStorage.open({ connection: nc, bucket: req.bucket });
      })();
      storage.then(
        () => scope.postMessage({ t: "opened" }),
        (error) =>
          scope.postMessage({
            t: "open-failed",
            message: error instanceof Error ? error.message : String(error),
          }),
      );
      return;
    }
    const opened = storage ??
      Promise.reject(new Error("the upload thread was asked to write before 'open'"));
    opened
      .then((s) => s.writeState(req.jobId, req.checkpointId, req.name, req.data))
      .then(
        (handle) => scope.postMessage({ t: "written", id: req.id, handle }),
        (error) =>
          scope.postMessage({ t: "write-failed", id: req.id, error: toUploadError(error) }),
      );
  };
}

/** The dedicated-worker global's part {@linkcode serveUploads} uses. */
export interface UploadScope {
  postMessage(message: UploadReply): void;
  onmessage: ((e: MessageEvent<UploadRequest>) => void) | null;
}

// Serve only when started as a Web Worker (a module importing the types must not start serving).
const global = globalThis as unknown as { WorkerGlobalScope?: unknown };
if (typeof global.WorkerGlobalScope !== "undefined" && import.meta.main) {
  serveUploads(globalThis as unknown as UploadScope);
}
