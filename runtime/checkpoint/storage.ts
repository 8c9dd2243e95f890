/**
 * Checkpoint storage: where snapshotted state and checkpoint metadata live
 * (Flink's `CheckpointStorage`), plus the local-directory implementation used
 * in local mode.
 *
 * ## Layout
 *
 * ```text
 * <directory>/<jobId>/chk-<id>/<name>       state blobs, one per writeState
 * <directory>/<jobId>/chk-<id>/_metadata    JSON CheckpointMetadata: the commit point
 * <directory>/<jobId>/chk-<id>/.<name>.<random>.tmp   in-flight writes (garbage after a crash)
 * ```
 *
 * ## Invariants
 *
 * - Every file is written atomically: to a temp file in the same directory,
 *   fsynced, renamed into place, and the directory fsynced. A reader sees the
 *   old content or the new, never a torn one.
 * - A checkpoint is complete if and only if its `_metadata` exists. It is
 *   written last (after every state blob is durable), atomically, never
 *   overwritten, and deleted first by `discard`, so a crash at any point
 *   leaves either a complete checkpoint or a directory without `_metadata`
 *   (at most a temp file of it) that
 *   {@linkcode CheckpointStorage.latestCompleted} ignores.
 * - A `_metadata` that exists but does not parse (or names another
 *   checkpoint) cannot come from a crash: it is corruption, and every read
 *   reports it as `CORRUPT` instead of skipping it. Skipping it would make a
 *   restore fall back to an older checkpoint whose successors' transactions
 *   two-phase-commit sinks may already have committed: records committed
 *   twice.
 * - State handles are relative to `<directory>/<jobId>`, so a job directory
 *   can be moved as a whole.
 *
 * ```ts
 * import { LocalDirectoryCheckpointStorage } from "./storage.ts";
 * const dir = await Deno.makeTempDir();
 * const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
 * const handle = await storage.writeState("job-1", 1, "src#0", new Uint8Array([1, 2]));
 * console.assert(handle.path === "chk-1/src#0" && handle.bytes === 2);
 * console.assert((await storage.latestCompleted("job-1")) === undefined);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { join } from "node:path";
import type { CheckpointId, CheckpointMetadata, StateHandle } from "./types.ts";

/**
 * Durable storage of checkpoints, shared by the coordinator (metadata,
 * retention) and the subtasks (state blobs). Implementations: the local
 * directory here and, for clusters, a NATS Object Store bucket; both must keep
 * the invariants in this module's docs.
 */
