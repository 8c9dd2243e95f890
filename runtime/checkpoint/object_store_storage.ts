/**
 * Checkpoint storage on a NATS Object Store bucket that every worker reaches
 * (DESIGN §8): the cluster-mode default, as Flink's `FileSystemCheckpointStorage`
 * on a shared file system.
 *
 * ## Layout
 *
 * ```text
 * <bucket>: <jobId>/chk-<id>/<name>       state blobs, one per writeState
 *           <jobId>/chk-<id>/_metadata    JSON CheckpointMetadata: the commit point
 * ```
 *
 * An object is a metadata message on `$O.<bucket>.M.<base64url(name)>` and
 * chunks of at most 1 MiB (the server's `max_payload`) on
 * `$O.<bucket>.C.<nuid>`, in the JetStream stream `OBJ_<bucket>` (the NATS
 * Object Store's layout, ADR-20). Names go to the Object Store as their UTF-8
 * bytes, so an ASCII name (every name Weir makes) is stored exactly as given.
 *
 * ## Invariants
 *
 * The same as `LocalDirectoryCheckpointStorage`'s (see `storage.ts`):
 *
 * - An object appears whole or not at all: its metadata message, published
 *   after every chunk was acknowledged, is what makes it visible. Its SHA-256
 *   digest is checked on every read, so a flipped bit is `CORRUPT`.
 * - A checkpoint is complete if and only if its `_metadata` object exists.
 *   It is written last, never overwritten: the write carries
 *   `Nats-Expected-Last-Subject-Sequence` (compare-and-set on its metadata
 *   subject), so of two writers racing, exactly one succeeds and the other
 *   gets `ALREADY_EXISTS`.
 * - A `_metadata` that exists but does not parse (or names another
 *   checkpoint) is `CORRUPT`, never skipped.
 * - Deleting an object first replaces its metadata with a tombstone (so it is
 *   gone for readers), then purges its chunks, then the tombstone. A crash in
 *   between leaves the tombstone, which the next `discard` finishes; the
 *   `_metadata` goes first, so a checkpoint being discarded is incomplete from
 *   the first step on.
 *
 * ## Cost of listing
 *
 * Object names are base64 tokens of the subjects, so no subject filter
 * selects one job: `listAll`, `listCompleted`, `latestCompleted`, `discard`
 * and `discardJob` ask the server for every object subject of the bucket
 * (one stream-info request with `subjects_filter`, paged by the client; no
 * message is read) and keep the job's. Their cost grows with the number of
 * objects in the bucket, of all jobs: keep retention low, or use one bucket
 * per busy job. (The Object Store's own `list()` would be dearer: it reads
 * every object's metadata message.) `listCompleted` and `latestCompleted`
 * then read each candidate `_metadata`.
 *
 * ```ts
 * import { connect, objApi } from "../actor/nats_deps.ts";
 * import { ObjectStoreCheckpointStorage } from "./object_store_storage.ts";
 *
 * const connection = await connect({ servers: "nats://127.0.0.1:4222" });
 * const bucket = `weir-doc-${crypto.randomUUID().slice(0, 8)}`;
 * try {
 *   const storage = await ObjectStoreCheckpointStorage.open({ connection, bucket });
 *   const handle = await storage.writeState("job-1", 1, "src#0", new Uint8Array([1, 2]));
 *   console.assert(handle.path === "chk-1/src#0" && handle.bytes === 2);
 *   console.assert((await storage.latestCompleted("job-1")) === undefined);
 * } finally {
 *   await (await new objApi.Objm(connection).open(bucket)).destroy();
 *   await connection.close();
 * }
 * ```
 *
 * @module
 */

