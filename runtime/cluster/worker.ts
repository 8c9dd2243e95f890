/**
 * The worker (Flink's TaskManager role): receives deployments from job
 * coordinators and runs each subtask as a {@linkcode StreamTask} actor. A
 * subtask that fails is reported to its coordinator; it never takes the
 * worker down. Cancelling an attempt cancels every subtask of that job from
 * that attempt or earlier (only the listed ones, for a region failover's
 * `cancel-attempt` with `subtasks`); once all of them have ended (run settled,
 * operators closed: an in-flight snapshot or sink prepare finished), the
 * worker answers its coordinator with `attempt-cancelled`, which the
 * coordinator waits for before deploying the next attempt (Flink's
 * RESTARTING state waits for every execution to be CANCELED).
 *
 * @module
 */

import type { Subscription, Transport } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { Clock } from "../time/clock.ts";
import {
  type CoordinatorMessage,
  coordinatorSubject,
  errorInfo,
  type MessageBody,
  type WorkerMessage,
  workerSubject,
} from "../task/messages.ts";
import { type FaultInjector, StreamTask, type TaskConfig } from "../task/stream_task.ts";
import type { LocalStateStore } from "../task/local_state_store.ts";
import { computeKeyGroupRangeForOperatorIndex } from "../state/key_group.ts";
import { logger } from "../log.ts";

const log = logger("worker");

/** What a worker needs to run a job's subtasks. */
export interface JobRuntime {
  readonly graph: JobGraph;
  readonly storage: CheckpointStorage;
  readonly config: TaskConfig;
  readonly clock: Clock;
  readonly faults?: FaultInjector | undefined;
}

/** Options of {@linkcode Worker}. */
export interface WorkerOptions {
  readonly transport: Transport;
  /** `[A-Za-z0-9_-]+`. */
  readonly workerId: string;
  /** Finds the runtime of a job (local mode: a registry; cluster mode: the job module). */
  readonly resolveJob: (jobId: string) => JobRuntime | Promise<JobRuntime>;
  /**
   * Local recovery (Flink's `state.backend.local-recovery`): the worker's
   * local copies of its subtasks' snapshots, which a subtask restoring on
   * this worker reads first (`../task/local_state_store.ts`). Absent: off.
   */
  readonly localState?: LocalStateStore | undefined;
}

/** Runs subtasks for coordinators. */
export class Worker {
  readonly #o: WorkerOptions;
  readonly #tasks = new Map<
    string,
    {
      task: StreamTask;
      attempt: number;
      job: string;
      vertex: string;
      subtask: number;
      cancelled: boolean;
      ended: Promise<void>;
    }
  >();
  #subscription: Subscription | undefined;

  constructor(options: WorkerOptions) {
    this.#o = options;
  }

  /** Number of subtasks running. */
  get runningTasks(): number {
    return this.#tasks.size;
  }

