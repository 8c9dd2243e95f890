/**
 * Local recovery (Flink's `state.backend.local-recovery` with its
 * `TaskLocalStateStoreImpl` and `TaskExecutorLocalStateStoresManager`): a
 * worker keeps a secondary copy of its subtasks' latest completed snapshot
 * on its own disk, and a subtask that comes back on the same worker reads
 * its state from that copy instead of checkpoint storage.
 *
 * ```ts
 * import { LocalStateStore } from "./local_state_store.ts";
 * const root = await Deno.makeTempDir();
 * const store = new LocalStateStore({ directory: root, workerId: "w1" });
 * const sub = store.forSubtask({ jobId: "j1", vertexId: "v1", subtask: 0, keyGroupRange: [0, 63] });
 * const handle = { path: "chk-1/v1-0-a0.keyed-state", bytes: 3, kind: "keyed", shared: false, uid: "state" } as const;
 * sub.storeBlob(1, handle, new Uint8Array([1, 2, 3]));
 * await sub.seal(1, [handle]);
 * const remote = () => Promise.reject(new Error("not read remotely"));
 * const read = sub.restoreReader(1, remote);
 * console.assert((await read(handle)).length === 3 && read.stats.local === 1);
 * await Deno.remove(root, { recursive: true });
 * ```
 *
 * ## Layout
 *
 * ```text
 * <directory>/<workerId>/<jobId>/<vertexId>-<subtask>-kg<first>-<last>/chk-<n>/
 *     <encoded handle path>   one file per state handle of checkpoint n
 *     _manifest.json          the files of the copy: path, bytes, SHA-1 (written last)
 * ```
 *
 * The subtask's directory name carries its key-group range, so a subtask
 * whose range changed (another parallelism) never finds the copy of the
 * old range; the worker id is part of the path, so a worker only finds its
 * own copies (start workers with a stable `--id` to recover locally across
 * process restarts).
 *
 * ## Protocol
 *
 * 1. **Write** (`storeBlob`, called by the subtask's state writer after
 *    the blob's remote write returned its handle): the bytes are written to
 *    `<file>.tmp` in 1 MiB slices, each added to a SHA-1 as it goes, then
 *    renamed. The remote write is primary: the checkpoint's ack never waits
 *    for the local write, and a local failure is logged and only costs the
 *    copy.
 * 2. **Seal** (`seal`, after the ack): waits for the checkpoint's local
 *    writes, adds the earlier shared blobs the snapshot still refers to
 *    (incremental checkpoints) by hard-linking them from an older local
 *    copy of this subtask, then writes `_manifest.json` (write, then
 *    rename). A copy without a manifest does not exist.
 * 3. **Confirm** (`confirm(n)`, on notifyCheckpointComplete): removes every
 *    copy older than *n*; **abort** (`abort(n)`) removes *n*'s.
 * 4. **Restore** (`restoreReader(n, remote)`): serves each handle from the
 *    copy of checkpoint *n* when the manifest lists its path with the same
 *    size and the file's size and SHA-1 match; any other handle (missing,
 *    truncated, corrupt, no manifest) is read from checkpoint storage, and
 *    the fallback is logged naming the handle and why.
 *
 * ## Invariants
 *
 * - A blob is trusted only when its manifest entry, its size and its SHA-1
 *   agree; anything else falls back to checkpoint storage, never fails the
 *   restore by itself.
 * - At most the latest confirmed copy and the copies of checkpoints after
 *   it exist per subtask.
 * - Handle contents are immutable (names are unique per checkpoint, subtask
 *   and attempt), so a copy found by path holds the blob checkpoint storage
 *   holds.
 *
 * ## Where it runs
 *
 * Cluster mode's workers (`cli.ts worker --local-recovery on|off
 * --local-state-dir DIR`, default on under the OS temp directory's
 * `weir-local-state`). Local mode (one process) does not use it: its
 * checkpoint storage is already a local directory, so a copy would save
 * nothing. Savepoints are never copied; channel state of unaligned
 * checkpoints is copied like any blob but restored from checkpoint storage
 * (`channel_state_restore.ts` reads storage directly). A subtask placed on
 * another worker, at another parallelism (other key groups) or restoring
 * another job's checkpoint reads checkpoint storage only. Placement is not
 * local-recovery aware as Flink's scheduler is: subtasks return to their
 * slots because the coordinator deploys round-robin over the same workers
 * in the same order.
 *
 * ## Simplifications
 *
 * - No fsync: the copy guards against process failures (the page cache
 *   survives a SIGKILL). A machine crash may leave torn files, which the
 *   SHA-1 check rejects.
 * - The bytes given to `storeBlob` must not change afterwards (every Weir
 *   state participant passes freshly encoded buffers); the write reads them
 *   after the remote write returned.
 * - Copies of jobs that ended while their worker was down stay on disk
 *   until the directory is cleaned by hand; a job's copies are removed when
 *   its slot thread is released ({@linkcode LocalStateStore.releaseJob}).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { join } from "node:path";
import type { StateHandle, StoredBlob } from "../checkpoint/types.ts";
import type { StateReader } from "../state/keyed_state_backend.ts";
import { logger } from "../log.ts";

const log = logger("local-recovery");

/** Bytes written (and hashed) per slice of a local write. */
const SLICE_BYTES = 1 << 20;
/** The manifest's file name inside a checkpoint's local directory. */
const MANIFEST = "_manifest.json";

