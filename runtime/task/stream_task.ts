/**
 * StreamTask: one subtask of one vertex, an actor with a single-threaded
 * mailbox loop (Flink's mailbox model, FLIP-27/FLINK-12477).
 *
 * ## The loop
 *
 * Control mail (start, checkpoint trigger, completion/abort notifications,
 * processing-time timers, finish, cancel) is always handled first. Otherwise
 * the default action runs: a source polls its reader; any other task
 * consumes the next buffer or event from its input gate. The default action
 * only runs while every record writer has credit (backpressure). User code
 * thus never runs concurrently with itself, and needs no locks.
 *
 * ## Checkpoints
 *
 * A source subtask takes checkpoint *n* when the coordinator's trigger mail
 * arrives. Any other subtask takes it when barrier *n* has arrived on all its
 * channels: aligned in exactly-once mode (channels that delivered it wait,
 * see `barrier_handler.ts`), counted without blocking anything in
 * at-least-once mode (`barrier_tracker.ts`). Taking it means: forward
 * barrier *n* on every output, capture every operator's state synchronously
 * (this is where two-phase-commit sinks pre-commit), then write the state to
 * checkpoint storage asynchronously while processing continues, and
 * acknowledge with the state handles, sizes and durations
 * (`async_checkpoint.ts`).
 *
 * ## Network input
 *
 * What arrives on the subtask's subject is decoded by `network_input.ts`
 * (buffers once, on arrival; in-thread buffers taken as they are), fenced
 * by attempt, and queued in the input gate, which checks sequence numbers.
 *
 * ## Event time
 *
 * Watermarks and watermark status (idle / active) arrive in-band on the
 * input channels; a `StatusWatermarkValve` combines them and the head
 * operator gets the combined watermark and status changes. A source subtask
 * emits watermarks from its operator's periodic processing-time wake-ups
 * (`requestWakeup`). No wake-up is handled before `start`: until then a
 * consumer may not listen yet, so a wake-up due earlier waits for it.
 *
 * ## End of input (FLIP-147)
 *
 * When a bounded source ends it emits the final watermark and end of data,
 * and reports to the coordinator. A task whose channels all delivered end of
 * data calls `endInput` on its operators and forwards end of data. Tasks keep
 * running so that the coordinator's final checkpoint can flow through; they
 * close when the coordinator sends `finish` after that checkpoint completed.
 *
 * @module
 */

import {
  type Subscription,
  type Transport,
  TransportClosedError,
  type TransportMessage,
} from "../actor/types.ts";
import { encode } from "../actor/codec.ts";
import { decodeInbound, type InboundMessage } from "./network_input.ts";
import { Signal, yieldToEventLoop } from "../actor/async.ts";
import type { JobGraph, JobVertex } from "../graph/job_graph.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import { computeKeyGroupRangeForOperatorIndex, type KeyGroupRange } from "../state/key_group.ts";
import { readSubtaskRestore } from "./subtask_state.ts";
import { AsyncCheckpoints } from "./async_checkpoint.ts";
import type { Clock } from "../time/clock.ts";
import type { CheckpointingMode } from "../api/sink_v2.ts";
import { SuppressRestartsError } from "../failure.ts";
import {
  AlignedBarrierHandler,
  type BarrierAction,
  type CheckpointBarrierHandler,
} from "./barrier_handler.ts";
import { CheckpointBarrierTracker } from "./barrier_tracker.ts";
import { type InputChannel, InputGate } from "./input_gate.ts";
import { RecordWriter } from "./record_writer.ts";
import { StatusWatermarkValve, type ValveAction } from "../time/status_watermark_valve.ts";
import { OperatorChain } from "./operator_chain.ts";
import type { OperatorRestore, OperatorSnapshot, StreamOperator } from "./operators/operator.ts";
import type { SourceOperator } from "./operators/source_operator.ts";
import {
  type ChannelEvent,
  type CoordinatorMessage,
  coordinatorSubject,
  type MessageBody,
  type RestorePoint,
  type SubtaskMetrics,
  type TaskControlMessage,
  taskSubject,
} from "./messages.ts";