  /** Starts listening for deployments on the worker's subject. */
  start(): void {
    this.#subscription = this.#o.transport.subscribe(workerSubject(this.#o.workerId), (m) => {
      let msg: WorkerMessage;
      try {
        msg = decode(m.data) as WorkerMessage;
      } catch (error) {
        log.warn(`worker ${this.#o.workerId}: dropping an undecodable message: ${error}`);
        return;
      }
      this.deliver(msg);
    });
  }

  /**
   * Handles one message from a coordinator (what `start()` does for each
   * message on the worker's subject). Cluster mode's worker process uses it to
   * hand a slot thread the messages it received for that slot.
   */
  deliver(msg: WorkerMessage): void {
    this.#onMessage(msg).catch((error) =>
      log.error(`worker ${this.#o.workerId}: ${error instanceof Error ? error.stack : error}`)
    );
  }

  async #onMessage(msg: WorkerMessage): Promise<void> {
    if (msg.t === "cancel-attempt" || msg.t === "release") {
      const ending: Promise<void>[] = [];
      for (const entry of this.#tasks.values()) {
        const fenced = msg.t === "release" || entry.attempt <= msg.att;
        if (entry.job !== msg.job || !fenced) continue;
        // A region failover cancels only the region's subtasks.
        const only = msg.t === "cancel-attempt" ? msg.subtasks : undefined;
        if (only !== undefined && !only.includes(`${entry.vertex}#${entry.subtask}`)) continue;
        ending.push(entry.ended);
        if (!entry.cancelled) {
          entry.cancelled = true;
          entry.task.cancel();
        }
      }
      if (msg.t === "cancel-attempt") {
        await Promise.all(ending);
        const done: CoordinatorMessage = {
          t: "attempt-cancelled",
          worker: this.#o.workerId,
          job: msg.job,
          att: msg.att,
        };
        this.#o.transport.publish(coordinatorSubject(msg.job), encode(done));
      }
      return;
    }
    const report = (body: MessageBody<Extract<CoordinatorMessage, { t: "failed" }>>) => {
      const full: CoordinatorMessage = { ...body, job: msg.job, att: msg.att };
      this.#o.transport.publish(coordinatorSubject(msg.job), encode(full));
    };
    let runtime: JobRuntime;
    try {
      runtime = await this.#o.resolveJob(msg.job);
    } catch (error) {
      report({ t: "failed", vertex: msg.vertex, subtask: msg.subtask, error: errorInfo(error) });
      return;
    }
    const vertex = runtime.graph.vertices.find((v) => v.id === msg.vertex);
    if (!vertex) {
      report({
        t: "failed",
        vertex: msg.vertex,
        subtask: msg.subtask,
        error: errorInfo(new Error(`Job ${msg.job} has no vertex ${msg.vertex}`)),
      });
      return;
    }
    const range = computeKeyGroupRangeForOperatorIndex(
      vertex.maxParallelism,
      vertex.parallelism,
      msg.subtask,
    );
    const localState = this.#o.localState?.forSubtask({
      jobId: msg.job,
      vertexId: vertex.id,
      subtask: msg.subtask,
      keyGroupRange: [range.startKeyGroup, range.endKeyGroup],
    });
    const task = new StreamTask({
      transport: this.#o.transport,
      jobId: msg.job,
      attempt: msg.att,
      graph: runtime.graph,
      vertex,
      subtask: msg.subtask,
      config: runtime.config,
      storage: runtime.storage,
      restore: msg.restore,
      localState,
      clock: runtime.clock,
      faults: runtime.faults,
    });
    const key = `${msg.job}/${msg.att}/${msg.vertex}/${msg.subtask}`;
    let ended!: () => void;
    const entry = {
      task,
      attempt: msg.att,
      job: msg.job,
      vertex: msg.vertex,
      subtask: msg.subtask,
      cancelled: false,
      ended: new Promise<void>((resolve) => ended = resolve),
    };
    this.#tasks.set(key, entry);
    try {
      await task.run();
    } catch (error) {
      if (!entry.cancelled) {
        log.debug(`${task.name} failed: ${error instanceof Error ? error.message : error}`);
        report({ t: "failed", vertex: msg.vertex, subtask: msg.subtask, error: errorInfo(error) });
      }
    } finally {
      this.#tasks.delete(key);
      ended();
    }
  }

  /**
   * Fails every running subtask with `error`: each is cancelled and reported
   * to its coordinator as failed. Cluster mode calls it when the NATS
   * connection was lost and re-established, since core NATS may have dropped
   * messages meanwhile (a lost credit or acknowledgement would otherwise
   * stall the attempt until a checkpoint times out).
   */
  failAll(error: Error): void {
    for (const entry of this.#tasks.values()) {
      if (entry.cancelled) continue;
      entry.cancelled = true;
      entry.task.cancel();
      const msg: CoordinatorMessage = {
        t: "failed",
        job: entry.job,
        att: entry.attempt,
        vertex: entry.vertex,
        subtask: entry.subtask,
        error: errorInfo(error),
      };
      try {
        this.#o.transport.publish(coordinatorSubject(entry.job), encode(msg));
      } catch (e) {
        log.warn(`worker ${this.#o.workerId}: cannot report a failure: ${e}`);
      }
    }
  }

  /** Cancels every subtask and stops listening. */
  close(): void {
    this.#subscription?.unsubscribe();
    for (const entry of this.#tasks.values()) {
      entry.cancelled = true;
      entry.task.cancel();
    }
  }
}
