/**
 * Leader election through a lease (Flink's `LeaderElectionService` of
 * JobManager high availability), as a pure state machine: it says what to
 * write to the lease key and when; `leader_election_service.ts` does the
 * reads and compare-and-set writes on NATS KV and runs it.
 *
 * ## The lease
 *
 * One KV key (`leader` in bucket `weir-ha` by default) holds a
 * {@linkcode LeaseValue}: the holder's id, its epoch and whether it released
 * the lease. Every write is a compare-and-set on the key's revision
 * (`create` when the key does not exist, `update` with the last revision
 * seen otherwise), so of several candidates writing at the same revision
 * exactly one wins.
 *
 * - The leader renews every `renewIntervalMs` (an update at its own last
 *   revision, same epoch).
 * - A standby remembers the last revision it read and *when it first saw it
 *   on its own clock*. Once `leaseMs` passed on that clock without a new
 *   revision, the lease has expired and it takes over: an update at that
 *   revision with epoch + 1. No clock of another host is ever compared.
 * - A released lease (a leader that shut down cleanly) is taken over at
 *   once, with epoch + 1.
 * - The leader steps down (stops acting as leader) once `leaseMs` passed
 *   since it *sent* its last successful write without another success, or
 *   at once when a renewal loses a compare-and-set (someone else took
 *   over). Since a standby's `leaseMs` starts when it reads the write, after
 *   it was sent, the old leader has stepped down before a standby takes
 *   over, as long as both clocks run at the same rate and the leader's
 *   event loop is not stalled past its deadline (see the limitation below).
 *
 * ## The epoch
 *
 * The leader epoch (Flink's leader session id, used as a fencing token) is
 * 1 for the first leader and the previous epoch + 1 for each takeover; it
 * lives in the lease value, so it only grows as long as the KV bucket
 * lasts. Every message a leader sends to workers carries it
 * (`epoch_fence.ts`).
 *
 * ## Invariants
 *
 * - At most one candidate's takeover succeeds per lease revision
 *   (compare-and-set).
 * - `role` is `leader` only between a successful write and the step-down
 *   deadline `lastWriteSentAtMs + leaseMs`.
 * - Performs no I/O and reads no clock: every time is passed in, in ms.
 *
 * Limitation: a leader whose process stalls (no event loop turn) for longer
 * than `leaseMs` cannot notice its deadline; it may act as leader until it
 * runs again and its next renewal loses. Workers fence its messages by
 * epoch once they saw the new leader's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LeaderElection } from "./leader_election.ts";
 *
 * const e = new LeaderElection({ candidateId: "c1", leaseMs: 3000 });
 * e.observe(undefined, 0); // the key does not exist yet
 * const action = e.next(0);
 * assert.equal(action.kind, "create");
 * if (action.kind === "create") {
 *   assert.deepEqual(e.written(1, action.value, 0), { kind: "granted", epoch: 1 });
 * }
 * assert.equal(e.next(1000).kind, "renew");
 * assert.equal(e.next(3000).kind, "step-down"); // no renewal succeeded for leaseMs
 * ```
 *
 * @module
 */

/** What the lease key holds. */
export interface LeaseValue {
  /** The leader's (or last leader's) epoch, an integer >= 1. */
  readonly epoch: number;
  /** The holder's candidate id. */
  readonly holder: string;
  /** For people: host and pid of the holder. */
  readonly description: string;
  /** True once the holder released the lease (a clean shutdown): take over at once. */
  readonly released: boolean;
}

/** The lease key as read: its value and revision (the KV sequence number). */
export interface LeaseRecord {
  /** The key's revision. */
  readonly revision: number;
  /** Its value. */
  readonly value: LeaseValue;
}

/** Options of {@linkcode LeaderElection}. */
export interface LeaderElectionOptions {
  /** This candidate's id, unique per process. */
  readonly candidateId: string;
  /** For people: where this candidate runs (host, pid). Default the id. */
  readonly description?: string;
  /** How long a lease lasts without renewal, in ms (integer > 0). */
  readonly leaseMs: number;
}

/** What to do next (see {@linkcode LeaderElection.next}). */
export type ElectionAction =
  /** The key does not exist: create it (compare-and-set on "no key"). */
  | { readonly kind: "create"; readonly value: LeaseValue }
  /** The lease expired or was released: update at `expectedRevision` with the next epoch. */
  | { readonly kind: "take-over"; readonly expectedRevision: number; readonly value: LeaseValue }
  /** This candidate leads: renew at `expectedRevision`. */
  | { readonly kind: "renew"; readonly expectedRevision: number; readonly value: LeaseValue }
  /** Another candidate leads (or nothing was read yet): read the key again later. */
  | {
    readonly kind: "wait";
    readonly leader: LeaseValue | undefined;
    /** When the lease expires unless renewed, in ms from now (0 when unknown). */
    readonly expiresInMs: number;
  }
  /** This candidate led but its lease ran out: stop acting as leader now. */
  | { readonly kind: "step-down"; readonly reason: string };

