/**
 * Internal: the two clocks of TTL state in `HeapKeyedStateBackend`
 * (processing time, and event time on the operator's watermark) and the
 * start of event time. Not part of the public API.
 *
 * ## Event time's start
 *
 * The event-time clock reads `-Infinity` until the first watermark. Entries
 * accessed before then are stamped `-Infinity`; the first finite reading
 * starts event time, and {@linkcode TtlClocks} then calls its `onStart`
 * hook, which gives every such entry the start as its last access (see
 * {@linkcode stampUnstarted}). A state registered or restored after the
 * start is stamped when it is (the caller checks `eventTimeStart`).
 *
 * The backend reads the event-time clock at every read or write of an
 * event-time TTL state, at the registration of one and at every snapshot.
 * Since a watermark reaches a keyed operator before the records it covers,
 * the start is the first watermark, unless several watermarks pass with no
 * state access and no snapshot between them; then the start is the last of
 * those, and entries accessed before event time started live up to that
 * much longer (a simplification: the backend learns the watermark only by
 * reading the clock).
 *
 * @module
 */

import type { TtlTime } from "./keyed_state_snapshot.ts";
import type { StateTable, TtlSettings } from "./_heap_state_base.ts";
import { type Expiry, forEachCell } from "./_heap_snapshot.ts";

/** The processing-time and event-time clocks of TTL state, in ms. */
export class TtlClocks {
  /** The processing-time clock. */
  readonly processing: () => number;
  readonly #event: (() => number) | undefined;
  readonly #onStart: (start: number) => void;
  #start: number | undefined;

  /**
   * @param processing the processing-time clock.
   * @param event the event-time clock (the watermark), if the backend has one.
   * @param onStart called once, with the first finite event time read.
   */
  constructor(
    processing: () => number,
    event: (() => number) | undefined,
    onStart: (start: number) => void,
  ) {
    this.processing = processing;
    this.#event = event;
    this.#onStart = onStart;
  }

  /** Whether an event-time clock was given. */
  get hasEventTime(): boolean {
    return this.#event !== undefined;
  }

  /** The first finite event time read, once event time started. */
  get eventTimeStart(): number | undefined {
    return this.#start;
  }

  /** The event time (watermark); the first finite reading starts event time. */
  readonly event = (): number => {
    const now = this.#event!();
    if (this.#start === undefined && now > -Infinity) {
      this.#start = now;
      this.#onStart(now);
    }
    return now;
  };

  /** The clock of `time`. */
  clockOf(time: TtlTime): () => number {
    return time === "EventTime" ? this.event : this.processing;
  }

  /** The current time of `time`'s clock; `-Infinity` for event time without a clock. */
  now(time: TtlTime): number {
    if (time === "ProcessingTime") return this.processing();
    return this.#event === undefined ? -Infinity : this.event();
  }

  /** How entries of a TTL expire now, or `undefined` for no (known) TTL. */
  expiry(ttl: TtlSettings | undefined): Expiry | undefined {
    return ttl === undefined ? undefined : { ttlMs: ttl.ttlMs, now: this.now(ttl.time) };
  }
}

/** Gives every cell of `table` accessed before event time started the start as its time. */
export function stampUnstarted(table: StateTable, start: number): void {
  forEachCell(table, (cell) => {
    if (cell.t === -Infinity) cell.t = start;
  });
}