export interface CheckpointStorage {
  /**
   * Writes one state blob of a checkpoint, atomically; overwrites a blob of
   * the same name.
   *
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @param name the blob's name within the checkpoint (unique per subtask and
   *   attempt, e.g. `"map-1#0-a2"`); no `/`, `\`, leading `.`, nor `_metadata`.
   * @param data the bytes.
   * @returns the handle to put in the subtask's ack.
   * @throws {RangeError} for an invalid job id, checkpoint id or name.
   * @throws {CheckpointStorageError} `IO` when writing fails.
   */
  writeState(
    jobId: string,
    checkpointId: CheckpointId,
    name: string,
    data: Uint8Array,
  ): Promise<StateHandle>;
  /**
   * Reads a state blob back.
   *
   * @throws {CheckpointStorageError} `NOT_FOUND`, `CORRUPT` (size differs from
   *   `handle.bytes`) or `IO`.
   * @throws {RangeError} for an invalid job id or a handle path that escapes the job directory.
   */
  readState(jobId: string, handle: StateHandle): Promise<Uint8Array>;
  /**
   * Writes a checkpoint's metadata atomically: the commit point. Call it only
   * after every state blob it references was written.
   *
   * @returns the checkpoint's location (an external pointer to show and to restore from).
   * @throws {CheckpointStorageError} `ALREADY_EXISTS` when the checkpoint is already complete, `IO`.
   * @throws {TypeError} when `meta` is malformed.
   */
  writeMetadata(meta: CheckpointMetadata): Promise<string>;
  /**
   * Reads a complete checkpoint's metadata.
   *
   * @throws {CheckpointStorageError} `NOT_FOUND` (no `_metadata`), `CORRUPT`, `IO`.
   */
  readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata>;
  /**
   * The complete checkpoint (or savepoint) with the highest id, or `undefined`.
   * Directories without `_metadata` (incomplete checkpoints: aborted, or torn
   * by a crash) are skipped; a `_metadata` that exists but cannot be parsed
   * is never skipped (see the module's invariants).
   *
   * @throws {CheckpointStorageError} `CORRUPT`, naming the path, when the
   *   `_metadata` of a checkpoint newer than every complete one exists but is
   *   corrupt; `IO` when the job directory or a `_metadata` cannot be read.
   */
  latestCompleted(jobId: string): Promise<CheckpointMetadata | undefined>;
  /**
   * Ids of the complete checkpoints and savepoints, ascending: those whose
   * `_metadata` exists, as {@linkcode CheckpointStorage.latestCompleted}
   * decides. Each `_metadata` is read and checked.
   *
   * @throws {CheckpointStorageError} `CORRUPT`, naming the path, when any
   *   `_metadata` exists but is corrupt; `IO`.
   */
  listCompleted(jobId: string): Promise<CheckpointId[]>;
  /**
   * Ids of every checkpoint directory, complete or not, ascending: the
   * incomplete ones are garbage from aborted checkpoints or crashes.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  listAll(jobId: string): Promise<CheckpointId[]>;
  /**
   * Deletes a checkpoint: its `_metadata` first, then its state. Idempotent.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  discard(jobId: string, checkpointId: CheckpointId): Promise<void>;
  /**
   * Deletes every checkpoint and savepoint of a job. Idempotent.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  discardJob(jobId: string): Promise<void>;
  /**
   * Where the checkpoints of a job live, for messages and logs: a directory
   * or a URL such as `nats-object-store://<bucket>/<jobId>/`.
   *
   * @throws {RangeError} for an invalid job id.
   */
  jobLocation(jobId: string): string;
}

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

/** Options of {@linkcode LocalDirectoryCheckpointStorage}. */
export interface LocalDirectoryCheckpointStorageOptions {
  /** Root directory; created on first write. One subdirectory per job. */
  readonly directory: string;
}

/** Name of a checkpoint's commit point, `<jobId>/chk-<id>/_metadata`, in every storage. */
export const METADATA = "_metadata";
/** A checkpoint's directory (or object-name segment), `chk-<id>`; group 1 is the id. */
export const CHECKPOINT_DIR: RegExp = /^chk-([1-9][0-9]*)$/;
/** Longest job id or state name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 200;

/**
 * {@linkcode CheckpointStorage} on a local (or mounted shared) directory,
 * Flink's `FileSystemCheckpointStorage` on `file://`. Needs `--allow-read`
 * and `--allow-write` on the directory.
 *
 * Durability: each file is fsynced before its rename and each directory
 * after an entry changes, so a completed checkpoint survives a power loss.
 */
export class LocalDirectoryCheckpointStorage implements CheckpointStorage {
  /** The root directory. */
  readonly directory: string;

  /**
   * Creates a storage rooted at `options.directory` (nothing is touched until the first write).
   *
   * @param options the root directory.
   * @throws {RangeError} when `directory` is empty.
   */
  constructor(options: LocalDirectoryCheckpointStorageOptions) {
    if (typeof options.directory !== "string" || options.directory.length === 0) {
      throw new RangeError(
        `Cannot create a LocalDirectoryCheckpointStorage: 'directory' must be a non-empty path: current value is ${
          JSON.stringify(options.directory)
        }`,
      );
    }
    this.directory = options.directory;
  }

