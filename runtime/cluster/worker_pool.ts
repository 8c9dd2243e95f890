/**
 * The live workers of a cluster as the coordinator knows them from their
 * heartbeats (Flink's `ResourceManager` view of registered TaskManagers and
 * their heartbeat monitor). Pure: no I/O, no timers; the caller passes the
 * time and logs what the returned events say.
 *
 * - A heartbeat registers its worker, or refreshes it.
 * - A heartbeat with a known id but another `instance` means another
 *   process took the id (the one before it restarted faster than the
 *   heartbeat timeout, or two workers share an id): the old one is reported
 *   replaced, and the new one registered.
 * - {@linkcode WorkerPool.expire} removes the workers silent for the
 *   heartbeat timeout and returns them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WorkerPool } from "./worker_pool.ts";
 *
 * const pool = new WorkerPool();
 * const hb = (workerId: string, instance: string, slots: string[]) =>
 *   ({ workerId, instance, host: "h", pid: 1, slots, slotThreads: slots.length, sentAt: 0 });
 * assert.equal(pool.heartbeat(hb("a", "1", ["a-0", "a-1"]), 0).kind, "joined");
 * assert.equal(pool.heartbeat(hb("b", "1", ["b-0"]), 0).kind, "joined");
 * assert.deepEqual(pool.slots(), ["a-0", "b-0", "a-1"]); // interleaved across workers
 * assert.equal(pool.heartbeat(hb("a", "1", ["a-0", "a-1"]), 900).kind, "refreshed");
 * assert.deepEqual(pool.expire(1000, 500).map((l) => [l.worker.workerId, l.silentMs]), [["b", 1000]]);
 * assert.equal(pool.heartbeat(hb("a", "2", ["a-0"]), 1000).kind, "replaced");
 * ```
 *
 * @module
 */

import type { Heartbeat, WorkerStatus } from "./cluster_protocol.ts";

/** What one heartbeat did to the pool. */
export type HeartbeatEvent =
  /** The id is not `[A-Za-z0-9_-]+`: ignored. */
  | { readonly kind: "invalid" }
  /** A new worker. */
  | { readonly kind: "joined" }
  /** A known worker, still the same process. */
  | { readonly kind: "refreshed" }
  /** Another process took a known id: `previous` is gone (and the new one joined). */
  | { readonly kind: "replaced"; readonly previous: Heartbeat };

/** A worker {@linkcode WorkerPool.expire} removed. */
export interface ExpiredWorker {
  /** Its last heartbeat. */
  readonly worker: Heartbeat;
  /** How long it had been silent, ms. */
  readonly silentMs: number;
}

interface Entry {
  readonly heartbeat: Heartbeat;
  readonly lastSeen: number;
}

/** The registered workers (see the module docs). */
export class WorkerPool {
  readonly #workers = new Map<string, Entry>();

  /** The number of registered workers. */
  get size(): number {
    return this.#workers.size;
  }

  /**
   * Registers or refreshes the sender of heartbeat `hb`.
   * @param hb the heartbeat.
   * @param now when it arrived, epoch ms.
   * @returns what it did (see {@linkcode HeartbeatEvent}).
   */
  heartbeat(hb: Heartbeat, now: number): HeartbeatEvent {
    if (typeof hb?.workerId !== "string" || !/^[A-Za-z0-9_-]+$/.test(hb.workerId)) {
      return { kind: "invalid" };
    }
    const known = this.#workers.get(hb.workerId);
    this.#workers.set(hb.workerId, { heartbeat: hb, lastSeen: now });
    if (known === undefined) return { kind: "joined" };
    if (known.heartbeat.instance !== hb.instance) {
      return { kind: "replaced", previous: known.heartbeat };
    }
    return { kind: "refreshed" };
  }

  /**
   * Removes the workers silent for at least `timeoutMs`.
   * @param now the time, epoch ms.
   * @param timeoutMs the heartbeat timeout, ms.
   * @returns the removed workers, in registration order.
   */
  expire(now: number, timeoutMs: number): ExpiredWorker[] {
    const out: ExpiredWorker[] = [];
    for (const [id, w] of this.#workers) {
      const silentMs = now - w.lastSeen;
      if (silentMs < timeoutMs) continue;
      this.#workers.delete(id);
      out.push({ worker: w.heartbeat, silentMs });
    }
    return out;
  }

  /** Forgets every worker (they count again from their next heartbeat). */
  clear(): void {
    this.#workers.clear();
  }

  /**
   * Live slots, interleaved across workers sorted by id (first slot of every
   * worker, then the second, ...), so round-robin deployment spreads a job
   * over processes.
   */
  slots(): string[] {
    const lists = [...this.#workers.values()]
      .sort((a, b) => a.heartbeat.workerId.localeCompare(b.heartbeat.workerId))
      .map((w) => w.heartbeat.slots);
    const out: string[] = [];
    const most = Math.max(0, ...lists.map((l) => l.length));
    for (let i = 0; i < most; i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
    return out;
  }

  /**
   * The workers as `weir list` shows them.
   * @param now the time, epoch ms (for the time since the last heartbeat).
   */
  list(now: number): WorkerStatus[] {
    return [...this.#workers.values()].map((w) => ({
      workerId: w.heartbeat.workerId,
      host: w.heartbeat.host,
      pid: w.heartbeat.pid,
      slots: w.heartbeat.slots.length,
      slotIds: w.heartbeat.slots,
      lastHeartbeatAgoMs: now - w.lastSeen,
    }));
  }
}