/** Tuning of the data plane and of time. */
export interface TaskConfig {
  /** Records per network buffer. */
  readonly bufferSize: number;
  /** Longest a partially filled buffer waits while the task is busy, in ms. */
  readonly bufferTimeoutMs: number;
  /** Buffers in flight per channel (credits granted at start). */
  readonly initialCredits: number;
  /** Period of source watermark generation, in ms. */
  readonly autoWatermarkIntervalMs: number;
  /**
   * The job's checkpointing mode (`"none"` when checkpointing is off). It
   * picks the barrier handler (aligned for exactly-once and none, a tracker
   * without alignment for at-least-once) and reaches every operator as
   * `OperatorEnvironment.checkpointingMode`.
   */
  readonly checkpointingMode: CheckpointingMode | "none";
  /**
   * Whether a network edge whose consumer shares the producer's thread hands
   * records over as they are (default `true`; Flink's `enableObjectReuse`):
   * records must then not be changed after `collect`. `false` encodes every
   * buffer, as a cross-thread edge does (see `record_writer.ts`).
   */
  readonly objectReuse?: boolean;
}

/** Where a fault can be injected in tests (chaos hooks; no effect unless an injector is set). */
export type FaultPoint =
  | "before-snapshot"
  | "after-snapshot"
  | "alignment"
  | "before-commit";

/** Where a fault point was reached. */
export interface FaultSite {
  /** Vertex id (`v<n>`). */
  readonly vertexId: string;
  /** Vertex name (its chained operators). */
  readonly vertexName: string;
  /** Subtask index. */
  readonly subtask: number;
  /** Execution attempt. */
  readonly attempt: number;
  /** The checkpoint concerned (0 when none). */
  readonly checkpointId: number;
}

/** A test hook called at each {@linkcode FaultPoint}; it fails the subtask by throwing. */
export type FaultInjector = (point: FaultPoint, site: FaultSite) => void;

/** A subtask failed; the message names job, vertex, subtask and attempt. */
export class TaskFailedError extends Error {
  /** The error class name. */
  override name = "TaskFailedError";
}

/** Options of {@linkcode StreamTask}. */
export interface StreamTaskOptions {
  readonly transport: Transport;
  readonly jobId: string;
  readonly attempt: number;
  readonly graph: JobGraph;
  readonly vertex: JobVertex;
  readonly subtask: number;
  readonly config: TaskConfig;
  readonly storage: CheckpointStorage;
  /** Checkpoint to restore from, or `null` for a fresh start. */
  readonly restore: RestorePoint | null;
  readonly clock: Clock;
  readonly faults?: FaultInjector | undefined;
}

type Mail = TaskControlMessage | { readonly t: "timer" };

/** One running subtask. */
export class StreamTask {
  readonly #o: StreamTaskOptions;
  readonly #name: string;
  readonly #signal = new Signal();
  readonly #mails: Mail[] = [];
  readonly #writers = new Map<number, RecordWriter>();
  readonly #writerList: RecordWriter[] = [];
  readonly #keyGroupRange: KeyGroupRange;
  readonly #gate: InputGate;
  readonly #barriers: CheckpointBarrierHandler;
  readonly #barrierTimestamps = new Map<number, number>();
  readonly #asyncCheckpoints: AsyncCheckpoints;
  #chain: OperatorChain | undefined;
  #subscription: Subscription | undefined;
  #started = false;
  #done = false;
  #failure: unknown;
  #failed = false;
  #inputEnded = false;
  #sourceReady = false;
  #sourceWaiting = false;
  /** Combines the input channels' watermarks and statuses (none for a source). */
  readonly #valve: StatusWatermarkValve | undefined;
  #wakeAt: number | undefined;
  /** A processing-time wake-up came before `start`; it is handled at start. */
  #timerBeforeStart = false;
  #cancelWake: (() => void) | undefined;
  #alignmentFaultFor = 0;
  /** Records consumed from the input gate. */
  recordsIn = 0;
  /** Time spent unable to emit for lack of credit, in ms. */
  backPressuredMs = 0;
  readonly #startedAt = performance.now();
  /** Messages of other attempts dropped by fencing. */
  fencedMessages = 0;

