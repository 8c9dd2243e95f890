/**
 * The file sink's writer (Flink's `FileWriter` with its `FileWriterBucket`s):
 * one open in-progress part file per bucket; at every checkpoint barrier
 * each is closed, made durable and renamed pending, and becomes a
 * committable.
 *
 * ## Life of a part file
 *
 * 1. Opened at the first record of its bucket as
 *    `.<final name>.inprogress.<random>` (created, never overwritten); the
 *    format's header is its first bytes. The counter in its name is taken
 *    then and never reused.
 * 2. Records are encoded into a 64 KiB buffer that is written to the file
 *    when full. Before a record, the rolling policy may close the file
 *    (size, age, inactivity; see `rolling_policy.ts`).
 * 3. Closed (at a roll, or at every checkpoint's `prepareCommit`): the
 *    buffer is written, the file is fsynced and closed, then renamed to
 *    `.<final name>.pending`; before `prepareCommit` returns, the
 *    directories of every rename since the last one are fsynced, so the
 *    pending files the checkpoint names are durable. The committable is
 *    `{ pendingPath, finalPath, sizeBytes }`.
 * 4. The committer renames pending to finished (`file_sink_committer.ts`).
 *
 * `close()` closes open files without renaming them: an in-progress file
 * is never named by a checkpoint, and the next start discards it.
 *
 * ## Start and restore: counters and clean-up
 *
 * The writer walks the output directory (every bucket) once at start and
 * reads the names of this sink's part files (its prefix and suffix). Let
 * `R` be the restored writer states (`subtask → nextCounter` as of the
 * restored checkpoint), `p` the parallelism and `i` this subtask.
 *
 * - Counter: the next counter is the larger of `R[i]` and one more than the
 *   largest counter of subtask `i` on disk (in any state), so a name is
 *   never used twice, also after a rescale gave subtask `i` no state.
 * - In-progress files of subtask `s` with `s % p == i` are deleted: no
 *   checkpoint ever names one.
 * - Pending files of a subtask `s` in `R` with counter `>= R[s]` are
 *   deleted: they were pre-committed for a checkpoint after the restored
 *   one, which no restore will commit. Pending files with a lower counter
 *   are either committed by now or named by the restored checkpoint and
 *   committed by some subtask's committer (maybe concurrently): left alone.
 * - On a fresh start (nothing restored) pending files of `s % p == i` are
 *   deleted too: no checkpoint names them.
 * - Pending files of a subtask not in `R` after a restore (a subtask that
 *   existed only after the restored checkpoint, at a higher parallelism)
 *   are left alone: whether a checkpoint names them is not known here.
 *   They stay hidden and never become finished (documented leftover).
 *
 * The walk costs one `readDir` per directory under the output path:
 * keep finished files moving elsewhere, or use buckets, when there are
 * very many.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import type { Clock } from "../../runtime/time/clock.ts";
import { logger } from "../../runtime/log.ts";
import { type BucketAssigner, checkBucketId } from "./bucket_assigner.ts";
import {
  type FileSinkCommittable,
  type FileSinkWriterState,
  finalPartName,
  inProgressPartName,
  partFileNameParser,
  type PartFileNaming,
  pendingPartName,
} from "./file_sink_state.ts";
import type { RollingPolicy } from "./rolling_policy.ts";
import type { RowEncoder } from "./row_encoders.ts";

const log = logger("file-sink");

/** Bytes buffered per open part file before they are written. */
const BUFFER_BYTES = 64 * 1024;

/** What the writer is made of; built by `FileSink.createWriter`. */
export interface FileSinkWriterOptions<T> {
  /** The output directory. */
  readonly basePath: string;
  /** The row format. */
  readonly encoder: RowEncoder<T>;
  /** When to close part files between checkpoints. */
  readonly rollingPolicy: RollingPolicy<T>;
  /** Which bucket a record goes to. */
  readonly bucketAssigner: BucketAssigner<T>;
  /** How part files are named. */
  readonly naming: PartFileNaming;
  /** The subtask, its restored state and the checkpointing mode. */
  readonly context: WriterInitContext<FileSinkWriterState>;
  /** Processing time. */
  readonly clock: Clock;
  /** At most how often every open part file is checked for a processing-time roll, in ms. */
  readonly checkIntervalMs: number;
  /** Names the sink subtask in logs and errors. */
  readonly where: string;
}

