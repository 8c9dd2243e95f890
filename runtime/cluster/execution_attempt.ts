/**
 * One execution attempt of a job, as the coordinator sees it (the state
 * Flink keeps per attempt number in its `Execution`s and
 * `ExecutionGraph`): which subtasks reported ready, end of input and
 * finished, and the final checkpoint it triggered. A full failover throws
 * the object away and starts the next attempt with a fresh one, so nothing
 * of a failed attempt leaks into the next; a region failover starts the next
 * one with what the subtasks outside the region reported
 * (`afterRegionRestart`), since those keep running.
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
  /** The attempt of subtasks a region failover renumbered (others run as `#base`). */
  readonly #renumbered = new Map<string, number>();
  /** Subtasks of a region being restarted: no attempt of theirs is current. */
  readonly #fenced = new Set<string>();
  /** The attempt every subtask not renumbered runs as (this attempt's number unless a region failover made it). */
  #base: number;
  /** The final checkpoint (FLIP-147) once every source ended, if it was triggered. */
  finalCheckpointId: number | undefined;

  /** An attempt no subtask reported on yet. */
  constructor(shape: ExecutionAttemptShape) {
    this.number = shape.number;
    this.#base = shape.number;
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

  /**
   * The attempt after a region failover (Flink's
   * `RestartPipelinedRegionFailoverStrategy`): numbered `number`, keeping
   * what the subtasks outside `region` reported (they keep running) and
   * forgetting what the region's subtasks did (they are redeployed). A
   * final checkpoint it had triggered was aborted by the failover: it is
   * forgotten too, and triggered again once every source ended again.
   * @throws {RangeError} when `number` is not above this attempt's.
   */
  afterRegionRestart(number: number, region: ReadonlySet<string>): ExecutionAttempt {
    if (!Number.isInteger(number) || number <= this.number) {
      throw new RangeError(
        `ExecutionAttempt.afterRegionRestart: the attempt number must be an integer above ` +
          `${this.number}: current value is ${number}`,
      );
    }
    const next = new ExecutionAttempt({
      number,
      subtasks: this.#subtasks,
      sourceSubtasks: this.#sourceSubtasks,
    });
    next.#base = this.#base;
    for (const [key, att] of this.#renumbered) if (!region.has(key)) next.#renumbered.set(key, att);
    for (const key of region) next.#renumbered.set(key, number);
    const keep = (from: Set<string>, to: Set<string>) => {
      for (const key of from) if (!region.has(key)) to.add(key);
    };
    keep(this.#ready, next.#ready);
    keep(this.#sourcesEnded, next.#sourcesEnded);
    keep(this.#finished, next.#finished);
    return next;
  }

  /**
   * The attempt subtask `key` (`vertexId#subtask`) runs as: this attempt's
   * number, or an earlier one for a subtask a region failover left running;
   * `undefined` while its region is fenced (being restarted). A message of
   * the subtask is current iff it carries this number.
   */
  attemptOf(key: string): number | undefined {
    if (this.#fenced.has(key)) return undefined;
    return this.#renumbered.get(key) ?? this.#base;
  }

  /**
   * The attempt of each of `tasks` when they differ (a region failover
   * happened), for a checkpoint's plan; `undefined` when all run as this
   * attempt's number.
   */
  taskAttempts(tasks: Iterable<string>): ReadonlyMap<string, number> | undefined {
    if (this.#base === this.number && this.#renumbered.size === 0) return undefined;
    const out = new Map<string, number>();
    for (const key of tasks) {
      const att = this.attemptOf(key);
      if (att !== undefined) out.set(key, att);
    }
    return out;
  }

  /**
   * A region failover begins: the region's subtasks (`vertexId#subtask`
   * keys) have no current attempt until {@linkcode afterRegionRestart}, so
   * everything they still send is dropped.
   */
  fence(region: Iterable<string>): void {
    for (const key of region) this.#fenced.add(key);
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
