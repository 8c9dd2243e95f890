/**
 * The input side of a non-source subtask (Flink's `CheckpointedInputGate`
 * with `StreamTaskNetworkInput`): takes the next buffer or event from the
 * input gate, hands records to the head operator, and turns in-band events
 * into their effects.
 *
 * - **Barriers** go to the barrier handler: aligned in exactly-once mode
 *   (channels that delivered barrier *n* are blocked until every channel
 *   did, see `barrier_handler.ts`), counted without blocking in
 *   at-least-once mode (`barrier_tracker.ts`), or unaligned (FLIP-76,
 *   `alternating_barrier_handler.ts`: at the first barrier, or when the
 *   alignment lasted `alignedCheckpointTimeoutMs`) when unaligned
 *   checkpoints are on. When the handler says so, checkpoint *n* is taken
 *   with the barrier's trigger time and type; an unaligned one starts the
 *   gate's channel-state recording of the channels still pending, and an
 *   abort discards it. An alignment that may time out arms a wake-up
 *   (`wakeUp`) for its deadline; the deadline is checked before each item.
 * - **Watermarks and watermark status** go through a
 *   `StatusWatermarkValve` (for a two-input head, one per input, combined
 *   by `TwoInputWatermarkValve`); the head operator gets the combined watermark
 *   and status changes.
 * - **End of data** on every channel ends the subtask's input (FLIP-147).
 *
 * Performs no I/O itself: the subtask gives the callbacks that checkpoint,
 * decline and end the input.
 *
 * @module
 */

import type { CheckpointingMode } from "../api/sink_v2.ts";
import type { CheckpointFailureCode, SnapshotType } from "../checkpoint/types.ts";
import {
  AlignedBarrierHandler,
  type BarrierAction,
  type CheckpointBarrierHandler,
} from "./barrier_handler.ts";
import { CheckpointBarrierTracker } from "./barrier_tracker.ts";
import { AlternatingBarrierHandler } from "./alternating_barrier_handler.ts";
import { dispatchBuffer } from "./buffer_dispatch.ts";
import type { InputChannel, InputGate } from "./input_gate.ts";
import type { ChannelEvent } from "./messages.ts";
import type { StreamOperator } from "./operators/operator.ts";
import { inputOf, type TwoInputStreamOperator } from "./operators/two_input_operator.ts";
import type { CheckpointRequest } from "./subtask_checkpointer.ts";
import { StatusWatermarkValve, type ValveAction } from "../time/status_watermark_valve.ts";
import { TwoInputWatermarkValve } from "../time/two_input_watermark_valve.ts";

/** Options of {@linkcode CheckpointedInput}. */
export interface CheckpointedInputOptions {
  /** The subtask's input gate (its channels, sequence checks and credits). */
  readonly gate: InputGate;
  /** The job's checkpointing mode: at-least-once tracks barriers, anything else aligns. */
  readonly checkpointingMode: CheckpointingMode | "none";
  /** The head operator's key selector: an edge keyed by the same one passes its key groups and keys. */
  readonly headKeySelector: unknown;
  /** A keyed two-input head's key selector of input 2 (see `headKeySelector`). */
  readonly headKeySelector2?: unknown;
  /** Awaits the chained operators' queued asynchronous work. */
  readonly quiesce: () => Promise<void>;
  /** Takes a checkpoint whose barriers all arrived (or were counted). */
  readonly checkpoint: (request: CheckpointRequest) => Promise<void>;
  /** Declines checkpoint `id` to the coordinator. */
  readonly decline: (id: number, code: CheckpointFailureCode, reason: string) => void;
  /** Every channel delivered end of data. */
  readonly endOfInput: () => Promise<void>;
  /** Test hook: called once per checkpoint when alignment first blocks a channel. */
  readonly alignmentFault?: ((checkpointId: number) => void) | undefined;
  /**
   * Unaligned checkpoints (exactly-once only): `alignedCheckpointTimeoutMs`
   * is how long a checkpoint aligns before it switches (0: never aligns).
   * Absent: aligned checkpoints.
   */
  readonly unaligned?: { readonly alignedCheckpointTimeoutMs: number } | undefined;
  /** Wakes the subtask's mailbox loop (an alignment deadline passed). */
  readonly wakeUp?: (() => void) | undefined;
}

