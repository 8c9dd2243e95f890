/**
 * The KV edge of leader election (Flink's `LeaderElectionService` with a
 * lease store): runs a {@linkcode LeaderElection} against one key of a NATS
 * KV bucket, reading and writing it with compare-and-set every
 * `renewIntervalMs`, and tells its listener when this candidate is granted
 * leadership (with the epoch), when it loses it, and who leads while it
 * stands by. The decisions are the state machine's (`leader_election.ts`);
 * this file only does the I/O and the timer.
 *
 * ## Invariants
 *
 * - One round at a time: a read or write finishes (or fails) before the
 *   next round starts.
 * - `granted` and `revoked` alternate, starting with `granted`.
 * - A failed read or write (NATS unreachable) changes nothing; the state
 *   machine steps a leader down once its lease ran out.
 *
 * @module
 */

import type { kvApi, NatsConnection } from "../../actor/nats_deps.ts";
import { logger } from "../../log.ts";
import { casWrite, openBucket, readKey } from "./kv_cas.ts";
import type { LeaderElection, LeaseValue } from "./leader_election.ts";

const log = logger("ha");

/** The lease key in the HA bucket. */
export const LEADER_KEY = "leader";

/** What the election service tells its owner (Flink's `LeaderContender`). */
export interface LeaderContender {
  /** This candidate now leads with `epoch`. */
  granted(epoch: number): void;
  /** This candidate no longer leads, for `reason`; it stays a candidate. */
  revoked(reason: string): void;
  /** Another candidate leads (called when the leader or its epoch changes). */
  standby(leader: LeaseValue): void;
}

/** Options of {@linkcode LeaderElectionService}. */
export interface LeaderElectionServiceOptions {
  /** The NATS connection (the service does not close it). */
  readonly connection: NatsConnection;
  /** The KV bucket of the lease (created when missing). */
  readonly bucket: string;
  /** The state machine, with its candidate id and lease. */
  readonly election: LeaderElection;
  /** Time between rounds (renewals, reads), in ms (integer > 0, below the lease). */
  readonly renewIntervalMs: number;
  /** Who to tell. */
  readonly contender: LeaderContender;
}

/** Runs the election; see the module docs. */
export class LeaderElectionService {
  readonly #o: LeaderElectionServiceOptions;
  #kv: kvApi.KV | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #round: Promise<void> = Promise.resolve();
  #announced: string | undefined;

  /**
   * Keeps the options; no I/O until `start`.
   * @throws {RangeError} when `renewIntervalMs` is not a positive integer.
   */
  constructor(options: LeaderElectionServiceOptions) {
    if (!Number.isInteger(options.renewIntervalMs) || options.renewIntervalMs <= 0) {
      throw new RangeError(
        `LeaderElectionService option renewIntervalMs must be a positive integer: ` +
          `current value is ${options.renewIntervalMs}`,
      );
    }
    this.#o = options;
  }

  /**
   * Opens (or creates) the bucket and runs the first round.
   * @returns once the first round decided this candidate's role (leader or standby).
   * @throws {Error} naming the bucket when it cannot be opened.
   */
  async start(): Promise<void> {
    this.#kv = await openBucket(this.#o.connection, this.#o.bucket);
    this.#round = this.#runRound();
    await this.#round;
  }

  /**
   * Stops the rounds. A leader releases the lease (a compare-and-set
   * marking it released, so a standby takes over at once) and is revoked.
   *
   * @param options `release: false` skips the release (the NATS server is
   *   unreachable: the write could only time out); a standby then takes
   *   over once the lease expires. Default `true`.
   */
  async stop(options: { readonly release?: boolean } = {}): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
    const e = this.#o.election;
    if (!e.isLeader || this.#kv === undefined) return;
    const action = e.next(Date.now());
    if (options.release === false) {
      log.warn(
        `not releasing the leader lease: the NATS server is unreachable; a standby takes ` +
          `over once the lease expires`,
      );
    } else if (action.kind === "renew") {
      const value: LeaseValue = { ...action.value, released: true };
      try {
        await casWrite(this.#kv, LEADER_KEY, encodeLease(value), action.expectedRevision);
      } catch (error) {
        log.warn(`cannot release the leader lease: ${error}`);
      }
    }
    e.stepDown();
    this.#o.contender.revoked("the coordinator stopped");
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#runRound();
    }, this.#o.renewIntervalMs);
  }

  async #runRound(): Promise<void> {
    try {
      await this.#step();
    } catch (error) {
      log.debug(`leader election round failed: ${error}`);
    } finally {
      this.#schedule();
    }
  }

  /** One round: read when not leading, then act on the state machine's decision. */
  async #step(): Promise<void> {
    const e = this.#o.election;
    const kv = this.#kv!;
    const c = this.#o.contender;
    if (!e.isLeader) {
      const read = await readKey(kv, LEADER_KEY);
      e.observe(
        read === undefined ? undefined : { revision: read.revision, value: decodeLease(read.data) },
        Date.now(),
      );
    }
    const now = Date.now();
    const action = e.next(now);
    switch (action.kind) {
      case "wait":
        if (action.leader !== undefined) {
          const who = `${action.leader.holder}@${action.leader.epoch}`;
          if (who !== this.#announced) {
            this.#announced = who;
            c.standby(action.leader);
          }
        }
        return;
      case "step-down":
        e.stepDown();
        this.#announced = undefined;
        c.revoked(action.reason);
        return;
      case "create":
      case "take-over":
      case "renew": {
        if (this.#stopped) return;
        const expected = action.kind === "create" ? "absent" : action.expectedRevision;
        const outcome = await casWrite(kv, LEADER_KEY, encodeLease(action.value), expected);
        if (outcome.kind === "conflict") {
          const lost = e.conflict();
          if (lost.kind === "revoked") {
            this.#announced = undefined;
            c.revoked(lost.reason);
          }
          return;
        }
        const result = e.written(outcome.revision, action.value, now);
        if (result.kind === "granted") {
          this.#announced = undefined;
          c.granted(result.epoch);
        }
        return;
      }
    }
  }
}

/** The lease value as stored: JSON. */
export function encodeLease(value: LeaseValue): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/**
 * Parses a stored lease value.
 * @throws {TypeError} naming the field when the bytes are not a lease value.
 */
export function decodeLease(data: Uint8Array): LeaseValue {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(new TextDecoder().decode(data));
  } catch (error) {
    throw new TypeError(`the leader lease is not JSON: ${error}`);
  }
  if (!Number.isInteger(v.epoch) || (v.epoch as number) < 1) {
    throw new TypeError(`the leader lease's epoch must be an integer >= 1, got ${v.epoch}`);
  }
  if (typeof v.holder !== "string" || v.holder === "") {
    throw new TypeError(`the leader lease's holder must be a non-empty string, got ${v.holder}`);
  }
  return {
    epoch: v.epoch as number,
    holder: v.holder,
    description: typeof v.description === "string" ? v.description : v.holder,
    released: v.released === true,
  };
}
