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
 * at-least-once mode (`barrier_tracker.ts`; both driven by
 * `checkpointed_input.ts`). Taking it is the subtask checkpointer's
 * (`subtask_checkpointer.ts`): forward barrier *n* on every output, capture
 * every operator's state participants synchronously (this is where
 * two-phase-commit sinks pre-commit), then write them to checkpoint storage
 * asynchronously while processing continues, and acknowledge with the state
 * handles, sizes and durations. A restore reads this subtask's share of the
 * checkpoint first (`subtask_state.ts`).
 *
 * ## Input and time
 *
 * What arrives on the subtask's subject is fenced and routed by its mailbox
 * (`task_mailbox.ts`); records, barriers, watermarks and watermark status
 * are taken from the input gate by `checkpointed_input.ts`, a source's
 * reader is polled by `source_input.ts`. No processing-time wake-up is
 * handled before `start`: until then a consumer may not listen yet, so a
 * wake-up due earlier (a restored timer, a periodic watermark) waits.
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
import type { Subscription } from "../actor/types.ts";
import { yieldToEventLoop } from "../actor/async.ts";
import { type Mail, TaskMailbox } from "./task_mailbox.ts";
import { computeKeyGroupRangeForOperatorIndex, type KeyGroupRange } from "../state/key_group.ts";
import { type CheckpointRequest, SubtaskCheckpointer } from "./subtask_checkpointer.ts";
import { CheckpointedInput } from "./checkpointed_input.ts";
import type { InputGate } from "./input_gate.ts";
import type { RecordWriter } from "./record_writer.ts";
import type { OperatorChain } from "./operator_chain.ts";
import type { SourceOperator } from "./operators/source_operator.ts";
import { SourceInput } from "./source_input.ts";
import {
  coordinatorReporter,
  createInputGate,
  createOperatorChain,
  createRecordWriters,
  loadSubtaskRestore,
} from "./subtask_setup.ts";
import { restoreChannelState } from "./channel_state_restore.ts";
import {
  type CoordinatorMessage,
  type MessageBody,
  type SubtaskMetrics,
  taskSubject,
} from "./messages.ts";
import { faultSite, type StreamTaskOptions, TaskFailedError } from "./task_options.ts";
import { METRICS_REPORT_INTERVAL_MS, TaskIOMetrics } from "../metrics/task_io_metrics.ts";

export {
  type FaultInjector,
  type FaultPoint,
  type FaultSite,
  type StreamTaskOptions,
  type TaskConfig,
  TaskFailedError,
} from "./task_options.ts";

/** One running subtask. */
export class StreamTask {
  readonly #o: StreamTaskOptions;
  readonly #name: string;
  readonly #mailbox: TaskMailbox;
  #writers = new Map<number, RecordWriter>();
  #writerList: RecordWriter[] = [];
  readonly #keyGroupRange: KeyGroupRange;
  readonly #gate: InputGate;
  readonly #input: CheckpointedInput;
  readonly #checkpointer: SubtaskCheckpointer;
  /** Sends a message to the job's coordinator (dropped once the job's transport closed). */
  readonly #report: (body: MessageBody<CoordinatorMessage>) => void;
  #chain: OperatorChain | undefined;
  #source: SourceInput | undefined;
  #subscription: Subscription | undefined;
  #started = false;
  #done = false;
  #failure: unknown;
  #failed = false;
  #inputEnded = false;
  /** A processing-time wake-up came before `start`; it is handled at start. */
  #timerBeforeStart = false;
  /** Idle and back-pressured time, sampled once a second into live metrics. */
  readonly #io = new TaskIOMetrics(performance.now());
  #metricsTimer: ReturnType<typeof setInterval> | undefined;
  readonly #startedAt = performance.now();