/** Options of {@linkcode LocalStateStore}. */
export interface LocalStateStoreOptions {
  /** The root directory of local state (the worker's own sub-directory is made under it). */
  readonly directory: string;
  /** The worker's id (`[A-Za-z0-9_-]+`): part of every path. */
  readonly workerId: string;
}

/** Names one subtask's local state: job, vertex, subtask index and key-group range. */
export interface LocalSubtaskKey {
  /** The job. */
  readonly jobId: string;
  /** The vertex id (`v<n>`). */
  readonly vertexId: string;
  /** The subtask index. */
  readonly subtask: number;
  /** The subtask's key groups, inclusive `[first, last]`. */
  readonly keyGroupRange: readonly [number, number];
}

/** One file of a local copy, as its manifest lists it. */
export interface LocalFileEntry {
  /** The handle's path in checkpoint storage. */
  readonly path: string;
  /** Its size, bytes. */
  readonly bytes: number;
  /** SHA-1 of its content, hex. */
  readonly sha1: string;
}

/** The `_manifest.json` of a sealed local copy. */
export interface LocalManifest {
  /** Format version: 1. */
  readonly version: 1;
  /** The checkpoint the copy belongs to. */
  readonly checkpointId: number;
  /** The files of the copy. */
  readonly files: readonly LocalFileEntry[];
}

/** What a restore reader did: handles read from the local copy, and from checkpoint storage. */
export interface LocalRestoreStats {
  /** Handles served from the local copy. */
  local: number;
  /** Bytes served from the local copy. */
  localBytes: number;
  /** Handles read from checkpoint storage (not in the local copy, or invalid there). */
  remote: number;
}

/** A {@linkcode StateReader} that also counts where it read from. */
export type LocalRestoreReader = StateReader & { readonly stats: LocalRestoreStats };

/**
 * A worker's local state (Flink's `TaskExecutorLocalStateStoresManager`):
 * hands out each subtask's {@linkcode TaskLocalStateStore} under
 * `<directory>/<workerId>/`.
 */
export class LocalStateStore {
  /** The worker's directory, `<directory>/<workerId>`. */
  readonly directory: string;

  /**
   * Makes the store of one worker (nothing is written until a subtask's store writes).
   * @throws {RangeError} for a worker id not matching `[A-Za-z0-9_-]+` or an
   *   empty directory.
   */
  constructor(options: LocalStateStoreOptions) {
    if (!/^[A-Za-z0-9_-]+$/.test(options.workerId)) {
      throw new RangeError(
        `local state: worker id must match [A-Za-z0-9_-]+: current value is ${
          JSON.stringify(options.workerId)
        }`,
      );
    }
    if (options.directory === "") {
      throw new RangeError("local state: the directory must not be empty");
    }
    this.directory = join(options.directory, options.workerId);
  }

