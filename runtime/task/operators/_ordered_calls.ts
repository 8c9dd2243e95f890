/**
 * Runs a sink's calls in order on the mailbox loop: synchronous calls stay
 * synchronous (no promise, no closure) while nothing asynchronous is
 * pending; once a call returns a promise, later calls queue behind it. The
 * first failure is kept and rethrown by {@linkcode OrderedCalls.quiesce};
 * calls after it are skipped (the attempt is failing anyway). Internal to the
 * sink operators.
 *
 * @module
 */

/** Runs calls in order; synchronous calls stay synchronous while nothing is pending. */
export class OrderedCalls {
  #tail: Promise<void> | undefined;
  #error: unknown;
  #failed = false;

  /** True while an asynchronous call is pending (or failed): new calls must queue behind it. */
  get busy(): boolean {
    return this.#tail !== undefined || this.#failed;
  }

  /** Runs `call` now when nothing is pending, else after the pending calls. */
  run(call: () => void | Promise<void>): void {
    if (this.#failed) return;
    if (this.#tail) {
      this.#tail = this.#tail.then(call).catch(this.#fail);
      return;
    }
    this.settle(call());
  }

  /** Takes the result of a call made directly while not {@linkcode OrderedCalls.busy}. */
  settle(result: void | Promise<void>): void {
    if (result && typeof (result as Promise<void>).then === "function") {
      this.#tail = (result as Promise<void>).catch(this.#fail);
    }
  }

  #fail = (error: unknown): void => {
    if (!this.#failed) {
      this.#failed = true;
      this.#error = error;
    }
  };

  /** Resolves when every queued call is done; rejects with the first failure. */
  async quiesce(): Promise<void> {
    while (this.#tail) {
      const tail = this.#tail;
      await tail;
      if (this.#tail === tail) this.#tail = undefined;
    }
    if (this.#failed) throw this.#error;
  }
}