  /** Sets up the subtask's input and checkpointer; `run` starts it. */
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
    this.#gate = createInputGate(options);
    this.#report = coordinatorReporter(options);
    this.#mailbox = new TaskMailbox({
      jobId: options.jobId,
      attempt,
      gate: this.#gate,
      writers: () => this.#writers,
      clock: options.clock,
      fail: (error) => this.#fail(error),
    });
    const faults = options.faults;
    this.#input = new CheckpointedInput({
      gate: this.#gate,
      checkpointingMode: options.config.checkpointingMode,
      headKeySelector: vertex.operators[0]!.keySelector,
      headKeySelector2: vertex.operators[0]!.keySelector2,
      quiesce: () => this.#quiesce(),
      checkpoint: (request) => this.#checkpoint(request),
      decline: (id, code, reason) =>
        this.#report({ t: "decline", vertex: vertex.id, subtask, id, code, reason }),
      endOfInput: () => this.#endInput(),
      alignmentFault: faults && ((id) => faults("alignment", faultSite(this.#o, id))),
      unaligned: options.config.unalignedCheckpoints
        ? { alignedCheckpointTimeoutMs: options.config.alignedCheckpointTimeoutMs ?? 0 }
        : undefined,
      wakeUp: () => this.#mailbox.signal.notify(),
    });
    this.#checkpointer = new SubtaskCheckpointer({
      jobId: options.jobId,
      attempt,
      vertexId: vertex.id,
      subtask,
      storage: options.storage,
      localState: options.localState,
      taskName: this.#name,
      report: (body) => this.#report(body),
      isDone: () => this.#done,
      faults: faults && ((point, id) => faults(point, faultSite(this.#o, id))),
      unalignedCheckpoints: options.config.checkpointingMode === "exactly-once" &&
        options.config.unalignedCheckpoints === true,
      memoryThresholdBytes: options.config.memoryThresholdBytes,
    });
  }

  /** `<vertex name> (<i>/<n>) [<vertexId>#<subtask>, attempt <a>]`. */
  get name(): string {
    return this.#name;
  }

  /** Records consumed from the input gate. */
  get recordsIn(): number {
    return this.#input.recordsIn;
  }

  /** Messages of other attempts dropped by fencing. */
  get fencedMessages(): number {
    return this.#mailbox.fencedMessages;
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
      (m) => this.#done || this.#mailbox.receive(m),
    );
    try {
      await this.#setUp();
      this.#report({ t: "ready", vertex: o.vertex.id, subtask: o.subtask });
      await this.#loop();
    } catch (error) {
      this.#done = true;
      await this.#closeChain().catch(() => {});
      throw TaskFailedError.of(error, `Subtask ${this.#name} of job ${o.jobId}`);
    } finally {
      this.#done = true;
      clearInterval(this.#metricsTimer);
      this.#input.dispose();
      this.#subscription.unsubscribe();
      this.#mailbox.close();
    }
  }

  /** Asks the subtask to stop without finishing (its open transactions are aborted). */
  cancel(): void {
    // Stop receiving at once, even if the mailbox loop is stuck in user code
    // (JavaScript cannot interrupt it, unlike Flink's task thread): the
    // subtask then neither consumes data nor answers triggers, and whatever
    // it sends later carries an old attempt number and is fenced off.
    this.#subscription?.unsubscribe();
    this.#mailbox.close();
    this.#mailbox.put({ t: "cancel", job: this.#o.jobId, att: this.#o.attempt });
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#failure = error ??
      new Error(`Subtask ${this.#name} failed with ${String(error)} as its error`);
    this.#mailbox.signal.notify();
  }

  async #setUp(): Promise<void> {
    const o = this.#o;
    this.#writers = createRecordWriters(o);
    this.#writerList = [...this.#writers.values()];
    const chain = this.#chain = createOperatorChain(
      o,
      this.#writers,
      this.#keyGroupRange,
      (t) => this.#mailbox.requestWakeup(t),
    );
    if (o.vertex.isSource) {
      this.#source = new SourceInput({
        source: chain.head as SourceOperator,
        notify: () => this.#mailbox.signal.notify(),
        fail: (error) => this.#fail(error),
        endOfInput: async () => {
          await this.#endInput();
          this.#report({ t: "eoi", vertex: o.vertex.id, subtask: o.subtask });
        },
      });
    }
    const restores = await loadSubtaskRestore(o, this.#keyGroupRange, this.#name);
    await restoreChannelState(o, this.#gate, this.#writers, this.#name);
    for (const op of chain.operators) await op.initializeState(restores.get(op.uid));
    for (const op of chain.operators) await op.open();
  }

  async #loop(): Promise<void> {
    const chain = this.#chain!;
    const source = this.#source;
    let sliceStart = performance.now();
    for (;;) {
      if (this.#failed) throw this.#failure;
      const mail = this.#mailbox.take();
      if (mail) {
        await this.#handleMail(mail);
        if (this.#done) return;
        continue;
      }
      if (!this.#started) {
        await this.#mailbox.signal.wait();
        continue;
      }
      if (!this.#writersAvailable()) {
        this.#io.startWait("backPressured", performance.now());
        await this.#mailbox.signal.wait();
        sliceStart = performance.now();
        this.#io.endWait(sliceStart);
        continue;
      }
      const progressed = source
        ? await source.processNext() && (await chain.quiesce(), true)
        : await this.#input.processNext(chain.head);
      if (!progressed) {
        for (const w of this.#writerList) w.flush();
        this.#io.startWait("idle", performance.now());
        await this.#mailbox.signal.wait();
        sliceStart = performance.now();
        this.#io.endWait(sliceStart);
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

  async #closeChain(): Promise<void> {
    await this.#chain?.close();
  }

  #quiesce(): Promise<void> {
    return this.#chain!.quiesce();
  }

  #checkpoint(request: CheckpointRequest): Promise<void> {
    return this.#checkpointer.checkpointState(request, {
      operators: this.#chain!.operators,
      writers: this.#writerList,
    });
  }

  async #endInput(): Promise<void> {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#source?.end();
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
        this.#io.sample(performance.now(), this.#counters()); // the first window starts now
        this.#metricsTimer = setInterval(() => this.#reportMetrics(), METRICS_REPORT_INTERVAL_MS);
        this.#source?.start();
        this.#gate.grantInitialCredits();
        if (this.#timerBeforeStart) this.#mailbox.put({ t: "timer" });
        return;
      case "trigger":
        if (!o.vertex.isSource) return;
        return await this.#checkpoint({
          checkpointId: mail.id,
          timestamp: mail.ts,
          type: mail.type ?? "checkpoint",
          alignmentDurationMs: 0,
        });
      case "stop-source":
        // Stop-with-savepoint: drain ends the input (MAX_WATERMARK, end of
        // data); otherwise the source only stops polling. Then end of input.
        if (!o.vertex.isSource || this.#inputEnded) return;
        if (mail.drain) await this.#endInput();
        else {
          this.#inputEnded = true;
          this.#source?.end();
        }
        this.#report({ t: "eoi", vertex: o.vertex.id, subtask: o.subtask });
        return;
      case "complete":
        this.#checkpointer.completed(mail.id);
        o.faults?.("before-commit", faultSite(this.#o, mail.id));
        for (const op of ops) await op.notifyCheckpointComplete(mail.id);
        return;
      case "abort":
        this.#checkpointer.abort(mail.id);
        await this.#input.abort(mail.id);
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
        await this.#checkpointer.waitForAll();
        await this.#closeChain();
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
        await this.#closeChain().catch(() => {});
        return;
    }
  }

  #counters() {
    let numRecordsOut = 0;
    let outputWatermark = Number.NEGATIVE_INFINITY;
    for (const w of this.#writerList) {
      numRecordsOut += w.recordsOut;
      outputWatermark = Math.max(outputWatermark, w.lastWatermark);
    }
    return {
      numRecordsIn: this.recordsIn,
      numRecordsOut,
      inputWatermark: this.#input.inputWatermark,
      outputWatermark,
      epochMs: Date.now(),
    };
  }

  /** Sends a metrics sample to the coordinator (every `METRICS_REPORT_INTERVAL_MS` while running). */
  #reportMetrics(): void {
    if (this.#done) return;
    const o = this.#o;
    try {
      const sample = this.#io.sample(performance.now(), this.#counters());
      this.#report({ t: "metrics", vertex: o.vertex.id, subtask: o.subtask, sample });
    } catch (error) {
      this.#fail(error); // from a timer: the mailbox loop rethrows it
    }
  }

  #metrics(): SubtaskMetrics {
    const durationMs = performance.now() - this.#startedAt;
    return {
      numRecordsIn: this.recordsIn,
      numRecordsOut: this.#writerList.reduce((n, w) => n + w.recordsOut, 0),
      backPressuredTimeMsPerSecond: durationMs > 0
        ? (1000 * this.#io.backPressuredMs) / durationMs
        : 0,
      durationMs,
      operators: this.#chain?.metrics() ?? {},
    };
  }
}