  /**
   * The local state of one subtask.
   * @throws {RangeError} for a job or vertex id with characters other than
   *   `[A-Za-z0-9_-]`, a negative subtask or an invalid key-group range.
   */
  forSubtask(key: LocalSubtaskKey): TaskLocalStateStore {
    for (const [what, value] of [["job id", key.jobId], ["vertex id", key.vertexId]]) {
      if (!/^[A-Za-z0-9_-]+$/.test(value!)) {
        throw new RangeError(
          `local state: ${what} must match [A-Za-z0-9_-]+: current value is ${
            JSON.stringify(value)
          }`,
        );
      }
    }
    const [first, last] = key.keyGroupRange;
    if (
      !Number.isSafeInteger(key.subtask) || key.subtask < 0 || !Number.isSafeInteger(first) ||
      !Number.isSafeInteger(last) || first < 0 || last < first - 1
    ) {
      throw new RangeError(
        `local state: invalid subtask ${key.subtask} or key-group range [${first}, ${last}] ` +
          `of ${key.vertexId} in job ${key.jobId}`,
      );
    }
    const dir = join(
      this.directory,
      key.jobId,
      `${key.vertexId}-${key.subtask}-kg${first}-${last}`,
    );
    return new TaskLocalStateStore(dir, `${key.vertexId}#${key.subtask} of job ${key.jobId}`);
  }

  /** Removes every local copy of `jobId` on this worker (the job ended here). Never throws. */
  async releaseJob(jobId: string): Promise<void> {
    if (!/^[A-Za-z0-9_-]+$/.test(jobId)) return;
    await Deno.remove(join(this.directory, jobId), { recursive: true }).catch(() => {});
  }
}

/**
 * One subtask's local copies (Flink's `TaskLocalStateStoreImpl`); see the
 * module docs for the protocol. Every method but `restoreReader` is called
 * by the subtask's checkpointer; none throws: a local failure is logged and
 * costs only the copy.
 */
export class TaskLocalStateStore {
  /** The subtask's directory. */
  readonly directory: string;
  readonly #name: string;
  /** Local writes in flight or done, per checkpoint: handle path -> its entry (or `undefined` on failure). */
  readonly #writes = new Map<number, Map<string, Promise<LocalFileEntry | undefined>>>();
  /** Seals in progress, by checkpoint id (see {@linkcode TaskLocalStateStore.confirm}). */
  readonly #sealing = new Map<number, Promise<void>>();

  /** Use {@linkcode LocalStateStore.forSubtask}. */
  constructor(directory: string, name: string) {
    this.directory = directory;
    this.#name = name;
  }

  /** The directory of checkpoint `checkpointId`'s copy. */
  checkpointDirectory(checkpointId: number): string {
    return join(this.directory, `chk-${checkpointId}`);
  }

  /**
   * Starts writing the local copy of one blob of checkpoint `checkpointId`
   * (`handle` is what its remote write returned). Returns at once.
   */
  storeBlob(checkpointId: number, handle: StoredBlob, bytes: Uint8Array): void {
    let writes = this.#writes.get(checkpointId);
    if (!writes) this.#writes.set(checkpointId, writes = new Map());
    const file = join(this.checkpointDirectory(checkpointId), fileNameOf(handle.path));
    writes.set(
      handle.path,
      writeHashed(file, bytes).then(
        (sha1) => ({ path: handle.path, bytes: bytes.length, sha1 }),
        (error) => {
          log.warn(
            `local copy of ${handle.path} of checkpoint ${checkpointId} (${this.#name}) ` +
              `failed: ${error instanceof Error ? error.message : error}; it restores from ` +
              `checkpoint storage`,
          );
          return undefined;
        },
      ),
    );
  }

