/**
 * The bounded queue between a core NATS subscription's callback and the
 * source reader's `pollNext`: the pure part of the source's overflow
 * policy (no I/O, no clock).
 *
 * ## Invariants
 *
 * - At most `capacity` items are held; items come out in arrival order.
 * - An item offered to a full queue is not held: `offer` says so
 *   (`"overflow"` with policy `"fail"`, `"dropped"` with `"drop"`), and
 *   `dropped` counts the dropped ones. Nothing leaves silently.
 *
 * @module
 */

/** What {@linkcode MessageQueue.offer} did with an item. */
export type OfferOutcome =
  /** Held. */
  | "queued"
  /** Not held: the queue was full and the policy is `"drop"` (counted in `dropped`). */
  | "dropped"
  /** Not held: the queue was full and the policy is `"fail"`; the caller fails. */
  | "overflow";

/** A bounded FIFO queue with an overflow policy (see the module docs). */
export class MessageQueue<M> {
  readonly #capacity: number;
  readonly #policy: "fail" | "drop";
  #items: (M | undefined)[] = [];
  #head = 0;
  #dropped = 0;

  /**
   * @param capacity items held at most, a positive integer.
   * @param policy what a full queue does with a new item.
   * @throws {RangeError} when `capacity` is not a positive integer.
   */
  constructor(capacity: number, policy: "fail" | "drop") {
    if (!(Number.isSafeInteger(capacity) && capacity >= 1)) {
      throw new RangeError(
        `MessageQueue 'capacity' must be a positive integer: current value is ${capacity}`,
      );
    }
    this.#capacity = capacity;
    this.#policy = policy;
  }

  /** Items held. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Items dropped so far (policy `"drop"`). */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Offers one item.
   * @returns whether it was held, dropped or overflowed (see {@linkcode OfferOutcome}).
   */
  offer(item: M): OfferOutcome {
    if (this.size >= this.#capacity) {
      if (this.#policy === "fail") return "overflow";
      this.#dropped++;
      return "dropped";
    }
    this.#items.push(item);
    return "queued";
  }

  /**
   * Removes and returns up to `max` items, oldest first.
   * @param max a non-negative integer.
   */
  take(max: number): M[] {
    const n = Math.max(0, Math.min(max, this.size));
    const out = this.#items.slice(this.#head, this.#head + n) as M[];
    for (let i = this.#head; i < this.#head + n; i++) this.#items[i] = undefined;
    this.#head += n;
    if (this.#head > 4096 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return out;
  }
}
