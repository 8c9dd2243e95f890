/**
 * The rules every checkpoint storage shares (`storage.ts` re-exports them
 * all): {@linkcode CheckpointStorageError}, the names and paths a storage
 * accepts ({@linkcode isValidName}, {@linkcode parseStatePath}), and how the
 * completed checkpoints are found from a storage's listing and metadata
 * reads ({@linkcode findCompleted}, {@linkcode findLatestCompleted}).
 *
 * A leaf: it imports only types, so the storages and `storage.ts` import it
 * without cycles.
 *
 * ## Paths of state blobs
 *
 * A state handle's path is relative to the job's directory (or object-name
 * prefix) and is one of:
 *
 * | path             | namespace | deleted by                                     |
 * | ---------------- | --------- | ---------------------------------------------- |
 * | `chk-<n>/<name>` | private   | `discard(jobId, n)`, with its checkpoint       |
 * | `shared/<name>`  | shared    | `deleteShared`, when the shared state registry says so; `discardJob` |
 *
 * `<name>` is a valid name ({@linkcode isValidName}); `<n>` a checkpoint id
 * without leading zeros.
 *
 * @module
 */

import type { CheckpointId, CheckpointMetadata } from "./types.ts";

/** What went wrong in a {@linkcode CheckpointStorageError}. */
export type CheckpointStorageErrorCode = "NOT_FOUND" | "CORRUPT" | "ALREADY_EXISTS" | "IO";

/** Options of {@linkcode CheckpointStorageError}. */
export interface CheckpointStorageErrorOptions {
  /** What went wrong. */
  readonly code: CheckpointStorageErrorCode;
  /** The job. */
  readonly jobId: string;
  /** The checkpoint, when the operation concerned one. */
  readonly checkpointId?: CheckpointId;
  /** The file or directory concerned. */
  readonly path: string;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * A checkpoint storage operation failed. The message names the operation,
 * the job, the checkpoint id and the path; `cause` holds the underlying
 * error.
 */
export class CheckpointStorageError extends Error {
  /** What went wrong. */
  readonly code: CheckpointStorageErrorCode;
  /** The job. */
  readonly jobId: string;
  /** The checkpoint, when the operation concerned one. */
  readonly checkpointId: CheckpointId | undefined;
  /** The file or directory concerned. */
  readonly path: string;

  /**
   * Creates the error; the message gets the code, the path and the cause's message appended.
   *
   * @param message what failed, e.g. `Cannot read the metadata of checkpoint 3 of job "j"`.
   * @param options code, job, checkpoint, path and cause.
   */
  constructor(message: string, options: CheckpointStorageErrorOptions) {
    const cause = options.cause;
    const detail = cause instanceof Error
      ? `: ${cause.message}`
      : cause === undefined
      ? ""
      : `: ${String(cause)}`;
    super(`${message} (${options.code}, at ${options.path})${detail}`, { cause });
    this.name = "CheckpointStorageError";
    this.code = options.code;
    this.jobId = options.jobId;
    this.checkpointId = options.checkpointId;
    this.path = options.path;
  }
}

/** Name of a checkpoint's commit point, `<jobId>/chk-<id>/_metadata`, in every storage. */
export const METADATA = "_metadata";
/** A checkpoint's directory (or object-name segment), `chk-<id>`; group 1 is the id. */
export const CHECKPOINT_DIR: RegExp = /^chk-([1-9][0-9]*)$/;
/** Longest job id or state name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 200;
/** The directory (or object-name segment) of a job's shared state blobs: `<jobId>/shared/<name>`. */
export const SHARED_DIR = "shared";

/**
 * What {@linkcode findCompleted} and {@linkcode findLatestCompleted} need of a
 * storage: its listing of checkpoint ids and its metadata reads (a
 * `CheckpointStorage` has both).
 */
export interface CompletedCheckpointSource {
  /** Ids of every checkpoint directory, complete or not, ascending (`CheckpointStorage.listAll`). */
  listAll(jobId: string): Promise<CheckpointId[]>;
  /** A complete checkpoint's metadata (`CheckpointStorage.readMetadata`). */
  readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata>;
}

/**
 * `latestCompleted` of any storage, from its `listAll` and `readMetadata`:
 * the newest checkpoint with readable metadata. A `_metadata` that exists
 * but is corrupt is never skipped.
 * @throws {CheckpointStorageError} `CORRUPT` naming the checkpoint, or what `listAll` throws.
 */
export async function findLatestCompleted(
  storage: CompletedCheckpointSource,
  jobId: string,
): Promise<CheckpointMetadata | undefined> {
  for (const id of (await storage.listAll(jobId)).reverse()) {
    const meta = await readIfComplete(storage, jobId, id, "find the latest completed checkpoint");
    if (meta !== undefined) return meta;
  }
  return undefined;
}

/**
 * `listCompleted` of any storage, from its `listAll` and `readMetadata`, in
 * numeric order. A corrupt `_metadata` fails the listing.
 * @throws {CheckpointStorageError} `CORRUPT` naming the checkpoint, or what `listAll` throws.
 */
export async function findCompleted(
  storage: CompletedCheckpointSource,
  jobId: string,
): Promise<CheckpointId[]> {
  const completed: CheckpointId[] = [];
  for (const id of await storage.listAll(jobId)) {
    const meta = await readIfComplete(storage, jobId, id, "list the completed checkpoints");
    if (meta !== undefined) completed.push(id);
  }
  return completed;
}

/** A checkpoint's metadata, `undefined` when it has none (aborted or torn), or a `CORRUPT` error. */
async function readIfComplete(
  storage: Pick<CompletedCheckpointSource, "readMetadata">,
  jobId: string,
  checkpointId: CheckpointId,
  operation: string,
): Promise<CheckpointMetadata | undefined> {
  try {
    return await storage.readMetadata(jobId, checkpointId);
  } catch (error) {
    if (!(error instanceof CheckpointStorageError)) throw error;
    if (error.code === "NOT_FOUND") return undefined; // aborted or torn: not complete
    if (error.code !== "CORRUPT") throw error;
    throw new CheckpointStorageError(
      `Cannot ${operation} of job ${JSON.stringify(jobId)}: ` +
        `the _metadata of checkpoint ${checkpointId} exists but is corrupt ` +
        `(refusing to skip it and fall back to an older checkpoint)`,
      { code: "CORRUPT", jobId, checkpointId, path: error.path, cause: error.cause },
    );
  }
}

/**
 * Whether `name` is a valid job id or state name in every checkpoint storage:
 * non-empty, at most {@linkcode MAX_NAME_BYTES} UTF-8 bytes, without `/`,
 * `\` or NUL, not starting with `.`, and not {@linkcode METADATA}.
 *
 * @param name the candidate.
 * @returns `true` when valid.
 */
export function isValidName(name: string): boolean {
  return typeof name === "string" && name.length > 0 &&
    new TextEncoder().encode(name).byteLength <= MAX_NAME_BYTES &&
    !name.startsWith(".") && name !== METADATA && !/[/\\\0]/.test(name);
}

/**
 * Checks a job id or state name with {@linkcode isValidName}.
 *
 * @param what which argument is checked, for the message.
 * @param name the value.
 * @throws {RangeError} naming the argument and its current value.
 */
export function checkName(what: "jobId" | "name", name: string): void {
  if (!isValidName(name)) {
    throw new RangeError(
      `Checkpoint storage: '${what}' must be a non-empty file name of at most ${MAX_NAME_BYTES} bytes ` +
        `without '/', '\\', NUL or a leading '.', and not "${METADATA}": current value is ${
          JSON.stringify(name)
        }`,
    );
  }
}

/**
 * Checks that a checkpoint id is a positive safe integer.
 *
 * @param checkpointId the value.
 * @throws {RangeError} naming its current value.
 */
export function checkCheckpointId(checkpointId: CheckpointId): void {
  if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
    throw new RangeError(
      `Checkpoint storage: 'checkpointId' must be a positive integer: current value is ${checkpointId}`,
    );
  }
}