  /**
   * Seals checkpoint `checkpointId`'s copy: waits for its writes, links the
   * earlier shared blobs among `handles` from older local copies, and
   * writes the manifest. Handles with no local file are left out (they
   * restore from checkpoint storage). Never rejects.
   */
  seal(checkpointId: number, handles: readonly StoredBlob[]): Promise<void> {
    // Tracked at once (the subtask seals after its ack, so the completion
    // may arrive first): confirm waits for it before removing older copies
    // it links from.
    const sealing = this.#seal(checkpointId, handles).finally(() => {
      if (this.#sealing.get(checkpointId) === sealing) this.#sealing.delete(checkpointId);
    });
    this.#sealing.set(checkpointId, sealing);
    return sealing;
  }

  async #seal(checkpointId: number, handles: readonly StoredBlob[]): Promise<void> {
    const writes = this.#writes.get(checkpointId) ?? new Map();
    this.#writes.delete(checkpointId);
    const dir = this.checkpointDirectory(checkpointId);
    try {
      const files: LocalFileEntry[] = [];
      let older: Map<string, { dir: string; entry: LocalFileEntry }> | undefined;
      for (const h of handles) {
        const written = await writes.get(h.path);
        if (written) {
          files.push(written);
          continue;
        }
        if (writes.has(h.path)) continue; // its write failed
        older ??= await this.#sealedFiles(checkpointId);
        const from = older.get(h.path);
        if (from === undefined || from.entry.bytes !== h.bytes) continue;
        await Deno.mkdir(dir, { recursive: true });
        const target = join(dir, fileNameOf(h.path));
        await Deno.remove(target).catch(() => {});
        await Deno.link(join(from.dir, fileNameOf(h.path)), target)
          .catch(() => Deno.copyFile(join(from.dir, fileNameOf(h.path)), target));
        files.push(from.entry);
      }
      if (files.length === 0) return;
      const manifest: LocalManifest = { version: 1, checkpointId, files };
      await Deno.mkdir(dir, { recursive: true });
      const tmp = join(dir, `${MANIFEST}.tmp`);
      await Deno.writeTextFile(tmp, JSON.stringify(manifest));
      await Deno.rename(tmp, join(dir, MANIFEST));
    } catch (error) {
      log.warn(
        `cannot seal the local copy of checkpoint ${checkpointId} (${this.#name}): ${
          error instanceof Error ? error.message : error
        }; it restores from checkpoint storage`,
      );
    }
  }

  /**
   * Checkpoint `checkpointId` completed: removes every older copy (and the
   * writes of older checkpoints still tracked), once the seals of this and
   * earlier checkpoints in progress ended (a completion can arrive before
   * the subtask sealed its copy, which links shared blobs from older
   * copies). Never rejects.
   */
  async confirm(checkpointId: number): Promise<void> {
    // A copy still sealing may link shared blobs from the older copies removed here.
    await Promise.all([...this.#sealing].filter(([id]) => id <= checkpointId).map(([, p]) => p));
    for (const id of this.#writes.keys()) if (id < checkpointId) this.#writes.delete(id);
    for (const id of await this.#localCheckpoints()) {
      if (id < checkpointId) await this.#remove(id);
    }
  }

  /** Checkpoint `checkpointId` was aborted: removes its copy. Never rejects. */
  async abort(checkpointId: number): Promise<void> {
    const writes = this.#writes.get(checkpointId);
    this.#writes.delete(checkpointId);
    if (writes) await Promise.all(writes.values());
    await this.#sealing.get(checkpointId); // else the seal could write its manifest afterwards
    await this.#remove(checkpointId);
  }

  /**
   * A reader for restoring checkpoint `checkpointId`: the local copy where
   * it is valid, else `remote` (see the module docs). Reads the manifest at
   * the first read.
   */
  restoreReader(checkpointId: number, remote: StateReader): LocalRestoreReader {
    const stats: LocalRestoreStats = { local: 0, localBytes: 0, remote: 0 };
    const dir = this.checkpointDirectory(checkpointId);
    let manifest: Promise<Map<string, LocalFileEntry> | string> | undefined;
    const fallback = (handle: StateHandle, why: string) => {
      stats.remote++;
      log.info(
        `restore of ${this.#name} from checkpoint ${checkpointId}: ${handle.path} read from ` +
          `checkpoint storage (${why})`,
        {
          name: "local-recovery-fallback",
          checkpointId,
          path: handle.path,
          reason: why,
        },
      );
      return remote(handle);
    };
    const read = async (handle: StateHandle): Promise<Uint8Array> => {
      manifest ??= readManifest(dir, checkpointId);
      const files = await manifest;
      if (typeof files === "string") return fallback(handle, files);
      const entry = files.get(handle.path);
      if (entry === undefined) return fallback(handle, "not in the local copy");
      if (entry.bytes !== handle.bytes) {
        return fallback(handle, `local copy has ${entry.bytes} bytes, the handle ${handle.bytes}`);
      }
      let bytes: Uint8Array;
      try {
        bytes = await Deno.readFile(join(dir, fileNameOf(handle.path)));
      } catch (error) {
        return fallback(handle, `local file unreadable: ${(error as Error).message}`);
      }
      if (bytes.length !== entry.bytes) {
        return fallback(handle, `local file has ${bytes.length} bytes, expected ${entry.bytes}`);
      }
      if (sha1Of(bytes) !== entry.sha1) return fallback(handle, "local file fails its SHA-1");
      stats.local++;
      stats.localBytes += bytes.length;
      log.info(
        `restore of ${this.#name} from checkpoint ${checkpointId}: ${handle.path} ` +
          `(${bytes.length} bytes) read from the local copy`,
        { name: "local-recovery-read", checkpointId, path: handle.path, bytes: bytes.length },
      );
      return bytes;
    };
    return Object.assign(read, { stats });
  }

  /** Checkpoint ids with a local directory, ascending. */
  async #localCheckpoints(): Promise<number[]> {
    const ids: number[] = [];
    try {
      for await (const e of Deno.readDir(this.directory)) {
        const m = /^chk-(\d+)$/.exec(e.name);
        if (e.isDirectory && m) ids.push(Number(m[1]));
      }
    } catch {
      // no directory yet
    }
    return ids.sort((a, b) => a - b);
  }

  /** The files of every sealed copy before `checkpointId`, newest first wins. */
  async #sealedFiles(
    checkpointId: number,
  ): Promise<Map<string, { dir: string; entry: LocalFileEntry }>> {
    const out = new Map<string, { dir: string; entry: LocalFileEntry }>();
    for (const id of (await this.#localCheckpoints()).reverse()) {
      if (id >= checkpointId) continue;
      const dir = this.checkpointDirectory(id);
      const files = await readManifest(dir, id);
      if (typeof files === "string") continue;
      for (const [path, entry] of files) if (!out.has(path)) out.set(path, { dir, entry });
    }
    return out;
  }

  async #remove(checkpointId: number): Promise<void> {
    await Deno.remove(this.checkpointDirectory(checkpointId), { recursive: true }).catch(() => {});
  }
}