  /**
   * The directory of a job: `<directory>/<jobId>`.
   *
   * @param jobId the job.
   * @returns the path.
   * @throws {RangeError} for an invalid job id.
   */
  jobDirectory(jobId: string): string {
    checkName("jobId", jobId);
    return join(this.directory, jobId);
  }

  /**
   * The directory of a checkpoint: `<directory>/<jobId>/chk-<id>`.
   *
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @returns the path.
   * @throws {RangeError} for an invalid job id or checkpoint id.
   */
  checkpointDirectory(jobId: string, checkpointId: CheckpointId): string {
    checkCheckpointId(checkpointId);
    return join(this.jobDirectory(jobId), `chk-${checkpointId}`);
  }

  /** See {@linkcode CheckpointStorage.jobLocation}: the job's directory. */
  jobLocation(jobId: string): string {
    return this.jobDirectory(jobId);
  }

  /** See {@linkcode CheckpointStorage.writeState}. */
  async writeState(
    jobId: string,
    checkpointId: CheckpointId,
    name: string,
    data: Uint8Array,
  ): Promise<StateHandle> {
    checkName("name", name);
    const dir = this.checkpointDirectory(jobId, checkpointId);
    const path = join(dir, name);
    try {
      await ensureDirectory(dir);
      await writeAtomically(dir, name, data);
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot write state ${JSON.stringify(name)} of checkpoint ${checkpointId} of job ${
          JSON.stringify(jobId)
        }`,
        { code: "IO", jobId, checkpointId, path, cause },
      );
    }
    return { path: `chk-${checkpointId}/${name}`, bytes: data.byteLength };
  }

  /** See {@linkcode CheckpointStorage.readState}. */
  async readState(jobId: string, handle: StateHandle): Promise<Uint8Array> {
    const segments = handle.path.split("/");
    const match = CHECKPOINT_DIR.exec(segments[0] ?? "");
    if (segments.length !== 2 || match === null || !isValidName(segments[1] ?? "")) {
      throw new RangeError(
        `Cannot read state of job ${
          JSON.stringify(jobId)
        }: 'handle.path' must be "chk-<id>/<name>": current value is ${
          JSON.stringify(handle.path)
        }`,
      );
    }
    const checkpointId = Number(match[1]);
    const path = join(this.jobDirectory(jobId), ...segments);
    const what = `Cannot read state ${
      JSON.stringify(handle.path)
    } of checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`;
    let data: Uint8Array;
    try {
      data = await Deno.readFile(path);
    } catch (cause) {
      const code = cause instanceof Deno.errors.NotFound ? "NOT_FOUND" : "IO";
      throw new CheckpointStorageError(what, { code, jobId, checkpointId, path, cause });
    }
    if (data.byteLength !== handle.bytes) {
      throw new CheckpointStorageError(what, {
        code: "CORRUPT",
        jobId,
        checkpointId,
        path,
        cause: `the handle says ${handle.bytes} bytes, the file has ${data.byteLength}`,
      });
    }
    return data;
  }

  /** See {@linkcode CheckpointStorage.writeMetadata}. Returns the checkpoint directory. */
  async writeMetadata(meta: CheckpointMetadata): Promise<string> {
    const checked = parseCheckpointMetadata(meta);
    const { jobId, checkpointId } = checked;
    const dir = this.checkpointDirectory(jobId, checkpointId);
    const path = join(dir, METADATA);
    const what = `Cannot write the metadata of checkpoint ${checkpointId} of job ${
      JSON.stringify(jobId)
    }`;
    let alreadyComplete: boolean;
    try {
      alreadyComplete = await exists(path);
      if (!alreadyComplete) {
        await ensureDirectory(dir);
        await writeAtomically(
          dir,
          METADATA,
          new TextEncoder().encode(JSON.stringify(checked, null, 1)),
        );
      }
    } catch (cause) {
      throw new CheckpointStorageError(what, { code: "IO", jobId, checkpointId, path, cause });
    }
    if (alreadyComplete) {
      throw new CheckpointStorageError(what, {
        code: "ALREADY_EXISTS",
        jobId,
        checkpointId,
        path,
        cause: "the checkpoint is already complete",
      });
    }
    return dir;
  }

  /** See {@linkcode CheckpointStorage.readMetadata}. */
  async readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata> {
    const path = join(this.checkpointDirectory(jobId, checkpointId), METADATA);
    const what = `Cannot read the metadata of checkpoint ${checkpointId} of job ${
      JSON.stringify(jobId)
    }`;
    let text: string;
    try {
      text = await Deno.readTextFile(path);
    } catch (cause) {
      const code = cause instanceof Deno.errors.NotFound ? "NOT_FOUND" : "IO";
      throw new CheckpointStorageError(what, { code, jobId, checkpointId, path, cause });
    }
    try {
      const meta = parseCheckpointMetadata(JSON.parse(text));
      if (meta.jobId !== jobId || meta.checkpointId !== checkpointId) {
        throw new TypeError(
          `it belongs to checkpoint ${meta.checkpointId} of job ${JSON.stringify(meta.jobId)}`,
        );
      }
      return meta;
    } catch (cause) {
      throw new CheckpointStorageError(what, { code: "CORRUPT", jobId, checkpointId, path, cause });
    }
  }

  /** See {@linkcode CheckpointStorage.latestCompleted}. */
  async latestCompleted(jobId: string): Promise<CheckpointMetadata | undefined> {
    return await findLatestCompleted(this, jobId);
  }

  /** See {@linkcode CheckpointStorage.listCompleted}. */
  async listCompleted(jobId: string): Promise<CheckpointId[]> {
    return await findCompleted(this, jobId);
  }

  /** See {@linkcode CheckpointStorage.listAll}. */
  async listAll(jobId: string): Promise<CheckpointId[]> {
    const dir = this.jobDirectory(jobId);
    const ids: CheckpointId[] = [];
    try {
      for await (const entry of Deno.readDir(dir)) {
        const match = entry.isDirectory ? CHECKPOINT_DIR.exec(entry.name) : null;
        if (match !== null) ids.push(Number(match[1]));
      }
    } catch (cause) {
      if (cause instanceof Deno.errors.NotFound) return [];
      throw new CheckpointStorageError(
        `Cannot list the checkpoints of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: dir, cause },
      );
    }
    return ids.sort((a, b) => a - b);
  }

  /** See {@linkcode CheckpointStorage.discard}. */
  async discard(jobId: string, checkpointId: CheckpointId): Promise<void> {
    const dir = this.checkpointDirectory(jobId, checkpointId);
    try {
      await uncommit(dir);
      await removeIfExists(dir, { recursive: true });
      await syncDirectoryIfExists(this.jobDirectory(jobId));
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot discard checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, checkpointId, path: dir, cause },
      );
    }
  }

  /** See {@linkcode CheckpointStorage.discardJob}. */
  async discardJob(jobId: string): Promise<void> {
    const dir = this.jobDirectory(jobId);
    const ids = await this.listAll(jobId);
    try {
      for (const id of ids) await uncommit(this.checkpointDirectory(jobId, id));
      await removeIfExists(dir, { recursive: true });
      await syncDirectoryIfExists(this.directory);
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot discard the checkpoints of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: dir, cause },
      );
    }
  }
}

