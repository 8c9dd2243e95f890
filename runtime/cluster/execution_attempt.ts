/**
 * One execution attempt of a job, as the coordinator sees it (the state
 * Flink keeps per attempt number in its `Execution`s and
 * `ExecutionGraph`): which subtasks reported ready, end of input and
 * finished, and the final checkpoint it triggered. Failover throws the
 * object away and starts the next attempt with a fresh one, so nothing of a
 * failed attempt leaks into the next.
 *
 * Subtasks are keyed `vertexId#subtask`. Plain bookkeeping, no I/O.
 *
 * @module
 */

/** The subtask counts an attempt waits for. */
export interface ExecutionAttemptShape {
  /** The attempt number (0 for the first; messages carry it as `att`). */
  readonly number: number;
  /** Subtasks of the job, a non-negative integer. */
  readonly subtasks: number;
  /** Source subtasks of the job, a non-negative integer. */
  readonly sourceSubtasks: number;
}

/** One attempt's progress; see the module docs. */
export class ExecutionAttempt {
  /** The attempt number. */
  readonly number: number;
  readonly #subtasks: number;
  readonly #sourceSubtasks: number;
  readonly #ready = new Set<string>();
  readonly #sourcesEnded = new Set<string>();
  readonly #finished = new Set<string>();
  /** The final checkpoint (FLIP-147) once every source ended, if it was triggered. */
  finalCheckpointId: number | undefined;

  /** An attempt no subtask reported on yet. */
  constructor(shape: ExecutionAttemptShape) {
    this.number = shape.number;
    this.#subtasks = shape.subtasks;
    this.#sourceSubtasks = shape.sourceSubtasks;
  }

  /** The next attempt of the same job, with nothing reported. */
  next(): ExecutionAttempt {
    return new ExecutionAttempt({
      number: this.number + 1,
      subtasks: this.#subtasks,
      sourceSubtasks: this.#sourceSubtasks,
    });
  }

  /** Subtasks that reported ready. */
  get readyCount(): number {
    return this.#ready.size;
  }

  /** Records that subtask `key` is ready; true when every subtask is. */
  markReady(key: string): boolean {
    this.#ready.add(key);
    return this.#ready.size === this.#subtasks;
  }

  /** Records that source subtask `key` reached end of input; true when every source did. */
  markSourceEnded(key: string): boolean {
    this.#sourcesEnded.add(key);
    return this.#sourcesEnded.size === this.#sourceSubtasks;
  }

  /** Records that subtask `key` finished; true when every subtask did. */
  markFinished(key: string): boolean {
    this.#finished.add(key);
    return this.#finished.size === this.#subtasks;
  }
}