  constructor(options: StreamTaskOptions) {
    this.#o = options;
    const { vertex, subtask, attempt } = options;
    this.#name = `${vertex.name} (${
      subtask + 1
    }/${vertex.parallelism}) [${vertex.id}#${subtask}, attempt ${attempt}]`;
    this.#keyGroupRange = computeKeyGroupRangeForOperatorIndex(
      vertex.maxParallelism,
      vertex.parallelism,
      subtask,
    );
    this.#gate = new InputGate({
      jobId: options.jobId,
      attempt,
      graph: options.graph,
      vertex: vertex.index,
      subtask,
      transport: options.transport,
      initialCredits: options.config.initialCredits,
    });
    // Flink's InputProcessorUtil: at-least-once tracks barriers without
    // alignment; exactly-once (and no checkpointing, for savepoints) aligns.
    const channels = Math.max(1, this.#gate.size);
    this.#barriers = options.config.checkpointingMode === "at-least-once"
      ? new CheckpointBarrierTracker(channels)
      : new AlignedBarrierHandler(channels);
    this.#valve = this.#gate.size > 0 ? new StatusWatermarkValve(this.#gate.size) : undefined;
    this.#asyncCheckpoints = new AsyncCheckpoints({
      jobId: options.jobId,
      attempt,
      vertexId: vertex.id,
      subtask,
      keyGroupRange: this.#keyGroupRange,
      storage: options.storage,
      taskName: this.#name,
      report: (body) => this.#report(body),
      isDone: () => this.#done,
    });
  }

  /** `<vertex name> (<i>/<n>) [<vertexId>#<subtask>, attempt <a>]`. */
  get name(): string {
    return this.#name;
  }

  /**
   * Runs the subtask until it finishes (after the job's final checkpoint) or
   * is cancelled.
   * @throws {TaskFailedError} when user code, the data plane or a checkpoint's
   *   synchronous part fails; the cause is attached.
   */
  async run(): Promise<void> {
    const o = this.#o;
    this.#subscription = o.transport.subscribe(
      taskSubject(o.jobId, o.attempt, o.vertex.id, o.subtask),
      (m) => this.#onMessage(m),
    );
    try {
      await this.#setUp();
      this.#report({ t: "ready", vertex: o.vertex.id, subtask: o.subtask });
      await this.#loop();
    } catch (error) {
      this.#done = true;
      await this.#closeOperators().catch(() => {});
      if (error instanceof TaskFailedError) throw error;
      let message = error instanceof Error ? error.message : String(error);
      if (error instanceof TypeError && /private member/.test(message)) {
        message += " (function objects are copied per subtask, and ECMAScript #private fields " +
          "cannot be copied: use TypeScript `private` fields in function classes)";
      }
      throw new TaskFailedError(`Subtask ${this.#name} of job ${o.jobId} failed: ${message}`, {
        cause: error,
      });
    } finally {
      this.#done = true;
      this.#subscription.unsubscribe();
      this.#cancelWake?.();
    }
  }

  /** Asks the subtask to stop without finishing (its open transactions are aborted). */
  cancel(): void {
    // Stop receiving at once, even if the mailbox loop is stuck in user code
    // (JavaScript cannot interrupt it, unlike Flink's task thread): the
    // subtask then neither consumes data nor answers triggers, and whatever
    // it sends later carries an old attempt number and is fenced off.
    this.#subscription?.unsubscribe();
    this.#cancelWake?.();
    this.#mails.push({ t: "cancel", job: this.#o.jobId, att: this.#o.attempt });
    this.#signal.notify();
  }

  #onMessage(m: TransportMessage): void {
    if (this.#done) return;
    let msg: InboundMessage;
    try {
      msg = decodeInbound(m);
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (msg.job !== this.#o.jobId || msg.att !== this.#o.attempt) {
      this.fencedMessages++;
      return;
    }
    switch (msg.t) {
      case "buf":
      case "evt":
        if (!this.#gate.receive(msg)) this.#fail(this.#gate.error);
        break;
      case "credit":
        try {
          this.#writers.get(msg.edge)?.addCredit(msg.dst, msg.n);
        } catch (error) {
          this.#fail(error); // e.g. the transport refused a buffer: fail here, never skip it
        }
        break;
      default:
        this.#mails.push(msg);
    }
    this.#signal.notify();
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#failure = error ??
      new Error(`Subtask ${this.#name} failed with ${String(error)} as its error`);
    this.#signal.notify();
  }

  #report(body: MessageBody<CoordinatorMessage>): void {
    const o = this.#o;
    const msg = { ...body, job: o.jobId, att: o.attempt } as CoordinatorMessage;
    try {
      o.transport.publish(coordinatorSubject(o.jobId), encode(msg));
    } catch (error) {
      // The job is gone (its transport closed) while this subtask of a
      // cancelled attempt was still finishing work: nobody is listening.
      if (error instanceof TransportClosedError) return;
      throw error;
    }
  }

  async #setUp(): Promise<void> {
    const o = this.#o;
    for (const edgeIndex of o.vertex.outputs) {
      const edge = o.graph.edges[edgeIndex]!;
      const consumer = o.graph.vertices[edge.target]!;
      const writer = new RecordWriter({
        jobId: o.jobId,
        attempt: o.attempt,
        edge,
        producerIndex: o.subtask,
        producerParallelism: o.vertex.parallelism,
        consumerVertexId: consumer.id,
        consumerParallelism: consumer.parallelism,
        consumerMaxParallelism: consumer.maxParallelism,
        transport: o.transport,
        bufferSize: o.config.bufferSize,
        objectReuse: o.config.objectReuse ?? true,
        now: () => performance.now(),
      });
      this.#writers.set(edgeIndex, writer);
      this.#writerList.push(writer);
    }
    this.#chain = new OperatorChain({
      graph: o.graph,
      vertex: o.vertex,
      writers: this.#writers,
      autoWatermarkIntervalMs: o.config.autoWatermarkIntervalMs,
      env: {
        jobId: o.jobId,
        jobName: o.graph.name,
        vertexId: o.vertex.id,
        subtaskIndex: o.subtask,
        parallelism: o.vertex.parallelism,
        maxParallelism: o.vertex.maxParallelism,
        keyGroupRange: this.#keyGroupRange,
        attempt: o.attempt,
        clock: o.clock,
        checkpointingMode: o.config.checkpointingMode,
        requestWakeup: (t) => this.#requestWakeup(t),
      },
    });
    const restores = o.restore === null
      ? new Map<string, OperatorRestore>()
      : await this.#loadRestore(o.restore);
    for (const op of this.#chain.operators) await op.initializeState(restores.get(op.uid));
    for (const op of this.#chain.operators) await op.open();
  }

  /** Reads this subtask's share of checkpoint `checkpointId`, per operator uid. */
  /**
   * Reads this subtask's share of a checkpoint, per operator uid. A missing,
   * unreadable or inconsistent checkpoint fails the job without restarts
   * (`SuppressRestartsError`): restarting cannot repair it.
   */
  async #loadRestore(point: RestorePoint): Promise<Map<string, OperatorRestore>> {
    try {
      return await readSubtaskRestore({
        storage: this.#o.storage,
        point,
        vertex: this.#o.vertex,
        subtask: this.#o.subtask,
        keyGroupRange: this.#keyGroupRange,
      });
    } catch (error) {
      throw new SuppressRestartsError(
        `Cannot restore ${this.#name} from checkpoint ${point.checkpointId} of job ${point.jobId}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  }

  async #loop(): Promise<void> {
    const chain = this.#chain!;
    const source = this.#o.vertex.isSource ? chain.head as SourceOperator : undefined;
    let sliceStart = performance.now();
    for (;;) {
      if (this.#failed) throw this.#failure;
      const mail = this.#mails.shift();
      if (mail) {
        await this.#handleMail(mail);
        if (this.#done) return;
        continue;
      }
      if (!this.#started) {
        await this.#signal.wait();
        continue;
      }
      if (!this.#writersAvailable()) {
        const t0 = performance.now();
        await this.#signal.wait();
        this.backPressuredMs += performance.now() - t0;
        sliceStart = performance.now();
        continue;
      }
      const progressed = source ? await this.#pollSource(source) : await this.#processInput();
      if (!progressed) {
        for (const w of this.#writerList) w.flush();
        await this.#signal.wait();
        sliceStart = performance.now();
        continue;
      }
      const now = performance.now();
      if (now - sliceStart > 5) {
        for (const w of this.#writerList) w.flushOlderThan(now, this.#o.config.bufferTimeoutMs);
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
    }
  }

  #writersAvailable(): boolean {
    for (const w of this.#writerList) if (!w.isAvailable) return false;
    return true;
  }

  async #pollSource(source: SourceOperator): Promise<boolean> {
    if (this.#inputEnded || !this.#sourceReady) return false;
    const status = await source.poll();
    if (status === "END_OF_INPUT") {
      await this.#endInput();
      this.#report({ t: "eoi", vertex: this.#o.vertex.id, subtask: this.#o.subtask });
      return false;
    }
    if (status === "NOTHING_AVAILABLE") {
      this.#sourceReady = false;
      if (!this.#sourceWaiting) {
        this.#sourceWaiting = true;
        source.isAvailable().then(() => {
          this.#sourceWaiting = false;
          this.#sourceReady = true;
          this.#signal.notify();
        }, (error) => this.#fail(error));
      }
      return false;
    }
    await this.#quiesce();
    return true;
  }

  async #processInput(): Promise<boolean> {
    const item = this.#gate.poll();
    if (!item) return false;
    const { channel, message } = item;
    if (message.t === "buf") {
      const head = this.#chain!.head;
      // #onMessage queues buffers decoded (or as handed over in-thread).
      const { v: values, ts, kg } = message;
      const n = values.length;
      // A producer's key groups are those of the edge's key selector; they
      // are the head's only when it keys by that same selector.
      if (kg && channel.edge.keySelector === this.#o.vertex.operators[0]!.keySelector) {
        for (let i = 0; i < n; i++) {
          head.processElement(values[i], ts ? ts[i] ?? undefined : undefined, kg[i]);
        }
      } else if (ts) {
        for (let i = 0; i < n; i++) head.processElement(values[i], ts[i] ?? undefined);
      } else {
        for (let i = 0; i < n; i++) head.processElement(values[i], undefined);
      }
      this.recordsIn += n;
      await this.#quiesce();
      this.#gate.consumed(channel);
    } else {
      await this.#handleEvent(channel, message.e);
    }
    return true;
  }

  async #quiesce(): Promise<void> {
    for (const op of this.#chain!.operators) await op.quiesce();
  }

  async #handleEvent(channel: InputChannel, event: ChannelEvent): Promise<void> {
    switch (event.k) {
      case "barrier":
        this.#barrierTimestamps.set(event.id, event.ts);
        await this.#runBarrierActions(
          this.#barriers.onBarrier(channel.index, event.id, performance.now()),
        );
        return;
      case "wm":
        this.#runValveActions(this.#valve!.inputWatermark(channel.index, event.wm));
        return;
      case "status":
        this.#runValveActions(this.#valve!.inputWatermarkStatus(channel.index, event.s));
        return;
      case "eod":
        channel.endOfData = true;
        this.#runValveActions(this.#valve!.endOfData(channel.index));
        if (this.#gate.allEndOfData) await this.#endInput();
        return;
    }
  }

  /** Hands what the valve decided to the head operator, in order. */
  #runValveActions(actions: readonly ValveAction[]): void {
    const head = this.#chain!.head;
    for (const action of actions) {
      if (action.kind === "watermark") head.processWatermark(action.watermark);
      else head.processWatermarkStatus?.(action.status);
    }
  }

  async #runBarrierActions(actions: BarrierAction[]): Promise<void> {
    const o = this.#o;
    for (const action of actions) {
      switch (action.kind) {
        case "block": {
          this.#gate.channels[action.channel]!.blocked = true;
          const id = this.#barriers.pendingCheckpointId ?? 0;
          if (o.faults && this.#alignmentFaultFor !== id) {
            this.#alignmentFaultFor = id;
            o.faults("alignment", this.#site(id));
          }
          break;
        }
        case "unblockAll":
          this.#gate.unblockAll();
          break;
        case "triggerCheckpoint": {
          const ts = this.#barrierTimestamps.get(action.checkpointId) ?? Date.now();
          for (const id of this.#barrierTimestamps.keys()) {
            if (id <= action.checkpointId) this.#barrierTimestamps.delete(id);
          }
          await this.#performCheckpoint(action.checkpointId, ts, action.alignmentDurationMs);
          break;
        }
        case "abort":
          if (action.decline) {
            this.#report({
              t: "decline",
              vertex: o.vertex.id,
              subtask: o.subtask,
              id: action.checkpointId,
              code: action.reason.code,
              reason: action.reason.message,
            });
          }
          break;
      }
    }
  }

  #site(checkpointId: number) {
    const o = this.#o;
    return {
      vertexId: o.vertex.id,
      vertexName: o.vertex.name,
      subtask: o.subtask,
      attempt: o.attempt,
      checkpointId,
    };
  }

  async #performCheckpoint(
    checkpointId: number,
    timestamp: number,
    alignmentMs: number,
  ): Promise<void> {
    const o = this.#o;
    o.faults?.("before-snapshot", this.#site(checkpointId));
    const t0 = performance.now();
    await this.#quiesce();
    // Forward the barrier first (Flink's order): downstream can start aligning
    // while this subtask captures its state. No record is emitted in between.
    for (const w of this.#writerList) {
      w.broadcastEvent({ k: "barrier", id: checkpointId, ts: timestamp });
    }
    const snapshots: Record<string, OperatorSnapshot> = {};
    for (const op of this.#chain!.operators) {
      snapshots[op.uid] = await op.snapshotState(checkpointId, timestamp);
    }
    const syncMs = performance.now() - t0;
    o.faults?.("after-snapshot", this.#site(checkpointId));
    this.#asyncCheckpoints.start(checkpointId, snapshots, syncMs, alignmentMs);
  }

  async #endInput(): Promise<void> {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    for (const op of this.#chain!.operators) {
      await op.endInput();
      await op.quiesce();
    }
    for (const w of this.#writerList) w.broadcastEvent({ k: "eod" });
  }

  async #handleMail(mail: Mail): Promise<void> {
    const o = this.#o;
    const ops = this.#chain!.operators;
    switch (mail.t) {
      case "start":
        if (this.#started) return;
        this.#started = true;
        this.#sourceReady = true;
        this.#gate.grantInitialCredits();
        if (this.#timerBeforeStart) this.#mails.push({ t: "timer" });
        return;
      case "trigger":
        if (o.vertex.isSource) await this.#performCheckpoint(mail.id, mail.ts, 0);
        return;
      case "stop-source":
        // Stop-with-savepoint: drain ends the input (MAX_WATERMARK, end of
        // data); otherwise the source only stops polling. Then end of input.
        if (!o.vertex.isSource || this.#inputEnded) return;
        if (mail.drain) await this.#endInput();
        else this.#inputEnded = true;
        this.#report({ t: "eoi", vertex: o.vertex.id, subtask: o.subtask });
        return;
      case "complete":
        this.#asyncCheckpoints.completed(mail.id);
        o.faults?.("before-commit", this.#site(mail.id));
        for (const op of ops) await op.notifyCheckpointComplete(mail.id);
        return;
      case "abort":
        this.#asyncCheckpoints.abort(mail.id);
        await this.#runBarrierActions(this.#barriers.onAbort(mail.id));
        for (const op of ops) await op.notifyCheckpointAborted(mail.id);
        return;
      case "timer": {
        // Nothing may be emitted before start (consumers may not listen yet):
        // a wake-up due earlier (a restored timer, a periodic watermark) waits.
        if (!this.#started) {
          this.#timerBeforeStart = true;
          return;
        }
        const now = o.clock.now();
        for (const op of ops) op.onProcessingTime(now);
        await this.#quiesce();
        return;
      }
      case "finish":
        await this.#asyncCheckpoints.waitForAll();
        await this.#closeOperators();
        this.#report({
          t: "finished",
          vertex: o.vertex.id,
          subtask: o.subtask,
          metrics: this.#metrics(),
        });
        this.#done = true;
        return;
      case "cancel":
        this.#done = true;
        await this.#closeOperators().catch(() => {});
        return;
    }
  }

  #metrics(): SubtaskMetrics {
    const durationMs = performance.now() - this.#startedAt;
    const operators = Object.fromEntries(
      (this.#chain?.operators ?? []).flatMap((op) => op.metrics ? [[op.uid, op.metrics()]] : []),
    );
    return {
      numRecordsIn: this.recordsIn,
      numRecordsOut: this.#writerList.reduce((n, w) => n + w.recordsOut, 0),
      backPressuredTimeMsPerSecond: durationMs > 0 ? (1000 * this.backPressuredMs) / durationMs : 0,
      durationMs,
      operators,
    };
  }

  async #closeOperators(): Promise<void> {
    const ops: StreamOperator[] = this.#chain?.operators ?? [];
    let first: unknown;
    for (const op of ops) {
      try {
        await op.close();
      } catch (error) {
        first ??= error;
      }
    }
    if (first !== undefined) throw first;
  }

  #requestWakeup(timeMs: number): void {
    if (this.#wakeAt !== undefined && this.#wakeAt <= timeMs) return;
    this.#cancelWake?.();
    this.#wakeAt = timeMs;
    this.#cancelWake = this.#o.clock.schedule(timeMs, () => {
      this.#wakeAt = undefined;
      this.#cancelWake = undefined;
      this.#mails.push({ t: "timer" });
      this.#signal.notify();
    });
  }
}
