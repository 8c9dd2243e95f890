/**
 * Asynchronous savepoint operations of the REST API (Flink's
 * `AsynchronousOperationResult` behind `POST /jobs/:jobid/savepoints` and
 * `POST /jobs/:jobid/stop`): a trigger returns a `request-id` at once, and
 * `GET /jobs/:jobid/savepoints/:triggerid` reports `IN_PROGRESS`, then
 * `COMPLETED` with the savepoint's `location` or a `failure-cause`.
 *
 * Trigger ids are 32 random hex digits (Flink's `TriggerId`). Results are
 * kept for `retainedMs` after they settle (default 5 minutes, Flink's
 * `rest.async.store-duration`), at most `maxEntries` (default 1000, the
 * oldest settled ones go first). Operations live in the coordinator's
 * memory only: a restarted coordinator knows none.
 *
 * @module
 */

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
   * @returns the trigger id (Flink's `request-id`).
   */
  start(jobId: string, done: Promise<string>): string {
    this.#expire();
    const id = crypto.randomUUID().replaceAll("-", "");
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