/** What the start-up walk found: the counter to continue from and the files to delete. */
export interface StartupDecision {
  /** The counter of the subtask's next part file. */
  readonly nextCounter: number;
  /** Paths (relative to the output directory) of orphaned in-progress and pending files. */
  readonly discard: readonly string[];
}

/** One part file found by the start-up walk. */
export interface FoundPartFile {
  /** Relative path. */
  readonly path: string;
  /** What it is. */
  readonly kind: "finished" | "pending" | "in-progress";
  /** Its subtask. */
  readonly subtask: number;
  /** Its counter. */
  readonly counter: number;
}

/**
 * Decides the counter and the clean-up at start (pure; see the module docs).
 * @param found this sink's part files on disk.
 * @param context the subtask, parallelism and restored states.
 * @returns the next counter and the files to delete.
 */
export function decideStartup(
  found: readonly FoundPartFile[],
  context: Pick<
    WriterInitContext<FileSinkWriterState>,
    "subtaskIndex" | "parallelism" | "restoredCheckpointId" | "restoredState"
  >,
): StartupDecision {
  const { subtaskIndex: own, parallelism } = context;
  const restored = new Map<number, number>();
  for (const state of context.restoredState) {
    restored.set(state.subtask, Math.max(restored.get(state.subtask) ?? 0, state.nextCounter));
  }
  const fresh = context.restoredCheckpointId === undefined;
  let nextCounter = restored.get(own) ?? 0;
  const discard: string[] = [];
  for (const file of found) {
    if (file.subtask === own) nextCounter = Math.max(nextCounter, file.counter + 1);
    const owned = file.subtask % parallelism === own;
    if (file.kind === "in-progress") {
      if (owned) discard.push(file.path);
    } else if (file.kind === "pending") {
      const next = restored.get(file.subtask);
      if (next !== undefined ? file.counter >= next : fresh && owned) discard.push(file.path);
    }
  }
  return { nextCounter, discard };
}

async function walk(basePath: string, dir: string, out: (relative: string, name: string) => void) {
  const absolute = dir === "" ? basePath : `${basePath}/${dir}`;
  for await (const entry of Deno.readDir(absolute)) {
    const relative = dir === "" ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory) await walk(basePath, relative, out);
    else if (entry.isFile) out(relative, entry.name);
  }
}

/**
 * Writes all of `bytes` (a file write may take fewer). A failure (a full
 * disk: "No space left on device") names the part file, which the file
 * system's error does not (breaker fix, tests/breaker_sinks_file_test.ts).
 */
async function writeAll(file: Deno.FsFile, bytes: Uint8Array, path: string): Promise<void> {
  let offset = 0;
  try {
    while (offset < bytes.length) offset += await file.write(bytes.subarray(offset));
  } catch (error) {
    throw new Error(
      `Cannot write ${
        bytes.length - offset
      } bytes to part file '${path}' at byte offset ${offset} ` +
        `of this write: ${error instanceof Error ? error.message : error}`,
      { cause: error },
    );
  }
}