/** A non-source subtask's input (see the module docs). */
export class CheckpointedInput {
  readonly #o: CheckpointedInputOptions;
  readonly #barriers: CheckpointBarrierHandler;
  readonly #valve: StatusWatermarkValve | TwoInputWatermarkValve | undefined;
  /** Trigger time and type of each checkpoint whose barrier arrived and which was not taken yet. */
  readonly #pending = new Map<number, { readonly ts: number; readonly type: SnapshotType }>();
  #alignmentFaultFor = 0;
  #alignmentTimer: ReturnType<typeof setTimeout> | undefined;
  /** The input views of a two-input head (`#inputView`). */
  #views:
    | { readonly head: StreamOperator; readonly inputs: Pick<StreamOperator, "processElement">[] }
    | undefined;
  /** Records handed to the head operator. */
  recordsIn = 0;

  /** The watermark given to the head operator (ms, Flink's `currentInputWatermark`); `-Infinity` before the first and for a source. */
  get inputWatermark(): number {
    return this.#valve?.lastOutputWatermark ?? Number.NEGATIVE_INFINITY;
  }

  /** Makes the input over `options.gate` (a source's gate has no channel). */
  constructor(options: CheckpointedInputOptions) {
    this.#o = options;
    const channels = Math.max(1, options.gate.size);
    // Flink's InputProcessorUtil: at-least-once tracks barriers without
    // alignment; exactly-once (and no checkpointing, for savepoints) aligns.
    this.#barriers = options.checkpointingMode === "at-least-once"
      ? new CheckpointBarrierTracker(channels)
      : options.unaligned && options.checkpointingMode === "exactly-once"
      ? new AlternatingBarrierHandler({
        numChannels: channels,
        alignedCheckpointTimeoutMs: options.unaligned.alignedCheckpointTimeoutMs,
      })
      : new AlignedBarrierHandler(channels);
    const inputs = options.gate.channels.map((c) => c.edge.typeNumber ?? 0);
    this.#valve = options.gate.size === 0
      ? undefined
      : inputs.some((n) => n !== 0)
      ? new TwoInputWatermarkValve(inputs) // one valve per input, combined as Flink does
      : new StatusWatermarkValve(options.gate.size);
  }

  /**
   * Processes the next buffer or event of the gate, into `head`.
   * @returns `false` when nothing was available.
   * @throws whatever the head operator, a checkpoint or a callback throws.
   */
  async processNext(head: StreamOperator): Promise<boolean> {
    const o = this.#o;
    if (this.#barriers instanceof AlternatingBarrierHandler) {
      for (const id of o.gate.takeAnnouncements()) {
        await this.#runBarrierActions(this.#barriers.onBarrierAnnouncement(id, performance.now()));
        this.#armAlignmentTimer();
      }
      if (this.#barriers.isAligning) {
        await this.#runBarrierActions(this.#barriers.onAlignmentTimer(performance.now()));
      }
    }
    const item = o.gate.poll();
    if (!item) return false;
    const { channel, message } = item;
    if (message.t === "buf") {
      // Buffers are queued decoded (or as handed over in-thread). A
      // producer's key groups and keys are those of the edge's key selector;
      // they are the head's only when it keys by that same selector.
      const input = channel.edge.typeNumber;
      if (!input) {
        dispatchBuffer(head, message, channel.edge.keySelector === o.headKeySelector);
      } else {
        // A two-input head (Flink's StreamTwoInputProcessor): the edge's
        // input number picks processElement1 or processElement2.
        dispatchBuffer(
          this.#inputView(head, input),
          message,
          channel.edge.keySelector === (input === 1 ? o.headKeySelector : o.headKeySelector2),
        );
      }
      this.recordsIn += message.v.length;
      await o.quiesce();
      o.gate.consumed(channel);
    } else {
      await this.#handleEvent(head, channel, message.e);
    }
    return true;
  }

