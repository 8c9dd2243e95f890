/**
 * The consumer side of a subtask's input edges: one channel per producer
 * subtask, each with its queue of received messages, its expected sequence
 * number and its credit bookkeeping (Flink's `InputGate`). Watermarks and
 * watermark status of the channels are combined by the task's
 * `StatusWatermarkValve` (`runtime/time/status_watermark_valve.ts`), their
 * one source of truth.
 *
 * Messages are queued as the transport delivers them and consumed by the
 * task's mailbox loop, round-robin over channels that are not blocked by
 * barrier alignment. A blocked channel's buffers are not consumed, so its
 * credits are not returned and its producer stalls: that is the aligned
 * checkpoint's backpressure.
 *
 * Buffers arrive decoded: from bytes by the task on arrival, or as the
 * producer's own objects over an in-thread channel (`record_writer.ts`).
 * Both are checked for sequence the same way, and credits go back the same
 * way (as a value when the transport delivers the producer's subject in
 * this thread, else encoded).
 *
 * ## Priority barriers (unaligned checkpoints, FLIP-76)
 *
 * With `priorityBarriers` (unaligned checkpoints without an alignment
 * timeout), a checkpoint barrier (not a savepoint's) is taken out of its
 * channel's order on arrival: it goes to a priority queue that `poll`
 * empties first, ahead of the data queued before it (Flink's priority
 * events). While an unaligned checkpoint records channel state
 * (`channel_state.ts`), the same holds for the barrier of every channel
 * still recorded. The data the barrier overtook stays queued and is
 * processed as usual; the recorder keeps a copy of it. Sequence numbers are
 * checked on arrival, before any reordering, so gaps stay exact. A barrier
 * behind its channel's end of data stays in order: the job's final
 * checkpoint is aligned, so it completes only once the data before it was
 * processed (the job ends after it).
 *
 * Recovered channel state (`recover`) is put in front of its channel's
 * queue at restore, processed first, and returns no credit (it was never
 * granted one).
 *
 * @module
 */

import type { Transport } from "../actor/types.ts";
import { encode } from "../actor/codec.ts";
import type { JobEdge, JobGraph } from "../graph/job_graph.ts";
import { channelSources } from "./channels.ts";
import type { CreditMessage, EventMessage, ReceivedBufferMessage } from "./messages.ts";
import { taskSubject } from "./messages.ts";
import { InputChannelStateRecorder, type RecoveredInputItem } from "./channel_state.ts";

/** A channel delivered a message out of sequence: data was lost, duplicated or reordered. */
export class ChannelSequenceError extends Error {
  /** The error class name. */
  override name = "ChannelSequenceError";
}

/** One input channel. */
export class InputChannel {
  /** Position in the gate. */
  readonly index: number;
  /** The JobGraph edge. */
  readonly edge: JobEdge;
  /** The producer subtask. */
  readonly producer: number;
  /** The producer's mailbox subject (credits go there). */
  readonly producerSubject: string;
  /** Next expected sequence number. */
  expectedSeq = 0;
  /** Received, not yet consumed. */
  readonly queue: (ReceivedBufferMessage | EventMessage)[] = [];
  /** Blocked by alignment. */
  blocked = false;
  /** End of data processed. */
  endOfData = false;
  /** End of data received (queued): later barriers of this channel go in order. */
  endOfDataReceived = false;
  /** Buffers consumed since the last credit grant. */
  unreturnedCredits = 0;
  /** Recovered buffers at the head of the queue (channel state): consumed without returning credit. */
  recovered = 0;
  /**
   * The checkpoint id and queue position of a barrier taken out of order
   * (priority) before a recording started: the data before it is
   * `queue.slice(0, position)`.
   */
  priorityBarrier: { readonly id: number; readonly position: number } | undefined;
  /** A channel expecting sequence number 0, unblocked. */
  constructor(index: number, edge: JobEdge, producer: number, producerSubject: string) {
    this.index = index;
    this.edge = edge;
    this.producer = producer;
    this.producerSubject = producerSubject;
  }
  /** `edge e<edge> from <vertex>#<producer>` for messages. */
  describe(graph: JobGraph): string {
    return `channel ${this.index} (edge ${this.edge.index} from ${
      graph.vertices[this.edge.source]!.id
    }#${this.producer})`;
  }
}

