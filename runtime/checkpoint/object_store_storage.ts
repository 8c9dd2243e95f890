/**
 * Checkpoint storage on a NATS Object Store bucket that every worker reaches
 * (DESIGN §8): the cluster-mode default, as Flink's `FileSystemCheckpointStorage`
 * on a shared file system.
 *
 * ## Layout
 *
 * ```text
 * <bucket>: <jobId>/chk-<id>/<name>       private state blobs, one per writeState
 *           <jobId>/chk-<id>/_metadata    JSON CheckpointMetadata: the commit point
 *           <jobId>/shared/<name>         shared state blobs, one per writeShared
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
 * selects one job: `listAll`, `listCompleted`, `latestCompleted`, `discard`,
 * `discardJob` and `listShared` ask the server for every object subject of the bucket
 * (one stream-info request with `subjects_filter`, paged by the client; no
 * message is read) and keep the job's. Their cost grows with the number of
 * objects in the bucket, of all jobs: keep retention low, or use one bucket
 * per busy job. (The Object Store's own `list()` would be dearer: it reads
 * every object's metadata message.) `listCompleted` and `latestCompleted`
 * then read each candidate `_metadata`; `listShared` asks for the info of
 * each shared object, to leave out tombstones. `deleteShared` costs three
 * requests per object (tombstone, purge of its chunks, purge of the
 * tombstone), two for an absent one.
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
  CheckpointStorageError,
  type CheckpointStorageErrorCode,
  findCompleted,
  findLatestCompleted,
  METADATA,
  parseCheckpointMetadata,
  parseStatePath,
  SHARED_DIR,
  sharedNameOf,
} from "./storage.ts";
import type { CheckpointStorage } from "./storage.ts";
import { encodeCheckpointMetadata } from "./metadata.ts";
import type { CheckpointId, CheckpointMetadata, StoredBlob } from "./types.ts";
import { downloadObject } from "./_chunk_reads.ts";
import { type JobObject, jobObjectOf, nameOfToken, storeKey } from "./_object_names.ts";

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
   * The object name of a shared blob of a job: `<jobId>/shared/<name>`.
   *
   * @param jobId the job.
   * @param name the blob's name.
   * @returns the name.
   * @throws {RangeError} for an invalid job id or name.
   */
  sharedObjectName(jobId: string, name: string): string {
    checkName("jobId", jobId);
    checkName("name", name);
    return `${jobId}/${SHARED_DIR}/${name}`;
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
  ): Promise<StoredBlob> {
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

  /** See {@linkcode CheckpointStorage.readState}: a private blob or a shared one. */
  async readState(jobId: string, handle: StoredBlob): Promise<Uint8Array> {
    const parsed = parseStatePath(jobId, handle.path, "read state");
    const objectName = parsed.namespace === "private"
      ? this.objectName(jobId, parsed.checkpointId, parsed.name)
      : this.sharedObjectName(jobId, parsed.name);
    const at = parsed.namespace === "private" ? { checkpointId: parsed.checkpointId } : {};
    const what = parsed.namespace === "private"
      ? `Cannot read state ${
        JSON.stringify(handle.path)
      } of checkpoint ${parsed.checkpointId} of job ${JSON.stringify(jobId)}`
      : `Cannot read shared state ${JSON.stringify(handle.path)} of job ${JSON.stringify(jobId)}`;
    const fail = (code: CheckpointStorageErrorCode, cause: unknown) =>
      new CheckpointStorageError(what, {
        code,
        jobId,
        ...at,
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

  /** See {@linkcode CheckpointStorage.writeShared}: the object `<jobId>/shared/<name>`. */
  async writeShared(jobId: string, name: string, data: Uint8Array): Promise<StoredBlob> {
    const objectName = this.sharedObjectName(jobId, name);
    try {
      await this.#store.putBlob(
        { name: storeKey(objectName), options: { max_chunk_size: CHUNK_BYTES } },
        data,
      );
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot write shared state ${JSON.stringify(name)} of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: this.objectUrl(objectName), cause },
      );
    }
    return { path: `${SHARED_DIR}/${name}`, bytes: data.byteLength };
  }

  /**
   * See {@linkcode CheckpointStorage.deleteShared}: each object is
   * tombstoned, its chunks purged, then the tombstone, as `discard` does;
   * {@linkcode DELETE_CONCURRENCY} at a time. An absent object costs one
   * request and is no error.
   */
  async deleteShared(jobId: string, paths: readonly string[]): Promise<void> {
    const objects = paths.map((p) => {
      const name = sharedNameOf(jobId, p);
      return { checkpointId: null, name, objectName: this.sharedObjectName(jobId, name) };
    });
    try {
      await this.#deleteAll(objects);
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot delete shared state of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: this.objectUrl(`${jobId}/${SHARED_DIR}/`), cause },
      );
    }
  }

  /**
   * See {@linkcode CheckpointStorage.listShared}: the job's shared objects
   * from the bucket's metadata subjects (see "Cost of listing"), then one
   * info request per object ({@linkcode DELETE_CONCURRENCY} at a time) to
   * leave out the tombstone a crash in the middle of a deletion leaves.
   */
  async listShared(jobId: string): Promise<string[]> {
    const objects = (await this.#objectsOf(jobId)).filter((o) => o.checkpointId === null);
    const live: string[] = [];
    try {
      for (let i = 0; i < objects.length; i += DELETE_CONCURRENCY) {
        const batch = objects.slice(i, i + DELETE_CONCURRENCY);
        const infos = await Promise.all(batch.map((o) => this.#store.info(storeKey(o.objectName))));
        batch.forEach((o, k) => {
          const info = infos[k];
          if (info !== null && info !== undefined && !info.deleted) {
            live.push(`${SHARED_DIR}/${o.name}`);
          }
        });
      }
    } catch (cause) {
      throw new CheckpointStorageError(
        `Cannot list the shared state of job ${JSON.stringify(jobId)}`,
        { code: "IO", jobId, path: this.objectUrl(`${jobId}/${SHARED_DIR}/`), cause },
      );
    }
    return live.sort();
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
        new TextEncoder().encode(encodeCheckpointMetadata(checked, 1)),
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
    const ids = new Set<CheckpointId>();
    for (const o of await this.#objectsOf(jobId)) {
      if (o.checkpointId !== null) ids.add(o.checkpointId);
    }
    return [...ids].sort((a, b) => a - b);
  }

  /**
   * See {@linkcode CheckpointStorage.discard}: `_metadata` first, then the
   * checkpoint's private state objects; shared objects stay.
   */
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

  /** See {@linkcode CheckpointStorage.discardJob}: every `_metadata` first, then the rest, shared objects included. */
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
   * The objects `<jobId>/chk-<id>/<name>` and `<jobId>/shared/<name>` of a
   * job, tombstones included, from the bucket's metadata subjects (see "Cost
   * of listing").
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
    for (const subject of subjects) {
      const object = jobObjectOf(jobId, nameOfToken(subject.slice(prefix.length)));
      if (object !== undefined) objects.push(object);
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

  /** {@linkcode downloadObject} of an object of this bucket. */
  #download(
    objectName: string,
    expectedBytes: number | undefined,
  ): ReturnType<typeof downloadObject> {
    return downloadObject(this.#store, objectName, expectedBytes, {
      stallMs: this.#stallMs,
      gone: () => this.#gone(objectName),
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
}