/** A handle path as one file name (`/` and other separators encoded). */
function fileNameOf(path: string): string {
  return encodeURIComponent(path);
}

function sha1Of(bytes: Uint8Array): string {
  return createHash("sha1").update(bytes).digest("hex");
}

/** Writes `bytes` to `<file>.tmp` in slices, hashing each, then renames it to `file`. */
async function writeHashed(file: string, bytes: Uint8Array): Promise<string> {
  await Deno.mkdir(join(file, ".."), { recursive: true });
  const tmp = `${file}.tmp`;
  const hash = createHash("sha1");
  const f = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    for (let at = 0; at < bytes.length;) {
      const slice = bytes.subarray(at, Math.min(at + SLICE_BYTES, bytes.length));
      hash.update(slice);
      let done = 0;
      while (done < slice.length) done += await f.write(slice.subarray(done));
      at += slice.length;
    }
  } finally {
    f.close();
  }
  await Deno.rename(tmp, file);
  return hash.digest("hex");
}

/** The manifest of the copy in `dir` by path, or why there is none usable. */
async function readManifest(
  dir: string,
  checkpointId: number,
): Promise<Map<string, LocalFileEntry> | string> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(dir, MANIFEST));
  } catch {
    return "no sealed local copy of this checkpoint";
  }
  try {
    const m = JSON.parse(text) as LocalManifest;
    if (m.version !== 1 || m.checkpointId !== checkpointId || !Array.isArray(m.files)) {
      return `local manifest is not a version-1 manifest of checkpoint ${checkpointId}`;
    }
    return new Map(m.files.map((f) => [f.path, f]));
  } catch (error) {
    return `local manifest does not parse: ${(error as Error).message}`;
  }
}