/** Options of {@linkcode InputGate}. */
export interface InputGateOptions {
  /** The job, in every credit's envelope. */
  readonly jobId: string;
  /** The execution attempt, in every credit's envelope and subject. */
  readonly attempt: number;
  /** The job graph: the consuming vertex's input edges and their producers. */
  readonly graph: JobGraph;
  /** The consuming vertex's index. */
  readonly vertex: number;
  /** The consuming subtask's index. */
  readonly subtask: number;
  /** Where credits go (as values when the producer's subject is delivered in this thread). */
  readonly transport: Transport;
  /** Credits granted per channel at start: the most buffers in flight per channel. */
  readonly initialCredits: number;
  /**
   * Take checkpoint barriers (not savepoints') out of order on arrival
   * (unaligned checkpoints without alignment timeout; see the module docs).
   * Default `false`.
   */
  readonly priorityBarriers?: boolean;
  /**
   * Announce checkpoint barriers (not savepoints', not behind end of data)
   * on arrival while they wait in order (unaligned checkpoints with an
   * alignment timeout; see {@linkcode InputGate.takeAnnouncements}).
   * Default `false`.
   */
  readonly announceBarriers?: boolean;
}

/** All input channels of one subtask. */
export class InputGate {
  /** Every input channel, in gate order (edge by edge, producer by producer). */
  readonly channels: InputChannel[] = [];
  readonly #byEdge = new Map<number, (InputChannel | undefined)[]>();
  readonly #options: InputGateOptions;
  readonly #creditBatch: number;
  #next = 0;
  #queued = 0;
  /** Barriers taken out of their channel's order, oldest first. */
  readonly #priority: { channel: InputChannel; message: EventMessage }[] = [];
  /** Checkpoint ids of barriers that arrived in order since the last `takeAnnouncements`. */
  #announcements: number[] = [];
  /** The channel-state recording of the unaligned checkpoint in progress. */
  #recorder: InputChannelStateRecorder | undefined;
  /** The first sequence error seen, if any. */
  error: ChannelSequenceError | undefined;

  /** Makes one channel per (input edge, producer subtask) feeding this subtask. */
  constructor(options: InputGateOptions) {
    this.#options = options;
    this.#creditBatch = Math.max(1, Math.floor(options.initialCredits / 2));
    const { graph, vertex, subtask, jobId, attempt } = options;
    for (const edgeIndex of graph.vertices[vertex]!.inputs) {
      const edge = graph.edges[edgeIndex]!;
      const producer = graph.vertices[edge.source]!;
      const sources = channelSources(
        edge.partitioner,
        producer.parallelism,
        graph.vertices[vertex]!.parallelism,
        subtask,
      );
      const byProducer: (InputChannel | undefined)[] = new Array(producer.parallelism);
      for (const p of sources) {
        const ch = new InputChannel(
          this.channels.length,
          edge,
          p,
          taskSubject(jobId, attempt, producer.id, p),
        );
        this.channels.push(ch);
        byProducer[p] = ch;
      }
      this.#byEdge.set(edgeIndex, byProducer);
    }
  }

  /** Number of channels. */
  get size(): number {
    return this.channels.length;
  }

  /** Messages received and not yet consumed, over all channels. */
  get queued(): number {
    return this.#queued;
  }