/** What a successful write changed. */
export type WriteOutcome =
  | { readonly kind: "granted"; readonly epoch: number }
  | { readonly kind: "renewed" };

/** What a lost compare-and-set changed. */
export type ConflictOutcome =
  | { readonly kind: "revoked"; readonly reason: string }
  | { readonly kind: "none" };

/** A candidate's state in the election; see the module docs. */
export class LeaderElection {
  readonly #o: LeaderElectionOptions;
  #role: "candidate" | "leader" = "candidate";
  /** The last lease record read or written, and when it was first seen (local ms). */
  #seen: { record: LeaseRecord; sinceMs: number } | undefined;
  /** Whether the key was read and found missing (and nothing seen since). */
  #absent = false;
  /** When this leader sent its last successful write (local ms). */
  #lastWriteSentAtMs = 0;

  /**
   * A candidate that has read nothing yet.
   * @throws {RangeError} when `leaseMs` is not a positive integer or `candidateId` is empty.
   */
  constructor(options: LeaderElectionOptions) {
    if (!Number.isInteger(options.leaseMs) || options.leaseMs <= 0) {
      throw new RangeError(
        `LeaderElection option leaseMs must be a positive integer: current value is ${options.leaseMs}`,
      );
    }
    if (options.candidateId === "") {
      throw new RangeError("LeaderElection option candidateId must not be empty");
    }
    this.#o = options;
  }

  /** Whether this candidate leads now (until its step-down deadline). */
  get isLeader(): boolean {
    return this.#role === "leader";
  }

  /** The current epoch of this leader; undefined when it does not lead. */
  get epoch(): number | undefined {
    return this.#role === "leader" ? this.#seen?.record.value.epoch : undefined;
  }

  /** The lease value last read or written, if any. */
  get lastSeen(): LeaseValue | undefined {
    return this.#seen?.record.value;
  }

  /**
   * A read of the lease key at local time `nowMs`: `undefined` when the key
   * does not exist (or was deleted). A revision not seen before restarts
   * the expiry clock.
   */
  observe(record: LeaseRecord | undefined, nowMs: number): void {
    if (record === undefined) {
      this.#absent = true;
      return;
    }
    this.#absent = false;
    if (this.#seen === undefined || this.#seen.record.revision !== record.revision) {
      this.#seen = { record, sinceMs: nowMs };
    }
  }

  /** What to do at local time `nowMs`. */
  next(nowMs: number): ElectionAction {
    const lease = this.#o.leaseMs;
    if (this.#role === "leader") {
      const seen = this.#seen!;
      if (nowMs - this.#lastWriteSentAtMs >= lease) {
        return {
          kind: "step-down",
          reason: `no renewal of the lease succeeded for ${
            nowMs - this.#lastWriteSentAtMs
          } ms (leaseMs ${lease})`,
        };
      }
      return {
        kind: "renew",
        expectedRevision: seen.record.revision,
        value: { ...seen.record.value, released: false },
      };
    }
    if (this.#absent) return { kind: "create", value: this.#value(1) };
    const seen = this.#seen;
    if (seen === undefined) return { kind: "wait", leader: undefined, expiresInMs: 0 };
    const v = seen.record.value;
    const expired = nowMs - seen.sinceMs >= lease;
    if (v.released || expired) {
      return {
        kind: "take-over",
        expectedRevision: seen.record.revision,
        value: this.#value(v.epoch + 1),
      };
    }
    return { kind: "wait", leader: v, expiresInMs: lease - (nowMs - seen.sinceMs) };
  }

  /**
   * A write of `value` (create, take-over or renew) succeeded at `revision`;
   * it was sent at local time `sentAtMs`.
   * @returns `granted` with the epoch when this made the candidate leader.
   */
  written(revision: number, value: LeaseValue, sentAtMs: number): WriteOutcome {
    this.#absent = false;
    this.#seen = { record: { revision, value }, sinceMs: sentAtMs };
    this.#lastWriteSentAtMs = sentAtMs;
    if (value.released) {
      this.#role = "candidate";
      return { kind: "renewed" };
    }
    if (this.#role === "leader") return { kind: "renewed" };
    this.#role = "leader";
    return { kind: "granted", epoch: value.epoch };
  }

  /**
   * A write lost its compare-and-set (the key moved on). A leader has lost
   * the lease: it is revoked. A candidate reads the key again.
   */
  conflict(): ConflictOutcome {
    if (this.#role !== "leader") return { kind: "none" };
    this.#role = "candidate";
    return {
      kind: "revoked",
      reason: "another coordinator wrote the lease (it took over)",
    };
  }

  /** This leader stops leading (its deadline passed, or it released the lease). */
  stepDown(): void {
    this.#role = "candidate";
  }

  #value(epoch: number): LeaseValue {
    return {
      epoch,
      holder: this.#o.candidateId,
      description: this.#o.description ?? this.#o.candidateId,
      released: false,
    };
  }
}