import { jetstreamApi, type NatsConnection, objApi } from "../actor/nats_deps.ts";
import {
  checkCheckpointId,
  checkName,
  CHECKPOINT_DIR,
  CheckpointStorageError,
  type CheckpointStorageErrorCode,
  findCompleted,
  findLatestCompleted,
  isValidName,
  METADATA,
  parseCheckpointMetadata,
} from "./storage.ts";
import type { CheckpointStorage } from "./storage.ts";
import type { CheckpointId, CheckpointMetadata, StateHandle } from "./types.ts";
import { readWithin } from "./_chunk_reads.ts";

/** The bucket {@linkcode ObjectStoreCheckpointStorage.open} uses unless told otherwise. */
export const DEFAULT_CHECKPOINT_BUCKET = "weir-checkpoints";

/** Scheme of the locations and error paths: `nats-object-store://<bucket>/<object name>`. */
export const OBJECT_STORE_URL_SCHEME = "nats-object-store://";

/** Options of {@linkcode ObjectStoreCheckpointStorage.open}. */
export interface ObjectStoreCheckpointStorageOptions {
  /** A connection to a NATS server with JetStream; the caller keeps owning it. */
  readonly connection: NatsConnection;
  /** The bucket (letters, digits, `-`, `_`). Default {@linkcode DEFAULT_CHECKPOINT_BUCKET}. */
  readonly bucket?: string;
  /** Replicas of the bucket's stream when it is created (clustered JetStream). Default 1. */
  readonly replicas?: number;
  /**
   * A read fails with `IO` when no chunk arrived for this long, in ms (an
   * object whose chunks vanished, e.g. overwritten while being read, would
   * otherwise wait forever). Default 30 000.
   */
  readonly readStallTimeoutMs?: number;
}

/** Largest chunk asked for, in bytes; the client clamps it to the server's `max_payload`. */
const CHUNK_BYTES = 1024 * 1024;
/** Objects deleted at once by `discard` and `discardJob`. */
const DELETE_CONCURRENCY = 16;
const BUCKET_NAME = /^[-\w]+$/;

/** One object of a job, found by listing. */
interface JobObject {
  readonly checkpointId: CheckpointId;
  /** The name within the checkpoint (`_metadata` or a state name). */
  readonly name: string;
  /** `<jobId>/chk-<id>/<name>`. */
  readonly objectName: string;
}

/** What a download found. */
type Download =
  | { readonly kind: "ok"; readonly data: Uint8Array }
  | { readonly kind: "missing" }
  | { readonly kind: "size"; readonly actual: number }
  | { readonly kind: "corrupt"; readonly cause: unknown };

/**
 * {@linkcode CheckpointStorage} on a NATS Object Store bucket, shared by the
 * coordinator and every worker. Same semantics as
 * `LocalDirectoryCheckpointStorage`, with the layout and costs of
 * this module's docs. Error paths and locations are
 * `nats-object-store://<bucket>/<object name>` URLs.
 *
 * Durability is the bucket stream's: with JetStream's default `sync_interval`
 * (2 min on 2.9) an acknowledged checkpoint can be lost on a power failure
 * of the server's host; use replicas, or `sync_interval: always`, if that
 * matters.
 */
export class ObjectStoreCheckpointStorage implements CheckpointStorage {
  /** The bucket. */
  readonly bucket: string;
  readonly #store: objApi.ObjectStore;
  readonly #jsm: jetstreamApi.JetStreamManager;
  readonly #stallMs: number;

  private constructor(
    bucket: string,
    store: objApi.ObjectStore,
    jsm: jetstreamApi.JetStreamManager,
    stallMs: number,
  ) {
    this.bucket = bucket;
    this.#store = store;
    this.#jsm = jsm;
    this.#stallMs = stallMs;
  }

