/**
 * Checkpoint uploads off the mailbox thread, in cluster mode: a slot thread
 * writes its subtasks' state blobs through a {@linkcode CheckpointUploadThread}
 * (a Web Worker with its own NATS connection, `checkpoint_upload_thread.ts`)
 * instead of writing them itself. Flink's asynchronous checkpoint part
 * likewise runs on a thread pool beside the task thread
 * (`AsyncCheckpointRunnable` on `asyncOperationsThreadPool`), never on the
 * mailbox thread that processes records.
 *
 * ## Why (issue 13, end-to-end latency)
 *
 * An Object Store put of a subtask's state (~100 KiB in
 * `deno task bench:latency`) is not only I/O: the client chunks the bytes,
 * hashes them, publishes each chunk and the metadata to JetStream and parses
 * the acknowledgements, and an overwrite adds an info request and a purge.
 * On the slot thread, that work runs between the mailbox loops' slices, so
 * every record in flight through the thread waits for it.
 *
 * `deno run -A bench/latency_uploads.ts --duration-s 64` measures it: a
 * 4 KiB message every 1 ms between two connections of one thread while a
 * 128 KiB blob is written every ~100 ms, four modes interleaved every 2 s.
 * p99 of the messages' latency in three runs on a 2-core machine shared with
 * other engineers' test runs (load average 25, 21 and 19 for a 120 s run):
 *
 * | uploads | run 1 | run 2 | run 3 (120 s) |
 * |---|---|---|---|
 * | none | 13.9 ms | 34.8 ms | 7.3 ms |
 * | on this thread, on the data connection | 185.6 ms | 91.1 ms | 70.6 ms |
 * | on this thread, on a connection of their own | 125.0 ms | 47.6 ms | 73.5 ms |
 * | in an upload thread (this module) | 62.0 ms | 120.3 ms | 83.8 ms |
 *
 * Uploads raise the tail of the data messages 3-13x in every run. Which
 * remedy helps is not settled on this machine: with both cores saturated by
 * other processes, CPU time is the bottleneck wherever the upload runs, and
 * the upload thread won in one run (and in a prototype run at load 12-14:
 * 17.9 / 74.4 / 52.8 / 27.4 ms) and lost in two. The upload thread is kept
 * because it is Flink's design and DESIGN.md §6's ("the subtask keeps
 * processing during the upload"): on a machine with a core to spare the
 * mailbox thread no longer runs any of the put's work. An A/B on a quiet
 * machine (`bench/latency_uploads.ts`, and `deno task bench:latency` of the
 * tree with and without it) should confirm it; removing it is one call in
 * `slot.ts`.
 *
 * ## Contract
 *
 * - {@linkcode uploadingOffThread} wraps a slot's `CheckpointStorage`:
 *   `writeState` goes to the upload thread, every other method (restore
 *   reads, discards) to the wrapped storage, so both must name the same
 *   bucket.
 * - `writeState` copies `data` (it may be a view into an encoder's reused
 *   buffer) and transfers the copy; its handle and errors are those of
 *   `ObjectStoreCheckpointStorage.writeState`, a `CheckpointStorageError`
 *   keeping its code, job, checkpoint and path.
 * - The thread starts on the first write and connects once. When it fails
 *   to start, or dies, every write waiting for it fails (its checkpoint is
 *   declined by the subtask, DESIGN.md §6) and the next write starts a new
 *   thread: a broken thread never loses a write silently, nor stops later
 *   checkpoints.
 *
 * ## Not moved (yet)
 *
 * - Encoding the captured state into bytes (`encode` of the keyed and
 *   operator parts in the subtask's asynchronous checkpoint part) still runs
 *   on the mailbox thread, before `writeState`: moving it needs the
 *   snapshot itself to cross the thread boundary (structured clone costs
 *   about what encoding does, FACTS.md).
 * - Restore reads, discards of aborted checkpoints, and the coordinator's
 *   metadata writes are rare or off the data path, and stay where they were.
 * - Local mode (one process) writes on the mailbox thread as before; only
 *   cluster mode's slot threads use an upload thread.
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { StoredBlob } from "../checkpoint/types.ts";
import { logger } from "../log.ts";
import {
  fromUploadError,
  type UploadReply,
  type UploadRequest,
} from "./checkpoint_upload_thread.ts";
import type { SlotLaunch } from "./role.ts";

const log = logger("worker");

/** Options of {@linkcode CheckpointUploadThread}. */
export interface CheckpointUploadThreadOptions {
  /** How to reach NATS (the slot's launch options). */
  readonly nats: SlotLaunch["nats"];
  /** The checkpoint bucket. */
  readonly bucket: string;
  /** The slot, for the connection's name and messages. */
  readonly slotId: string;
  /** The thread's module (default: `checkpoint_upload_thread.ts` beside this one). */
  readonly moduleUrl?: string | URL;
}

