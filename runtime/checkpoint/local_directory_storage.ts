/**
 * {@linkcode LocalDirectoryCheckpointStorage}: checkpoint storage on a local
 * (or mounted shared) directory, used in local mode (Flink's
 * `FileSystemCheckpointStorage` on `file://`). `storage.ts` re-exports it.
 *
 * ## Layout
 *
 * ```text
 * <directory>/<jobId>/chk-<id>/<name>       private state blobs, one per writeState
 * <directory>/<jobId>/chk-<id>/_metadata    JSON CheckpointMetadata: the commit point
 * <directory>/<jobId>/shared/<name>         shared state blobs, one per writeShared
 * <directory>/<jobId>/<dir>/.<name>.<random>.tmp   in-flight writes (garbage after a crash)
 * ```
 *
 * ## Invariants
 *
 * Those of `CheckpointStorage` (`storage.ts`), kept on a file system:
 *
 * - Every file is written atomically: to a temp file in the same directory,
 *   fsynced, renamed into place, and the directory fsynced. A reader sees the
 *   old content or the new, never a torn one.
 * - `_metadata` is deleted first by `discard` (and the deletion fsynced), so
 *   a crash mid-discard leaves a checkpoint without `_metadata`, which
 *   listings skip.
 * - `discard` removes `chk-<id>` only; `shared/` is touched only by
 *   `writeShared`, `deleteShared` and `discardJob`.
 * - A temp file left in `shared/` by a crash is not listed by `listShared`
 *   (its name starts with `.`) and is removed with the job by `discardJob`.
 *
 * ```ts
 * import { LocalDirectoryCheckpointStorage } from "./local_directory_storage.ts";
 * const dir = await Deno.makeTempDir();
 * const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
 * const blob = await storage.writeShared("job-1", "map#0-a1-1", new Uint8Array([1, 2]));
 * console.assert(blob.path === "shared/map#0-a1-1" && blob.bytes === 2);
 * console.assert((await storage.listShared("job-1")).join() === "shared/map#0-a1-1");
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import { join } from "node:path";
import type { CheckpointStorage } from "./storage.ts";
import type { CheckpointId, CheckpointMetadata, StoredBlob } from "./types.ts";
import { encodeCheckpointMetadata, parseCheckpointMetadata } from "./metadata.ts";
import {
  checkCheckpointId,
  checkName,
  CHECKPOINT_DIR,
  CheckpointStorageError,
  findCompleted,
  findLatestCompleted,
  isValidName,
  METADATA,
  parseStatePath,
  SHARED_DIR,
  sharedNameOf,
} from "./storage_rules.ts";

/** Options of {@linkcode LocalDirectoryCheckpointStorage}. */
export interface LocalDirectoryCheckpointStorageOptions {
  /** Root directory; created on first write. One subdirectory per job. */
  readonly directory: string;
}

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

  /**
   * The directory of a job's shared state: `<directory>/<jobId>/shared`.
   *
   * @param jobId the job.
   * @returns the path.
   * @throws {RangeError} for an invalid job id.
   */
  sharedDirectory(jobId: string): string {
    return join(this.jobDirectory(jobId), SHARED_DIR);
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
  ): Promise<StoredBlob> {
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

  /** See {@linkcode CheckpointStorage.readState}: a private blob or a shared one. */
  async readState(jobId: string, handle: StoredBlob): Promise<Uint8Array> {
    const parsed = parseStatePath(jobId, handle.path, "read state");
    const path = join(this.jobDirectory(jobId), ...handle.path.split("/"));
    const at = parsed.namespace === "private" ? { checkpointId: parsed.checkpointId } : {};
    const what = parsed.namespace === "private"
      ? `Cannot read state ${
        JSON.stringify(handle.path)
      } of checkpoint ${parsed.checkpointId} of job ${JSON.stringify(jobId)}`
      : `Cannot read shared state ${JSON.stringify(handle.path)} of job ${JSON.stringify(jobId)}`;
    let data: Uint8Array;
    try {
      data = await Deno.readFile(path);
    } catch (cause) {
      const code = cause instanceof Deno.errors.NotFound ? "NOT_FOUND" : "IO";
      throw new CheckpointStorageError(what, { code, jobId, ...at, path, cause });
    }
    if (data.byteLength !== handle.bytes) {
      throw new CheckpointStorageError(what, {
        code: "CORRUPT",
        jobId,
        ...at,
        path,
        cause: `the handle says ${handle.bytes} bytes, the file has ${data.byteLength}`,
      });
    }
    return data;
  }

  /** See {@linkcode CheckpointStorage.writeShared}: `<directory>/<jobId>/shared/<name>`, atomically. */
  async writeShared(jobId: string, name: string, data: Uint8Array): Promise<StoredBlob> {
    checkName("name", name);
    const dir = this.sharedDirectory(jobId);
    const path = join(dir, name);
    try {
      await ensureDirectory(dir);
      await writeAtomically(dir, name, data);
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot write shared state ${JSON.stringify(name)} of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path, cause },
      );
    }
    return { path: `${SHARED_DIR}/${name}`, bytes: data.byteLength };
  }

  /** See {@linkcode CheckpointStorage.deleteShared}: removes the files, then fsyncs the directory once. */
  async deleteShared(jobId: string, paths: readonly string[]): Promise<void> {
    const dir = this.sharedDirectory(jobId);
    const names = paths.map((p) => sharedNameOf(jobId, p));
    let path = dir;
    try {
      for (const name of names) {
        path = join(dir, name);
        await removeIfExists(path);
      }
      path = dir;
      if (names.length > 0) await syncDirectoryIfExists(dir);
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot delete shared state of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path, cause },
      );
    }
  }

  /** See {@linkcode CheckpointStorage.listShared}: the files of `<directory>/<jobId>/shared`, temp files excluded. */
  async listShared(jobId: string): Promise<string[]> {
    const dir = this.sharedDirectory(jobId);
    const paths: string[] = [];
    try {
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile && isValidName(entry.name)) paths.push(`${SHARED_DIR}/${entry.name}`);
      }
    } catch (cause) {
      if (cause instanceof Deno.errors.NotFound) return [];
      throw new CheckpointStorageError(
        `Cannot list the shared state of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: dir, cause },
      );
    }
    return paths.sort();
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
          new TextEncoder().encode(encodeCheckpointMetadata(checked, 1)),
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
