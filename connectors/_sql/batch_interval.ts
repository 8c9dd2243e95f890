/**
 * Sending a partly filled batch after a time without barriers (Flink's
 * `JdbcExecutionOptions.batchIntervalMs`): the autocommit writers of the
 * SQL sinks (`"at-least-once"` and `"none"`) otherwise send rows only when
 * a batch fills, at a barrier, or at the end of input, so a job without
 * checkpointing whose source is slower than a batch per moment would leave
 * its rows in memory indefinitely (a trial wrote 0 of 50 rows in 25 s).
 *
 * {@linkcode BatchIntervalFlusher} arms a timer when the first row enters
 * an empty batch and sends the batch when it fires; a send for another
 * reason (a full batch, a barrier) cancels it. A timed send's failure has
 * no caller to reach, so it is kept and thrown by the writer's next
 * `write` or `flush` ({@linkcode BatchIntervalFlusher.throwIfFailed}),
 * which fails the attempt as the send itself would have.
 *
 * @module
 */

/** The default interval, in ms. */
export const DEFAULT_BATCH_INTERVAL_MS = 200;

/**
 * Checks a `batchIntervalMs` option.
 * @param where the sink, for the message.
 * @param value the option (`undefined`: the default; 0: no timed sends).
 * @returns the interval in ms.
 * @throws {RangeError} unless it is an integer from 0 to 3 600 000.
 */
export function checkBatchIntervalMs(where: string, value: number | undefined): number {
  const ms = value ?? DEFAULT_BATCH_INTERVAL_MS;
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > 3_600_000) {
    throw new RangeError(
      `${where}: batchIntervalMs must be an integer from 0 (no timed sends) to 3600000: current value is ${
        String(value)
      }`,
    );
  }
  return ms;
}

/** Sends a batch `intervalMs` after its first row (see the module docs). */
export class BatchIntervalFlusher {
  readonly #intervalMs: number;
  readonly #send: () => Promise<void>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failure: unknown;
  #failed = false;

  /**
   * @param intervalMs the interval in ms; 0 never arms a timer.
   * @param send sends the buffered rows (called from the timer).
   */
  constructor(intervalMs: number, send: () => Promise<void>) {
    this.#intervalMs = intervalMs;
    this.#send = send;
  }

  /** Arms the timer unless it is armed (call after buffering a row). */
  arm(): void {
    if (this.#intervalMs === 0 || this.#timer !== undefined || this.#failed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#send().catch((error) => {
        if (this.#failed) return;
        this.#failed = true;
        this.#failure = error;
      });
    }, this.#intervalMs);
  }

  /** Disarms the timer (a send for another reason, or the writer closes). */
  cancel(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Throws the failure of a timed send, if one failed. */
  throwIfFailed(): void {
    if (this.#failed) throw this.#failure;
  }
}
