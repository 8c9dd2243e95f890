/**
 * The input of a source subtask (Flink's `StreamTaskSourceInput` over a
 * FLIP-27 `SourceOperator`): polls the reader while it has data, and, when
 * it has none, waits for its availability future instead of spinning.
 *
 * @module
 */

import type { SourceOperator } from "./operators/source_operator.ts";

/** Options of {@linkcode SourceInput}. */
export interface SourceInputOptions {
  /** The subtask's head operator. */
  readonly source: SourceOperator;
  /** Wakes the mailbox loop (the reader has data again). */
  readonly notify: () => void;
  /** Fails the subtask (the reader's availability future rejected). */
  readonly fail: (error: unknown) => void;
  /** The source reached its end: end the subtask's input. */
  readonly endOfInput: () => Promise<void>;
}

/** A source subtask's input (see the module docs). */
export class SourceInput {
  readonly #o: SourceInputOptions;
  #ready = false;
  #waiting = false;
  #ended = false;

  /** Makes the input; nothing is polled before {@linkcode start}. */
  constructor(options: SourceInputOptions) {
    this.#o = options;
  }

  /** The subtask started: polling may begin. */
  start(): void {
    this.#ready = true;
  }

  /** No more polling (end of input, or the source was stopped). */
  end(): void {
    this.#ended = true;
  }

  /**
   * Polls the reader once.
   * @returns `false` when nothing was emitted (no data yet, or the input ended).
   * @throws whatever the reader throws.
   */
  async processNext(): Promise<boolean> {
    if (this.#ended || !this.#ready) return false;
    const o = this.#o;
    const status = await o.source.poll();
    if (status === "END_OF_INPUT") {
      await o.endOfInput();
      return false;
    }
    if (status === "NOTHING_AVAILABLE") {
      this.#ready = false;
      if (!this.#waiting) {
        this.#waiting = true;
        o.source.isAvailable().then(() => {
          this.#waiting = false;
          this.#ready = true;
          o.notify();
        }, o.fail);
      }
      return false;
    }
    return true;
  }
}