interface Waiting {
  readonly resolve: (handle: StoredBlob) => void;
  readonly reject: (error: Error) => void;
}

/** One slot's upload thread (see the module docs). */
export class CheckpointUploadThread {
  readonly #o: CheckpointUploadThreadOptions;
  #worker: Worker | undefined;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  #closed = false;

  /** Keeps the options; the thread starts on the first write. */
  constructor(options: CheckpointUploadThreadOptions) {
    this.#o = options;
  }

  /** Writes that have not been answered yet. */
  get pendingWrites(): number {
    return this.#waiting.size;
  }

  /**
   * Writes one state blob in the upload thread.
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @param name the blob's name within the checkpoint.
   * @param data the bytes (copied before they are handed over).
   * @returns the handle the storage returned.
   * @throws {CheckpointStorageError} as `ObjectStoreCheckpointStorage.writeState` throws it.
   * @throws {RangeError} for an invalid job id, checkpoint id or name.
   * @throws {Error} naming the slot when the thread cannot start or dies, or after `close()`.
   */
  writeState(
    jobId: string,
    checkpointId: number,
    name: string,
    data: Uint8Array,
  ): Promise<StoredBlob> {
    if (this.#closed) {
      return Promise.reject(
        new Error(`The checkpoint upload thread of slot ${this.#o.slotId} is closed`),
      );
    }
    const worker = this.#start();
    const id = this.#nextId++;
    const copy = data.slice();
    const done = new Promise<StoredBlob>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
    });
    const req: UploadRequest = { t: "write", id, jobId, checkpointId, name, data: copy };
    worker.postMessage(req, [copy.buffer]);
    return done;
  }

  /** Stops the thread; waiting writes fail. */
  close(): void {
    this.#closed = true;
    this.#stop(new Error(`The checkpoint upload thread of slot ${this.#o.slotId} was closed`));
  }

  #start(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const o = this.#o;
    const url = o.moduleUrl ?? new URL("./checkpoint_upload_thread.ts", import.meta.url);
    const worker = new Worker(url, { type: "module", name: `weir-slot-${o.slotId}-uploads` });
    this.#worker = worker;
    worker.onmessage = (e: MessageEvent<UploadReply>) => this.#onReply(worker, e.data);
    worker.onerror = (e) => {
      e.preventDefault(); // the slot thread lives on; only the uploads fail
      if (this.#worker !== worker) return;
      this.#stop(
        new Error(
          `The checkpoint upload thread of slot ${o.slotId} failed: ${e.message}; the writes ` +
            `it had fail, and the next write starts a new thread`,
        ),
      );
    };
    const open: UploadRequest = {
      t: "open",
      nats: o.nats,
      bucket: o.bucket,
      name: `weir-slot-${o.slotId}-uploads`,
    };
    worker.postMessage(open);
    return worker;
  }

  #onReply(worker: Worker, reply: UploadReply): void {
    if (this.#worker !== worker) return;
    switch (reply.t) {
      case "opened":
        return;
      case "open-failed":
        this.#stop(
          new Error(
            `The checkpoint upload thread of slot ${this.#o.slotId} cannot open bucket ` +
              `"${this.#o.bucket}": ${reply.message}; the next write tries again`,
          ),
        );
        return;
      case "written":
        this.#waiting.get(reply.id)?.resolve(reply.handle);
        this.#waiting.delete(reply.id);
        return;
      case "write-failed":
        this.#waiting.get(reply.id)?.reject(fromUploadError(reply.error));
        this.#waiting.delete(reply.id);
        return;
    }
  }

  /** Terminates the current thread and fails every waiting write with `error`. */
  #stop(error: Error): void {
    const worker = this.#worker;
    this.#worker = undefined;
    worker?.terminate();
    if (this.#waiting.size > 0) log.warn(error.message);
    for (const w of this.#waiting.values()) w.reject(error);
    this.#waiting.clear();
  }
}

/**
 * `storage` with its `writeState` done by `uploads` (see the module docs);
 * every other member is `storage`'s own, called on `storage`. A proxy, so
 * members the `CheckpointStorage` interface gains later are forwarded too.
 * @param storage the slot's storage, on the same bucket as `uploads`.
 * @param uploads the slot's upload thread.
 */
export function uploadingOffThread(
  storage: CheckpointStorage,
  uploads: CheckpointUploadThread,
): CheckpointStorage {
  const writeState: CheckpointStorage["writeState"] = (jobId, checkpointId, name, data) =>
    uploads.writeState(jobId, checkpointId, name, data);
  return new Proxy(storage, {
    get(target, prop) {
      if (prop === "writeState") return writeState;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