/**
 * `latestCompleted` of any storage, from its `listAll` and `readMetadata`:
 * the newest checkpoint with readable metadata. A `_metadata` that exists
 * but is corrupt is never skipped.
 * @throws {CheckpointStorageError} `CORRUPT` naming the checkpoint, or what `listAll` throws.
 */
export async function findLatestCompleted(
  storage: Pick<CheckpointStorage, "listAll" | "readMetadata">,
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
  storage: Pick<CheckpointStorage, "listAll" | "readMetadata">,
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
  storage: Pick<CheckpointStorage, "readMetadata">,
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
 * Checks that a parsed value is a version-1 {@linkcode CheckpointMetadata}
 * and returns a clean copy of it (unknown fields dropped). For storages to
 * validate what they read and write.
 *
 * @param value the parsed JSON.
 * @returns the metadata.
 * @throws {TypeError} naming the first field that is missing or of the wrong type.
 */
export function parseCheckpointMetadata(value: unknown): CheckpointMetadata {
  const m = record(value, "metadata");
  if (m.version !== 1) fieldError("metadata.version", "1", m.version);
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
      subtasks: array(vertex.subtasks, `${at}.subtasks`).map((s, j) => {
        const sat = `${at}.subtasks[${j}]`;
        const sub = record(s, sat);
        return {
          subtask: integer(sub.subtask, `${sat}.subtask`),
          keyedHandle: sub.keyedHandle === null
            ? null
            : handle(sub.keyedHandle, `${sat}.keyedHandle`),
          operatorHandle: sub.operatorHandle === null
            ? null
            : handle(sub.operatorHandle, `${sat}.operatorHandle`),
          keyGroupRange: sub.keyGroupRange === null
            ? null
            : range(sub.keyGroupRange, `${sat}.keyGroupRange`),
          stateUids: array(sub.stateUids, `${sat}.stateUids`).map((u, k) =>
            string(u, `${sat}.stateUids[${k}]`)
          ),
        };
      }),
    };
  });
  const kind = m.kind;
  if (kind !== "checkpoint" && kind !== "savepoint") {
    fieldError("metadata.kind", '"checkpoint" or "savepoint"', kind);
  }
  const checkpointId = integer(m.checkpointId, "metadata.checkpointId");
  if (checkpointId < 1) fieldError("metadata.checkpointId", "a positive integer", checkpointId);
  return {
    version: 1,
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

// ---------------------------------------------------------------------------
// Validation helpers

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

function handle(v: unknown, field: string): StateHandle {
  const h = record(v, field);
  return { path: string(h.path, `${field}.path`), bytes: integer(h.bytes, `${field}.bytes`) };
}

function range(v: unknown, field: string): [number, number] {
  const r = array(v, field);
  if (r.length !== 2) fieldError(field, "a pair [first, last]", v);
  return [integer(r[0], `${field}[0]`), integer(r[1], `${field}[1]`)];
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

// ---------------------------------------------------------------------------
// File-system helpers

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
}

async function syncDirectoryIfExists(dir: string): Promise<void> {
  try {
    await syncDirectory(dir);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Creates `dir` and missing ancestors, fsyncing each parent whose entries changed. */
async function ensureDirectory(dir: string): Promise<void> {
  if (await exists(dir)) return;
  const parent = join(dir, "..");
  if (parent !== dir) await ensureDirectory(parent);
  try {
    await Deno.mkdir(dir);
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) return; // a concurrent writer made it
    throw error;
  }
  await syncDirectory(parent);
}

/** Writes `<dir>/<name>` via a fsynced temp file, a rename and a directory fsync. */
async function writeAtomically(dir: string, name: string, data: Uint8Array): Promise<void> {
  const suffix = Array.from(
    crypto.getRandomValues(new Uint8Array(6)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
  const temp = join(dir, `.${name}.${suffix}.tmp`);
  try {
    const file = await Deno.open(temp, { write: true, createNew: true });
    try {
      let written = 0;
      while (written < data.byteLength) written += await file.write(data.subarray(written));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(temp, join(dir, name));
  } catch (error) {
    await removeIfExists(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dir);
}

async function removeIfExists(path: string, options?: Deno.RemoveOptions): Promise<void> {
  try {
    await Deno.remove(path, options);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Removes a checkpoint's `_metadata` durably, so a crash mid-delete cannot leave a "complete" torn checkpoint. */
async function uncommit(checkpointDir: string): Promise<void> {
  try {
    await Deno.remove(join(checkpointDir, METADATA));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  await syncDirectory(checkpointDir);
}
