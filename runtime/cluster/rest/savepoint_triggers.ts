/**
 * Asynchronous savepoint operations of the REST API (Flink's
 * `AsynchronousOperationResult` behind `POST /jobs/:jobid/savepoints` and
 * `POST /jobs/:jobid/stop`): a trigger returns a `request-id` at once, and
 * `GET /jobs/:jobid/savepoints/:triggerid` reports `IN_PROGRESS`, then
 * `COMPLETED` with the savepoint's `location` or a `failure-cause`.
 *
 * Trigger ids are 32 hex digits (the length of Flink's `TriggerId`): the
 * first 8 are the leader epoch of the coordinator that issued it
 * ({@linkcode newTriggerId}, {@linkcode triggerEpoch}; 0 without high
 * availability), the other 24 random. Results are kept for `retainedMs`
 * after they settle (default 5 minutes, Flink's
 * `rest.async.store-duration`), at most `maxEntries` (default 1000, the
 * oldest settled ones go first). Operations in progress live in the
 * leader's memory only; a completed savepoint's location is also recorded
 * in the job store by the cluster coordinator, so a new leader still
 * answers for it, and an id of an earlier epoch that it does not know is
 * answered with a 404 that says so (`rest_server.ts`).
 *
 * @module
 */

/**
 * A new trigger id issued under leader epoch `epoch`: 8 hex digits of the
 * epoch, then 24 random hex digits.
 * @throws {RangeError} when `epoch` is not an integer from 0 to 2^32 - 1.
 */
export function newTriggerId(epoch: number): string {
  if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0xffffffff) {
    throw new RangeError(
      `a trigger id's leader epoch must be an integer from 0 to 4294967295: current value is ${epoch}`,
    );
  }
  const random = crypto.randomUUID().replaceAll("-", "").slice(0, 24);
  return epoch.toString(16).padStart(8, "0") + random;
}

/**
 * The leader epoch a trigger id was issued under ({@linkcode newTriggerId}),
 * or `undefined` when `id` is not 32 lowercase hex digits.
 */
export function triggerEpoch(id: string): number | undefined {
  return /^[0-9a-f]{32}$/.test(id) ? parseInt(id.slice(0, 8), 16) : undefined;
}

/** The status body of `GET /jobs/:jobid/savepoints/:triggerid` (Flink's shape). */
export type SavepointOperationStatus =
  | { readonly status: { readonly id: "IN_PROGRESS" } }
  | {
    readonly status: { readonly id: "COMPLETED" };
    readonly operation:
      | { readonly location: string }
      | {
        readonly "failure-cause": {
          readonly class: string;
          readonly "stack-trace": string;
        };
      };
  };

interface Operation {
  readonly jobId: string;
  result: SavepointOperationStatus;
  settledAt: number | undefined;
}

/** Options of {@linkcode SavepointTriggers}. */
export interface SavepointTriggersOptions {
  /** How long a settled result is kept, in ms. Default 300 000. */
  readonly retainedMs?: number;
  /** Most operations kept. Default 1000. */
  readonly maxEntries?: number;
  /** The clock, epoch ms. Default `Date.now`. */
  readonly now?: () => number;
}

/** Tracks savepoint operations by trigger id (see the module docs). */
export class SavepointTriggers {
  readonly #ops = new Map<string, Operation>();
  readonly #retainedMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  /** Makes an empty registry. */
  constructor(options: SavepointTriggersOptions = {}) {
    this.#retainedMs = options.retainedMs ?? 300_000;
    this.#maxEntries = options.maxEntries ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Registers a savepoint operation in progress and follows `done`.
   * @param jobId the job it is for.
   * @param done resolves with the savepoint's path, or rejects with why it failed.
   * @param id its trigger id. Default: a new one of epoch 0 ({@linkcode newTriggerId}).
   * @returns the trigger id (Flink's `request-id`).
   */
  start(jobId: string, done: Promise<string>, id: string = newTriggerId(0)): string {
    this.#expire();
    const op: Operation = {
      jobId,
      result: { status: { id: "IN_PROGRESS" } },
      settledAt: undefined,
    };
    this.#ops.set(id, op);
    done.then(
      (location) => {
        op.result = { status: { id: "COMPLETED" }, operation: { location } };
        op.settledAt = this.#now();
      },
      (error) => {
        const e = error instanceof Error ? error : new Error(String(error));
        op.result = {
          status: { id: "COMPLETED" },
          operation: {
            "failure-cause": { class: e.name, "stack-trace": `${e.name}: ${e.message}` },
          },
        };
        op.settledAt = this.#now();
      },
    );
    return id;
  }

  /**
   * The status of operation `triggerId` of job `jobId`.
   * @returns `undefined` when no such operation is known for that job (or it expired).
   */
  status(jobId: string, triggerId: string): SavepointOperationStatus | undefined {
    this.#expire();
    const op = this.#ops.get(triggerId);
    return op !== undefined && op.jobId === jobId ? op.result : undefined;
  }

  #expire(): void {
    const now = this.#now();
    for (const [id, op] of this.#ops) {
      if (op.settledAt !== undefined && now - op.settledAt > this.#retainedMs) this.#ops.delete(id);
    }
    if (this.#ops.size < this.#maxEntries) return;
    for (const [id, op] of this.#ops) {
      if (this.#ops.size < this.#maxEntries) break;
      if (op.settledAt !== undefined) this.#ops.delete(id);
    }
  }
}