/** A state blob's path, parsed by {@linkcode parseStatePath}. */
export type StatePath =
  | {
    /** A blob of one checkpoint, `chk-<n>/<name>`. */
    readonly namespace: "private";
    /** The checkpoint it belongs to. */
    readonly checkpointId: CheckpointId;
    /** The blob's name within the checkpoint. */
    readonly name: string;
  }
  | {
    /** A blob of the job's shared namespace, `shared/<name>`. */
    readonly namespace: "shared";
    /** The blob's name within the namespace. */
    readonly name: string;
  };

/**
 * Parses a state handle's path: `chk-<n>/<name>` (private to checkpoint
 * `n`) or `shared/<name>` (shared), with a valid name.
 *
 * @param jobId the job, for the message.
 * @param path the handle's path.
 * @param operation what the caller does, for the message, e.g. `"read state"`.
 * @returns the namespace, checkpoint id (private only) and name.
 * @throws {RangeError} for any other path (absolute, with `..`, `_metadata`,
 *   a checkpoint id with a leading zero), naming it.
 *
 * @example
 * ```ts
 * import { parseStatePath } from "./storage_rules.ts";
 * const p = parseStatePath("job-1", "shared/map#0-a1-7", "read state");
 * console.assert(p.namespace === "shared" && p.name === "map#0-a1-7");
 * ```
 */
export function parseStatePath(jobId: string, path: string, operation: string): StatePath {
  const segments = typeof path === "string" ? path.split("/") : [];
  const name = segments[1] ?? "";
  if (segments.length === 2 && isValidName(name)) {
    if (segments[0] === SHARED_DIR) return { namespace: "shared", name };
    const match = CHECKPOINT_DIR.exec(segments[0] ?? "");
    if (match !== null) return { namespace: "private", checkpointId: Number(match[1]), name };
  }
  throw new RangeError(
    `Cannot ${operation} of job ${JSON.stringify(jobId)}: ` +
      `'handle.path' must be "chk-<id>/<name>" or "${SHARED_DIR}/<name>": current value is ${
        JSON.stringify(path)
      }`,
  );
}

/**
 * Parses the path of a shared blob, `shared/<name>`, as `deleteShared` takes it.
 *
 * @param jobId the job, for the message.
 * @param path the path.
 * @returns the blob's name.
 * @throws {RangeError} for any other path, naming it (a private blob is
 *   deleted with its checkpoint, never by `deleteShared`).
 */
export function sharedNameOf(jobId: string, path: string): string {
  const segments = typeof path === "string" ? path.split("/") : [];
  const name = segments[1] ?? "";
  if (segments.length !== 2 || segments[0] !== SHARED_DIR || !isValidName(name)) {
    throw new RangeError(
      `Cannot delete shared state of job ${JSON.stringify(jobId)}: ` +
        `each path must be "${SHARED_DIR}/<name>": current value is ${JSON.stringify(path)}`,
    );
  }
  return name;
}