  /** The one-input view of input 1 or 2 of a two-input head, made once per head. */
  #inputView(head: StreamOperator, input: 1 | 2): Pick<StreamOperator, "processElement"> {
    if (this.#views?.head !== head) {
      const two = head as TwoInputStreamOperator;
      this.#views = { head, inputs: [inputOf(two, 1), inputOf(two, 2)] };
    }
    return this.#views.inputs[input - 1]!;
  }

  /** Checkpoint `checkpointId` was aborted by the coordinator: alignment for it ends. */
  async abort(checkpointId: number): Promise<void> {
    await this.#runBarrierActions(this.#barriers.onAbort(checkpointId));
    this.#o.gate.discardChannelStateRecording(checkpointId);
  }

  /** Stops the alignment wake-up, if armed (the subtask ended). */
  dispose(): void {
    clearTimeout(this.#alignmentTimer);
    this.#alignmentTimer = undefined;
  }

  /** Arms a wake-up at the alignment deadline of an alternating handler, if any. */
  #armAlignmentTimer(): void {
    if (this.#alignmentTimer !== undefined || !this.#o.wakeUp) return;
    if (!(this.#barriers instanceof AlternatingBarrierHandler)) return;
    const delay = this.#barriers.alignmentTimerDelayMs(performance.now());
    if (delay === undefined) return;
    this.#alignmentTimer = setTimeout(() => {
      this.#alignmentTimer = undefined;
      this.#o.wakeUp?.();
    }, delay + 1);
  }

  async #handleEvent(head: StreamOperator, channel: InputChannel, event: ChannelEvent) {
    switch (event.k) {
      case "barrier":
        this.#pending.set(event.id, { ts: event.ts, type: event.type });
        await this.#runBarrierActions(
          this.#barriers.onBarrier(
            channel.index,
            event.id,
            performance.now(),
            // Savepoints, and barriers behind end of data (the final
            // checkpoint), are always aligned.
            event.type === "savepoint" || channel.endOfData,
          ),
        );
        return;
      case "wm":
        this.#runValveActions(head, this.#valve!.inputWatermark(channel.index, event.wm));
        return;
      case "status":
        this.#runValveActions(head, this.#valve!.inputWatermarkStatus(channel.index, event.s));
        return;
      case "eod":
        channel.endOfData = true;
        this.#runValveActions(head, this.#valve!.endOfData(channel.index));
        if (this.#o.gate.allEndOfData) await this.#o.endOfInput();
        return;
    }
  }

  /** Hands what the valve decided to the head operator, in order. */
  #runValveActions(head: StreamOperator, actions: readonly ValveAction[]): void {
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
          o.gate.channels[action.channel]!.blocked = true;
          this.#armAlignmentTimer();
          const id = this.#barriers.pendingCheckpointId ?? 0;
          if (o.alignmentFault && this.#alignmentFaultFor !== id) {
            this.#alignmentFaultFor = id;
            o.alignmentFault(id);
          }
          break;
        }
        case "unblockAll":
          o.gate.unblockAll();
          this.dispose();
          break;
        case "triggerCheckpoint": {
          const id = action.checkpointId;
          const barrier = this.#pending.get(id);
          for (const pending of this.#pending.keys()) {
            if (pending <= id) this.#pending.delete(pending);
          }
          const inputChannelState = action.unaligned
            ? o.gate.startChannelStateRecording(id, action.pendingChannels ?? [])
            : undefined;
          await o.checkpoint({
            checkpointId: id,
            timestamp: barrier?.ts ?? Date.now(),
            type: barrier?.type ?? "checkpoint",
            alignmentDurationMs: action.alignmentDurationMs,
            inputChannelState,
          });
          break;
        }
        case "abort":
          o.gate.discardChannelStateRecording(action.checkpointId);
          if (action.decline) {
            o.decline(action.checkpointId, action.reason.code, action.reason.message);
          }
          break;
      }
    }
  }
}