  /**
   * Opens the bucket, creating it (file storage) if it is missing. Creating
   * is idempotent: processes racing to create it all succeed. Selects the
   * Object Store's native SHA-256 (`setSha256Backend("native")`,
   * process-wide), about 3x faster than its pure-JS default on large puts.
   *
   * @param options the connection, bucket and replicas.
   * @returns the storage.
   * @throws {RangeError} for an invalid bucket name, replica count or stall timeout.
   * @throws {Error} when the bucket can be neither created nor opened (no
   *   JetStream, no permission), naming the bucket, with the cause.
   */
  static async open(options: ObjectStoreCheckpointStorageOptions): Promise<
    ObjectStoreCheckpointStorage
  > {
    const bucket = options.bucket ?? DEFAULT_CHECKPOINT_BUCKET;
    if (typeof bucket !== "string" || !BUCKET_NAME.test(bucket)) {
      throw new RangeError(
        `Cannot open checkpoint storage: 'bucket' must be letters, digits, '-' or '_': current value is ${
          JSON.stringify(bucket)
        }`,
      );
    }
    const replicas = options.replicas ?? 1;
    if (!Number.isSafeInteger(replicas) || replicas < 1) {
      throw new RangeError(
        `Cannot open checkpoint storage bucket "${bucket}": 'replicas' must be a positive integer: current value is ${replicas}`,
      );
    }
    const stallMs = options.readStallTimeoutMs ?? 30_000;
    if (!(stallMs > 0)) {
      throw new RangeError(
        `Cannot open checkpoint storage bucket "${bucket}": 'readStallTimeoutMs' must be positive: current value is ${stallMs}`,
      );
    }
    objApi.setSha256Backend("native");
    const objm = new objApi.Objm(options.connection);
    let store: objApi.ObjectStore;
    try {
      store = await objm.create(bucket, { replicas, description: "Weir checkpoints" });
    } catch (createError) {
      // Another process may have created it with other options meanwhile.
      try {
        store = await objm.open(bucket);
      } catch {
        throw new Error(
          `Cannot create or open the checkpoint storage bucket "${bucket}" (stream OBJ_${bucket})`,
          { cause: createError },
        );
      }
    }
    const jsm = await jetstreamApi.jetstreamManager(options.connection);
    return new ObjectStoreCheckpointStorage(bucket, store, jsm, stallMs);
  }

  /**
   * The object name of a blob of a checkpoint: `<jobId>/chk-<id>/<name>`.
   *
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @param name a state name, or `_metadata`.
   * @returns the name.
   * @throws {RangeError} for an invalid job id, checkpoint id or name.
   */
  objectName(jobId: string, checkpointId: CheckpointId, name: string): string {
    checkName("jobId", jobId);
    checkCheckpointId(checkpointId);
    if (name !== METADATA) checkName("name", name);
    return `${jobId}/chk-${checkpointId}/${name}`;
  }

  /**
   * The URL of an object, used as error path: `nats-object-store://<bucket>/<objectName>`.
   *
   * @param objectName the object's name.
   * @returns the URL.
   */
  objectUrl(objectName: string): string {
    return `${OBJECT_STORE_URL_SCHEME}${this.bucket}/${objectName}`;
  }

  /**
   * The location of a checkpoint, returned by `writeMetadata`:
   * `nats-object-store://<bucket>/<jobId>/chk-<id>`.
   *
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @returns the URL.
   * @throws {RangeError} for an invalid job id or checkpoint id.
   */
  checkpointLocation(jobId: string, checkpointId: CheckpointId): string {
    checkName("jobId", jobId);
    checkCheckpointId(checkpointId);
    return this.objectUrl(`${jobId}/chk-${checkpointId}`);
  }

  /** See {@linkcode CheckpointStorage.jobLocation}: `nats-object-store://<bucket>/<jobId>/`. */
  jobLocation(jobId: string): string {
    checkName("jobId", jobId);
    return this.objectUrl(`${jobId}/`);
  }