  /**
   * Queues a message from the transport, checking its sequence number.
   * @returns false when the message is out of sequence (see {@linkcode InputGate.error}).
   */
  receive(msg: ReceivedBufferMessage | EventMessage): boolean {
    const ch = this.#byEdge.get(msg.edge)?.[msg.src];
    if (!ch) {
      this.error ??= new ChannelSequenceError(
        `Message on unknown channel (edge ${msg.edge}, producer ${msg.src}) at subtask ${this.#options.subtask}`,
      );
      return false;
    }
    if (msg.seq !== ch.expectedSeq) {
      const what = msg.seq > ch.expectedSeq
        ? "gap: messages were lost"
        : "duplicate or reordered message";
      this.error ??= new ChannelSequenceError(
        `Sequence error on ${ch.describe(this.#options.graph)} into ${
          this.#options.graph.vertices[this.#options.vertex]!.id
        }#${this.#options.subtask}, attempt ${this.#options.attempt}: expected ${ch.expectedSeq}, got ${msg.seq} (${what})`,
      );
      return false;
    }
    ch.expectedSeq++;
    const recorder = this.#recorder;
    if (msg.t === "evt" && msg.e.k === "eod") ch.endOfDataReceived = true;
    if (
      msg.t === "evt" && msg.e.k === "barrier" && msg.e.type !== "savepoint" &&
      !ch.endOfDataReceived
    ) {
      const recording = recorder !== undefined && recorder.isRecording(ch.index);
      if (recording || this.#options.priorityBarriers === true) {
        if (recording && msg.e.id >= recorder.checkpointId) recorder.stop(ch.index);
        else ch.priorityBarrier = { id: msg.e.id, position: ch.queue.length };
        this.#settleRecorder();
        this.#priority.push({ channel: ch, message: msg });
        this.#queued++;
        return true;
      }
      if (this.#options.announceBarriers === true) this.#announcements.push(msg.e.id);
    } else if (recorder !== undefined) {
      recorder.record(ch.index, msg);
      this.#settleRecorder();
    }
    ch.queue.push(msg);
    this.#queued++;
    return true;
  }

  /**
   * Starts recording channel state for unaligned checkpoint `checkpointId`
   * (see `channel_state.ts`): each of `pendingChannels` is recorded from
   * its queued data on, up to its barrier `checkpointId` (a barrier already
   * queued, in order or out of it, ends it at once); so is the data queued
   * before a barrier `checkpointId` that already came out of order (the
   * one that triggered the checkpoint, and any other).
   * @returns the recorder; its `done` resolves once every pending channel delivered its barrier or ended.
   */
  startChannelStateRecording(
    checkpointId: number,
    pendingChannels: readonly number[],
  ): InputChannelStateRecorder {
    this.#recorder?.discard();
    // Channels whose barrier came out of order (priority) overtook the data
    // queued before it: that data is in flight too, recorded up to the barrier.
    const channels = new Set(pendingChannels);
    for (const ch of this.channels) {
      if (ch.priorityBarrier?.id === checkpointId) channels.add(ch.index);
    }
    const recorder = new InputChannelStateRecorder(checkpointId, this.channels, [...channels]);
    this.#recorder = recorder;
    for (const c of channels) {
      const ch = this.channels[c]!;
      const pb = ch.priorityBarrier;
      let end = ch.queue.length;
      let stop = false;
      if (pb !== undefined && pb.id >= checkpointId) {
        end = Math.min(pb.position, end);
        stop = true;
      } else {
        const i = ch.queue.findIndex((m) =>
          m.t === "evt" && m.e.k === "barrier" && m.e.id >= checkpointId
        );
        if (i >= 0) {
          // Aligned until now: take the queued barrier out of order.
          end = i;
          stop = true;
          const [barrier] = ch.queue.splice(i, 1) as [EventMessage];
          this.#priority.push({ channel: ch, message: barrier });
        }
      }
      for (let i = 0; i < end && recorder.isRecording(c); i++) recorder.record(c, ch.queue[i]!);
      if (stop) recorder.stop(c);
    }
    for (const ch of this.channels) ch.priorityBarrier = undefined;
    recorder.finishIfComplete();
    this.#settleRecorder();
    return recorder;
  }

  /**
   * The checkpoint ids of barriers that arrived in order since the last
   * call, oldest first (Flink's `EventAnnouncement`: the alignment timeout
   * starts at arrival, not when the barrier is reached).
   */
  takeAnnouncements(): number[] {
    if (this.#announcements.length === 0) return [];
    const ids = this.#announcements;
    this.#announcements = [];
    return ids;
  }

  /** Ends the recording of `checkpointId` (aborted or subsumed) without result. */
  discardChannelStateRecording(checkpointId: number): void {
    if (this.#recorder?.checkpointId !== checkpointId) return;
    this.#recorder.discard();
    this.#recorder = undefined;
  }

  #settleRecorder(): void {
    if (this.#recorder?.settled) this.#recorder = undefined;
  }

  /**
   * Puts recovered channel state in front of the queue of the channel of
   * (`edge`, `producer`), before anything received (at restore, before start).
   * @throws {ChannelSequenceError} when this gate has no such channel.
   */
  recover(edge: number, producer: number, items: readonly RecoveredInputItem[]): void {
    const ch = this.#byEdge.get(edge)?.[producer];
    if (!ch) {
      throw new ChannelSequenceError(
        `Recovered channel state names input edge ${edge} from producer ${producer}, which subtask ${this.#options.subtask} of ${
          this.#options.graph.vertices[this.#options.vertex]!.id
        } does not read`,
      );
    }
    const { jobId, attempt } = this.#options;
    const msgs = items.map((it): ReceivedBufferMessage | EventMessage =>
      it.kind === "evt"
        ? { t: "evt", job: jobId, att: attempt, edge, src: producer, seq: -1, e: it.e }
        : {
          t: "buf",
          job: jobId,
          att: attempt,
          edge,
          src: producer,
          seq: -1,
          v: it.v,
          ts: it.ts,
          ...(it.kg ? { kg: it.kg } : {}),
        }
    );
    ch.queue.unshift(...msgs);
    ch.recovered += msgs.filter((m) => m.t === "buf").length;
    this.#queued += msgs.length;
  }

  /** The next message of an unblocked channel, round-robin, or `undefined`. */
  poll(): { channel: InputChannel; message: ReceivedBufferMessage | EventMessage } | undefined {
    if (this.#queued === 0) return undefined;
    const first = this.#priority.shift();
    if (first) {
      this.#queued--;
      return first;
    }
    const n = this.channels.length;
    for (let i = 0; i < n; i++) {
      const ch = this.channels[(this.#next + i) % n]!;
      if (ch.blocked || ch.queue.length === 0) continue;
      this.#next = (ch.index + 1) % n;
      this.#queued--;
      return { channel: ch, message: ch.queue.shift()! };
    }
    return undefined;
  }

  /** Grants every channel its initial credits (after all subtasks subscribed). */
  grantInitialCredits(): void {
    for (const ch of this.channels) this.#grant(ch, this.#options.initialCredits);
  }

  /** Records that a buffer of `channel` was consumed; returns credits in batches. */
  consumed(channel: InputChannel): void {
    if (channel.recovered > 0) {
      channel.recovered--;
      return;
    }
    channel.unreturnedCredits++;
    if (channel.unreturnedCredits >= this.#creditBatch) {
      this.#grant(channel, channel.unreturnedCredits);
      channel.unreturnedCredits = 0;
    }
  }

  #grant(ch: InputChannel, n: number): void {
    const { jobId, attempt, subtask, transport } = this.#options;
    const msg: CreditMessage = {
      t: "credit",
      job: jobId,
      att: attempt,
      edge: ch.edge.index,
      dst: subtask,
      n,
    };
    if (transport.publishValue?.(ch.producerSubject, msg) !== true) {
      transport.publish(ch.producerSubject, encode(msg));
    }
  }

  /** Whether every channel delivered end of data. */
  get allEndOfData(): boolean {
    return this.channels.every((c) => c.endOfData);
  }

  /** Unblocks every channel (alignment done or aborted). */
  unblockAll(): void {
    for (const ch of this.channels) ch.blocked = false;
  }
}