async function syncDirectory(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const textEncoder = new TextEncoder();

/** An open in-progress part file. */
class InProgressPart {
  readonly bucketId: string;
  readonly finalName: string;
  readonly inProgressPath: string;
  readonly file: Deno.FsFile;
  readonly creationTimeMs: number;
  lastUpdateTimeMs: number;
  sizeBytes = 0;
  readonly #buffer = new Uint8Array(BUFFER_BYTES);
  #buffered = 0;

  constructor(
    init: { bucketId: string; finalName: string; inProgressPath: string; file: Deno.FsFile },
    nowMs: number,
  ) {
    this.bucketId = init.bucketId;
    this.finalName = init.finalName;
    this.inProgressPath = init.inProgressPath;
    this.file = init.file;
    this.creationTimeMs = nowMs;
    this.lastUpdateTimeMs = nowMs;
  }

  /** Appends `text`; returns a promise only when the buffer had to be written. */
  append(text: string): void | Promise<void> {
    const { read, written } = textEncoder.encodeInto(text, this.#buffer.subarray(this.#buffered));
    if (read === text.length) {
      this.#buffered += written;
      this.sizeBytes += written;
      return;
    }
    return this.#appendSlow(text);
  }

  async #appendSlow(text: string): Promise<void> {
    // Nothing of `text` was kept: write what is buffered, then the text whole.
    await this.flushBuffer();
    const bytes = textEncoder.encode(text);
    if (bytes.length <= BUFFER_BYTES) {
      this.#buffer.set(bytes);
      this.#buffered = bytes.length;
    } else {
      await writeAll(this.file, bytes, this.inProgressPath);
    }
    this.sizeBytes += bytes.length;
  }

  async flushBuffer(): Promise<void> {
    if (this.#buffered === 0) return;
    await writeAll(this.file, this.#buffer.subarray(0, this.#buffered), this.inProgressPath);
    this.#buffered = 0;
  }
}

/** The file sink's writer; see the module docs. */
export class FileSinkWriter<T> implements SinkWriter<T, FileSinkCommittable, FileSinkWriterState> {
  readonly #o: FileSinkWriterOptions<T>;
  readonly #parts = new Map<string, InProgressPart>();
  #rolled: FileSinkCommittable[] = [];
  readonly #dirsToSync = new Set<string>();
  #nextCounter: number;
  #nextCheckMs: number;
  #closed = false;

  private constructor(options: FileSinkWriterOptions<T>, nextCounter: number) {
    this.#o = options;
    this.#nextCounter = nextCounter;
    this.#nextCheckMs = options.clock.now() + options.checkIntervalMs;
  }

  /**
   * Walks the output directory, deletes orphaned part files and continues
   * the counter (see the module docs).
   * @throws the file system's error when the directory cannot be made or read.
   */
  static async open<T>(options: FileSinkWriterOptions<T>): Promise<FileSinkWriter<T>> {
    const { basePath, naming, context } = options;
    await Deno.mkdir(basePath, { recursive: true });
    const parse = partFileNameParser(naming);
    const found: FoundPartFile[] = [];
    await walk(basePath, "", (path, name) => {
      const parsed = parse(name);
      if (parsed !== undefined) found.push({ path, ...parsed });
    });
    const decision = decideStartup(found, context);
    for (const path of decision.discard) {
      try {
        await Deno.remove(`${basePath}/${path}`);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
    }
    if (decision.discard.length > 0) {
      log.info(
        `${options.where}: discarded ${decision.discard.length} orphaned part file(s) ` +
          `(restored checkpoint ${context.restoredCheckpointId ?? "none"}): ${
            decision.discard.slice(0, 5).join(", ")
          }${decision.discard.length > 5 ? ", …" : ""}`,
      );
    }
    return new FileSinkWriter(options, decision.nextCounter);
  }

  /** Writes one record to its bucket's part file, rolling it first when the policy says so. */
  write(value: T, context: SinkContext): void | Promise<void> {
    const o = this.#o;
    const nowMs = o.clock.now();
    const bucketId = checkBucketId(
      o.bucketAssigner.getBucketId(value, {
        timestamp: context.timestamp,
        currentProcessingTimeMs: nowMs,
      }),
    );
    const text = o.encoder.encode(value);
    const part = this.#parts.get(bucketId);
    if (
      part === undefined || nowMs >= this.#nextCheckMs ||
      o.rollingPolicy.shouldRollOnEvent(part, value) ||
      o.rollingPolicy.shouldRollOnProcessingTime(part, nowMs)
    ) {
      return this.#writeSlow(bucketId, value, text, nowMs);
    }
    part.lastUpdateTimeMs = nowMs;
    return part.append(text);
  }

  async #writeSlow(bucketId: string, value: T, text: string, nowMs: number): Promise<void> {
    const o = this.#o;
    if (nowMs >= this.#nextCheckMs) {
      this.#nextCheckMs = nowMs + o.checkIntervalMs;
      await this.#rollOnProcessingTime(nowMs);
    }
    let part = this.#parts.get(bucketId);
    if (
      part !== undefined &&
      (o.rollingPolicy.shouldRollOnEvent(part, value) ||
        o.rollingPolicy.shouldRollOnProcessingTime(part, nowMs))
    ) {
      await this.#roll(part);
      part = undefined;
    }
    part ??= await this.#openPart(bucketId, nowMs);
    part.lastUpdateTimeMs = nowMs;
    await part.append(text);
  }

  async #openPart(bucketId: string, nowMs: number): Promise<InProgressPart> {
    const o = this.#o;
    const dir = bucketId === "" ? o.basePath : `${o.basePath}/${bucketId}`;
    if (bucketId !== "") await Deno.mkdir(dir, { recursive: true });
    const finalName = finalPartName(o.naming, o.context.subtaskIndex, this.#nextCounter++);
    const inProgressPath = `${dir}/${inProgressPartName(finalName, randomHex())}`;
    const file = await Deno.open(inProgressPath, { write: true, createNew: true });
    const part = new InProgressPart({ bucketId, finalName, inProgressPath, file }, nowMs);
    this.#parts.set(bucketId, part);
    if (o.encoder.header !== undefined) await part.append(o.encoder.header);
    return part;
  }

  /** Closes `part`, makes it durable and pending, and queues its committable. */
  async #roll(part: InProgressPart): Promise<void> {
    const o = this.#o;
    this.#parts.delete(part.bucketId);
    try {
      await part.flushBuffer();
      await part.file.sync();
    } finally {
      part.file.close();
    }
    const relativeDir = part.bucketId === "" ? "" : part.bucketId + "/";
    const pendingPath = relativeDir + pendingPartName(part.finalName);
    await Deno.rename(part.inProgressPath, `${o.basePath}/${pendingPath}`);
    this.#dirsToSync.add(part.bucketId === "" ? o.basePath : `${o.basePath}/${part.bucketId}`);
    this.#rolled.push({
      pendingPath,
      finalPath: relativeDir + part.finalName,
      sizeBytes: part.sizeBytes,
    });
  }

  async #rollOnProcessingTime(nowMs: number): Promise<void> {
    for (const part of [...this.#parts.values()]) {
      if (this.#o.rollingPolicy.shouldRollOnProcessingTime(part, nowMs)) await this.#roll(part);
    }
  }

  /** Checks every open part file for a processing-time roll. */
  async flush(_endOfInput: boolean): Promise<void> {
    const nowMs = this.#o.clock.now();
    this.#nextCheckMs = nowMs + this.#o.checkIntervalMs;
    await this.#rollOnProcessingTime(nowMs);
  }

  /** Closes every open part file; returns the pending files since the last call. */
  async prepareCommit(_checkpointId: number): Promise<readonly FileSinkCommittable[]> {
    for (const part of [...this.#parts.values()]) await this.#roll(part);
    for (const dir of this.#dirsToSync) await syncDirectory(dir);
    this.#dirsToSync.clear();
    const committables = this.#rolled;
    this.#rolled = [];
    return committables;
  }

  /** This subtask's counter. */
  snapshotState(_checkpointId: number): readonly FileSinkWriterState[] {
    return [{ subtask: this.#o.context.subtaskIndex, nextCounter: this.#nextCounter }];
  }

  /** Closes open files without renaming them (a restore discards them). Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const part of this.#parts.values()) {
      try {
        part.file.close();
      } catch (error) {
        if (!(error instanceof Deno.errors.BadResource)) throw error;
      }
    }
    this.#parts.clear();
  }
}