  /** See {@linkcode CheckpointStorage.writeState}. */
  async writeState(
    jobId: string,
    checkpointId: CheckpointId,
    name: string,
    data: Uint8Array,
  ): Promise<StateHandle> {
    checkName("name", name);
    const objectName = this.objectName(jobId, checkpointId, name);
    try {
      await this.#store.putBlob(
        { name: storeKey(objectName), options: { max_chunk_size: CHUNK_BYTES } },
        data,
      );
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot write state ${JSON.stringify(name)} of checkpoint ${checkpointId} of job ${
          JSON.stringify(jobId)
        }`,
        { code: "IO", jobId, checkpointId, path: this.objectUrl(objectName), cause },
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
    const objectName = this.objectName(jobId, checkpointId, segments[1]!);
    const what = `Cannot read state ${
      JSON.stringify(handle.path)
    } of checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`;
    const fail = (code: CheckpointStorageErrorCode, cause: unknown) =>
      new CheckpointStorageError(what, {
        code,
        jobId,
        checkpointId,
        path: this.objectUrl(objectName),
        cause,
      });
    const got = await this.#download(objectName, handle.bytes).catch((cause) => {
      throw fail("IO", cause);
    });
    switch (got.kind) {
      case "ok":
        return got.data;
      case "missing":
        throw fail("NOT_FOUND", "no such object");
      case "size":
        throw fail(
          "CORRUPT",
          `the handle says ${handle.bytes} bytes, the object has ${got.actual}`,
        );
      case "corrupt":
        throw fail("CORRUPT", got.cause);
    }
  }

  /**
   * See {@linkcode CheckpointStorage.writeMetadata}: a compare-and-set on the
   * `_metadata` object, so one of two racing writers wins. Returns
   * {@linkcode ObjectStoreCheckpointStorage.checkpointLocation}.
   */
  async writeMetadata(meta: CheckpointMetadata): Promise<string> {
    const checked = parseCheckpointMetadata(meta);
    const { jobId, checkpointId } = checked;
    const objectName = this.objectName(jobId, checkpointId, METADATA);
    const key = storeKey(objectName);
    const fail = (code: CheckpointStorageErrorCode, cause: unknown) =>
      new CheckpointStorageError(
        `Cannot write the metadata of checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`,
        { code, jobId, checkpointId, path: this.objectUrl(objectName), cause },
      );
    let existing: objApi.ObjectInfo | null;
    try {
      existing = await this.#store.info(key);
    } catch (cause) {
      throw fail("IO", cause);
    }
    if (existing !== null && !existing.deleted) {
      throw fail("ALREADY_EXISTS", "the checkpoint is already complete");
    }
    try {
      await this.#store.putBlob(
        { name: key, options: { max_chunk_size: CHUNK_BYTES } },
        new TextEncoder().encode(JSON.stringify(checked, null, 1)),
        // 0: the subject must have no message; else the tombstone seen above.
        { previousRevision: existing?.revision ?? 0 },
      );
    } catch (cause) {
      if (
        cause instanceof jetstreamApi.JetStreamApiError &&
        cause.code === jetstreamApi.JetStreamApiCodes.StreamWrongLastSequence
      ) {
        const now = await this.#store.info(key).catch(() => null);
        if (now !== null && !now.deleted) {
          throw fail("ALREADY_EXISTS", "another writer completed the checkpoint concurrently");
        }
      }
      throw fail("IO", cause);
    }
    return this.checkpointLocation(jobId, checkpointId);
  }

  /** See {@linkcode CheckpointStorage.readMetadata}. */
  async readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata> {
    const objectName = this.objectName(jobId, checkpointId, METADATA);
    const fail = (code: CheckpointStorageErrorCode, cause: unknown) =>
      new CheckpointStorageError(
        `Cannot read the metadata of checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`,
        { code, jobId, checkpointId, path: this.objectUrl(objectName), cause },
      );
    const got = await this.#download(objectName, undefined).catch((cause) => {
      throw fail("IO", cause);
    });
    if (got.kind === "missing") throw fail("NOT_FOUND", "no such object");
    if (got.kind === "corrupt") throw fail("CORRUPT", got.cause);
    if (got.kind === "size") throw fail("CORRUPT", `unexpected size ${got.actual}`);
    try {
      const meta = parseCheckpointMetadata(JSON.parse(new TextDecoder().decode(got.data)));
      if (meta.jobId !== jobId || meta.checkpointId !== checkpointId) {
        throw new TypeError(
          `it belongs to checkpoint ${meta.checkpointId} of job ${JSON.stringify(meta.jobId)}`,
        );
      }
      return meta;
    } catch (cause) {
      throw fail("CORRUPT", cause);
    }
  }

  /** See {@linkcode CheckpointStorage.latestCompleted}; costs as in the module docs. */
  async latestCompleted(jobId: string): Promise<CheckpointMetadata | undefined> {
    return await findLatestCompleted(this, jobId);
  }

  /** See {@linkcode CheckpointStorage.listCompleted}; costs as in the module docs. */
  async listCompleted(jobId: string): Promise<CheckpointId[]> {
    return await findCompleted(this, jobId);
  }

  /** See {@linkcode CheckpointStorage.listAll}; costs as in the module docs. */
  async listAll(jobId: string): Promise<CheckpointId[]> {
    const ids = new Set((await this.#objectsOf(jobId)).map((o) => o.checkpointId));
    return [...ids].sort((a, b) => a - b);
  }

  /** See {@linkcode CheckpointStorage.discard}: `_metadata` first, then the state objects. */
  async discard(jobId: string, checkpointId: CheckpointId): Promise<void> {
    const location = this.checkpointLocation(jobId, checkpointId);
    const objects = (await this.#objectsOf(jobId)).filter((o) => o.checkpointId === checkpointId);
    try {
      await this.#deleteAll(objects.filter((o) => o.name === METADATA));
      await this.#deleteAll(objects.filter((o) => o.name !== METADATA));
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot discard checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, checkpointId, path: location, cause },
      );
    }
  }

  /** See {@linkcode CheckpointStorage.discardJob}: every `_metadata` first, then the rest. */
  async discardJob(jobId: string): Promise<void> {
    const objects = await this.#objectsOf(jobId);
    try {
      await this.#deleteAll(objects.filter((o) => o.name === METADATA));
      await this.#deleteAll(objects.filter((o) => o.name !== METADATA));
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot discard the checkpoints of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: this.jobLocation(jobId), cause },
      );
    }
  }

  /**
   * The objects `<jobId>/chk-<id>/<name>` of a job, tombstones included, from
   * the bucket's metadata subjects (see "Cost of listing").
   */
  async #objectsOf(jobId: string): Promise<JobObject[]> {
    const location = this.jobLocation(jobId);
    const prefix = `$O.${this.bucket}.M.`;
    let subjects: string[];
    try {
      const info = await this.#jsm.streams.info(`OBJ_${this.bucket}`, {
        subjects_filter: `${prefix}>`,
      });
      subjects = Object.keys(info.state.subjects ?? {});
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot list the checkpoints of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: location, cause },
      );
    }
    const objects: JobObject[] = [];
    const jobPrefix = `${jobId}/`;
    for (const subject of subjects) {
      const objectName = nameOfToken(subject.slice(prefix.length));
      if (objectName === undefined || !objectName.startsWith(jobPrefix)) continue;
      const segments = objectName.slice(jobPrefix.length).split("/");
      const match = CHECKPOINT_DIR.exec(segments[0] ?? "");
      const name = segments[1] ?? "";
      if (segments.length !== 2 || match === null) continue;
      if (name !== METADATA && !isValidName(name)) continue;
      objects.push({ checkpointId: Number(match[1]), name, objectName });
    }
    return objects;
  }

  /** Deletes objects, {@linkcode DELETE_CONCURRENCY} at a time. */
  async #deleteAll(objects: readonly JobObject[]): Promise<void> {
    for (let i = 0; i < objects.length; i += DELETE_CONCURRENCY) {
      await Promise.all(
        objects.slice(i, i + DELETE_CONCURRENCY).map((o) => this.#delete(o.objectName)),
      );
    }
  }

  /** Tombstones an object and purges its chunks (the Object Store's `delete`), then the tombstone. */
  async #delete(objectName: string): Promise<void> {
    const key = storeKey(objectName);
    await this.#store.delete(key);
    await this.#jsm.streams.purge(`OBJ_${this.bucket}`, {
      filter: `$O.${this.bucket}.M.${objApi.Base64UrlPaddedCodec.encode(key)}`,
    });
  }

  /**
   * Whether `objectName` was deleted (or never existed) by now. An error
   * asking the server counts as "not known to be gone".
   */
  async #gone(objectName: string): Promise<boolean> {
    try {
      const info = await this.#store.info(storeKey(objectName));
      return info === null || info.deleted;
    } catch {
      return false;
    }
  }

  /**
   * Reads an object whole into one buffer. Rejects (for `IO`) when the
   * server cannot be asked or no chunk arrives for the stall timeout.
   *
   * @param expectedBytes the size the caller expects; a differing object is
   *   reported as `size` before its chunks are fetched.
   */
  async #download(objectName: string, expectedBytes: number | undefined): Promise<Download> {
    let result: objApi.ObjectResult | null;
    try {
      result = await this.#store.get(storeKey(objectName));
    } catch (cause) {
      if (isDigestError(cause)) return { kind: "corrupt", cause };
      throw cause;
    }
    if (result === null) return { kind: "missing" };
    const size = result.info.size;
    if (expectedBytes !== undefined && size !== expectedBytes) {
      await result.data.cancel().catch(() => {});
      return { kind: "size", actual: size };
    }
    const data = new Uint8Array(size);
    let offset = 0;
    const reader = result.data.getReader();
    try {
      for (;;) {
        const read = await readWithin(reader, {
          stallMs: this.#stallMs,
          objectName,
          gone: () => this.#gone(objectName),
        });
        if (read === "deleted") {
          // Discarded while being read (a subsumed checkpoint, or another
          // process's cleanup): its remaining chunks will never arrive.
          await reader.cancel().catch(() => {});
          return { kind: "missing" };
        }
        const { done, value } = read;
        if (done) break;
        if (offset + value.byteLength > size) {
          await reader.cancel().catch(() => {});
          return { kind: "corrupt", cause: chunksDiffer(offset + value.byteLength, size) };
        }
        data.set(value, offset);
        offset += value.byteLength;
      }
      const error = await result.error;
      if (error) throw error;
    } catch (cause) {
      if (isDigestError(cause)) return { kind: "corrupt", cause };
      await reader.cancel().catch(() => {});
      throw cause;
    }
    return offset === size
      ? { kind: "ok", data }
      : { kind: "corrupt", cause: chunksDiffer(offset, size) };
  }
}

/**
 * The name handed to the Object Store client: the UTF-8 bytes of `objectName`
 * as a binary string, because the client base64-encodes names with `btoa`,
 * which takes Latin-1 only. Identical to `objectName` when it is ASCII.
 */
function storeKey(objectName: string): string {
  return String.fromCharCode(...new TextEncoder().encode(objectName));
}

/** The object name of a metadata-subject token, or `undefined` if it is not one. */
function nameOfToken(token: string): string | undefined {
  try {
    const bytes = objApi.Base64UrlPaddedCodec.decode(token, true) as Uint8Array;
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function chunksDiffer(received: number, size: number): string {
  return `its chunks hold ${received}+ bytes, its metadata says ${size}`;
}

/** Whether the Object Store client rejected an object for its SHA-256 digest. */
function isDigestError(error: unknown): boolean {
  return error instanceof Error && /digest/i.test(error.message);
}
