/**
 * The producer side of one JobGraph edge in one subtask: partitions records
 * over the edge's channels, batches them into buffers, numbers every message
 * and sends buffers only against credits (Flink's `RecordWriter` with
 * credit-based flow control).
 *
 * A buffer is sent when it holds `bufferSize` records, before any event on
 * its channel, when the task runs out of input, and when it is older than the
 * buffer timeout. A full buffer without credit waits in the channel's queue;
 * the task stops consuming input while any queue is non-empty (backpressure).
 *
 * A buffer's records are encoded with the record codec (`record_codec.ts`)
 * into the message's `vb` block. A message larger than the transport's max
 * payload is split in two halves (each encoded again) until it fits.
 *
 * ## In-thread channels
 *
 * When the transport can hand values over within this thread
 * (`Transport.publishValue`: the in-process transport of local mode, and
 * `thread_local.ts` for subtasks of one slot thread in cluster mode), a
 * buffer is not encoded: the sealed buffer's arrays of records, timestamps
 * and key groups go to the consumer as one {@linkcode ReceivedBufferMessage}
 * object, and events as their {@linkcode EventMessage} objects. Everything
 * else is the same: one sequence number per message, a credit per buffer,
 * events queued behind the buffers sealed before them, the same buffer size
 * and timeout (DESIGN.md §15). Such a buffer has no size limit (like a
 * chained edge), and its records are the very objects the operator
 * collected: they must not be changed afterwards, by the producer or by the
 * consumer (Flink's object-reuse trade-off, `enableObjectReuse`; README,
 * "What is not guaranteed"). The choice is per message: `publishValue`
 * returns `false` for a subject its transport does not deliver in this
 * thread (a consumer in another slot thread or process, in cluster mode),
 * and the buffer is then encoded where it stands in the queue; a transport
 * without `publishValue` (bare NATS), or a writer with `objectReuse: false`,
 * encodes every buffer. A record sent to consumers in this thread and to
 * others (broadcast) is thus encoded for the others only. One record is copied (through
 * the codec) on the in-thread path: on a keyed edge, one whose key holds a
 * string with a lone surrogate, which the codec turns into U+FFFD, so the
 * consumer keys its state by the key a cross-thread edge or a restored
 * checkpoint would give.
 *
 * ## Per-record costs
 *
 * These measures keep the per-record path of a keyed edge short (issue 13;
 * `deno task bench`'s keyed running sum, `bench:peers`' dedup and count):
 *
 * - The key group of an integer key in `[0, 16384)` is remembered per
 *   writer in a typed array indexed by the key, that of a string key in a
 *   `Map` of at most {@linkcode KEY_GROUP_MEMO_SIZE} keys, cleared when
 *   full. It is `assignToKeyGroup`'s result, memoized: the key group, so
 *   state placement and rescaling, is unchanged. Other numbers are hashed
 *   each time: with many distinct keys (Nexmark's auction ids, 180k in 3M
 *   events) the memo missed and was refilled, and its lookups cost more
 *   than the hash (`#keyGroupOf` was 5.5% of the keyed count's profile).
 * - A buffer's records, key groups and (once a record has one) timestamps
 *   go into arrays allocated at its first record for a full buffer (up to
 *   4096 records; a `Uint16Array` for the key groups), not grown by `push`;
 *   a buffer sealed early is truncated.
 * - On an in-thread hash edge each record's key travels with it (the
 *   message's `k` column, never encoded), and a consumer keyed by the same
 *   selector takes it (`buffer_dispatch.ts`) instead of running the key
 *   selector again: a tuple key (dedup's `[bidder, auction]`) is built once
 *   per record, not twice. The key is the record's own under the
 *   object-reuse contract; a record copied through the codec (lone
 *   surrogate) goes without one, and its consumer selects the key of the
 *   copy.
 *
 * Measured for these three (the tree before beside the tree after in one
 * process, 7 interleaved rounds, 1.5M events, a checkpoint every 1 s, median
 * of the per-round CPU ratios; load 15-24 on the shared 2-core machine, so
 * single rounds ranged 0.70-1.60): keyed count CPU time 1.145x less, dedup
 * 1.126x less; the keyed running sum showed no change above the noise.
 *
 * Measured (keyed sum, 3M records, a checkpoint every 1 s, the tree before
 * beside the tree after in one process, 7 interleaved rounds, median of the
 * per-round CPU ratios; 2-core machine shared by 8 engineers, load 3.6-5.1):
 * the memo alone cut the engine's CPU time by a factor 1.225 (A/A control:
 * 0.990), memo and preallocation together by 1.433 (379 → 274 ms CPU).
 *
 * @module
 */

import type { Transport } from "../actor/types.ts";
import { encode } from "../actor/codec.ts";
import { encodeBufferFrame } from "./buffer_frame.ts";
import type { JobEdge } from "../graph/job_graph.ts";
import type { KeySelector } from "../graph/stream_graph.ts";
import { computeOperatorIndexForKeyGroup } from "../state/key_group.ts";
import { channelTargets } from "./channels.ts";
import type {
  BufferMessage,
  ChannelEvent,
  EventMessage,
  ReceivedBufferMessage,
} from "./messages.ts";
import { taskSubject } from "./messages.ts";
import {
  type BufferTarget,
  copyRecord,
  encodeBuffers,
  isWellFormedKey,
} from "./buffer_encoding.ts";
import { KeyGroupMemo } from "./key_group_memo.ts";
import type { OutputChannelCapture, OutputChannelItem } from "./channel_state.ts";
import type { WatermarkStatus } from "../time/watermark.ts";

/**
 * Most records a buffer's arrays are allocated for at its first record
 * (the buffer size, up to this): filling a preallocated array costs less
 * than growing one by `push` (measured: about 4 against 11-17 ns per record
 * for 2048-record buffers with their key groups). A larger buffer grows
 * past it.
 */
const PREALLOCATED_RECORDS = 4096;

const EMPTY_KEY_GROUPS = new Uint16Array(0);

export { KEY_GROUP_MEMO_SIZE } from "./key_group_memo.ts";
export { RecordTooLargeError } from "./buffer_encoding.ts";

/** A message in a channel's send queue (its shape is channel state's, `channel_state.ts`). */
type Pending = OutputChannelItem;

class ChannelWriter {
  readonly target: number;
  readonly subject: string;
  seq = 0;
  credits = 0;
  /**
   * The open buffer's records, `count` of them; allocated at its first
   * record with room for a full buffer (see {@linkcode PREALLOCATED_RECORDS}).
   */
  values: unknown[] = [];
  /** Records in the open buffer. */
  count = 0;
  timestamps: (number | null)[] = [];
  hasTimestamps = false;
  /** Key groups of the open buffer's records (hash edges only), `count` of them. */
  keyGroups: Uint16Array = EMPTY_KEY_GROUPS;
  /**
   * Keys of the open buffer's records (hash edges handed over in-thread
   * only), `count` of them; `undefined` for a record whose key the consumer
   * must compute itself (a record copied through the codec).
   */
  keys: unknown[] = [];
  openedAt = 0;
  readonly queue: Pending[] = [];
  constructor(target: number, subject: string) {
    this.target = target;
    this.subject = subject;
  }
}

/** Options of {@linkcode RecordWriter}. */
export interface RecordWriterOptions {
  /** The job, in every message's envelope. */
  readonly jobId: string;
  /** The execution attempt, in every message's envelope (receivers fence other attempts). */
  readonly attempt: number;
  /** The JobGraph edge this writer feeds. */
  readonly edge: JobEdge;
  /** This producer subtask's index. */
  readonly producerIndex: number;
  /** Subtasks of the producing vertex. */
  readonly producerParallelism: number;
  /** The consuming vertex's id (`v<n>`), for its subtasks' subjects. */
  readonly consumerVertexId: string;
  /** Subtasks of the consuming vertex. */
  readonly consumerParallelism: number;
  /** Key groups of the consumer (hash partitioning). */
  readonly consumerMaxParallelism: number;
  /** Where buffers, events go (and whose `publishValue` decides the in-thread path). */
  readonly transport: Transport;
  /** Records per buffer. */
  readonly bufferSize: number;
  /**
   * Whether buffers may be handed over as values when the transport offers
   * `publishValue` (default `true`); `false` encodes every buffer. See the
   * module docs.
   */
  readonly objectReuse?: boolean;
  /** A monotonic clock in ms, for buffer ages (not the job's clock: buffer timeouts are real time). */
  readonly now: () => number;
}

/** Writes one edge's records of one producer subtask. */
export class RecordWriter {
  /** The JobGraph edge this writer feeds. */
  readonly edge: JobEdge;
  readonly #options: RecordWriterOptions;
  readonly #channels: ChannelWriter[];
  /** Channel by consumer index (`undefined` when this producer does not feed it). */
  readonly #byConsumer: (ChannelWriter | undefined)[];
  readonly #keySelector: KeySelector | undefined;
  /** For `hash`: the channel of each key group (Flink's operator index of the key group). */
  readonly #byKeyGroup: ChannelWriter[] = [];
  /** For `hash`: the key group of a key (`assignToKeyGroup` memoized, `key_group_memo.ts`). */
  readonly #keyGroupMemo: KeyGroupMemo;
  /** Where encoded buffers go, for their size check (`buffer_encoding.ts`). */
  readonly #bufferTarget: BufferTarget;
  #roundRobin: number;
  #lastWatermark = Number.NEGATIVE_INFINITY;
  #lastStatus: WatermarkStatus = "active";
  /** End of data was sent: later barriers go in order (see `overtakeWithEvent`). */
  #endOfData = false;
  /** Records written, for metrics. */
  recordsOut = 0;

  /** The last watermark sent (ms, Flink's `currentOutputWatermark`); `-Infinity` before the first. */
  get lastWatermark(): number {
    return this.#lastWatermark;
  }
  /** Buffers sent, for metrics. */
  buffersOut = 0;
  /**
   * Whether this writer's buffers are handed over as values, unencoded
   * (the transport has `publishValue`; see the module docs).
   */
  readonly inThread: boolean;

  /**
   * Opens one channel per consumer subtask this producer feeds (per the
   * edge's partitioner), each without credit until the consumer grants it.
   */
  constructor(options: RecordWriterOptions) {
    this.#options = options;
    this.edge = options.edge;
    this.#keySelector = options.edge.keySelector;
    this.inThread = options.objectReuse !== false &&
      typeof options.transport.publishValue === "function";
    const targets = channelTargets(
      options.edge.partitioner,
      options.producerParallelism,
      options.consumerParallelism,
      options.producerIndex,
    );
    this.#byConsumer = new Array(options.consumerParallelism).fill(undefined);
    this.#channels = targets.map((t) => {
      const ch = new ChannelWriter(
        t,
        taskSubject(options.jobId, options.attempt, options.consumerVertexId, t),
      );
      this.#byConsumer[t] = ch;
      return ch;
    });
    this.#roundRobin = options.producerIndex % this.#channels.length;
    this.#keyGroupMemo = new KeyGroupMemo(options.consumerMaxParallelism);
    this.#bufferTarget = {
      transport: options.transport,
      edge: options.edge.index,
      consumerVertexId: options.consumerVertexId,
    };
    if (options.edge.partitioner === "hash") {
      for (let kg = 0; kg < options.consumerMaxParallelism; kg++) {
        const consumer = computeOperatorIndexForKeyGroup(
          options.consumerMaxParallelism,
          options.consumerParallelism,
          kg,
        );
        this.#byKeyGroup.push(this.#byConsumer[consumer]!);
      }
    }
  }

  /** Partitions and buffers one record. */
  emit(value: unknown, timestamp: number | undefined): void {
    this.recordsOut++;
    switch (this.edge.partitioner) {
      case "forward":
        this.#add(this.#channels[0]!, value, timestamp);
        return;
      case "hash": {
        const key = this.#keySelector!(value);
        const keyGroup = this.#keyGroupMemo.keyGroupOf(key);
        const ch = this.#byKeyGroup[keyGroup]!;
        if (!this.inThread) this.#addKeyed(ch, value, timestamp, keyGroup, undefined);
        else if (isWellFormedKey(key)) this.#addKeyed(ch, value, timestamp, keyGroup, key);
        // A key the codec would change (a lone surrogate becomes U+FFFD) is
        // given to the consumer as the codec delivers it, so its keyed state
        // holds the key a restore or a cross-thread edge would give; the
        // consumer computes that record's key itself.
        else this.#addKeyed(ch, copyRecord(value), timestamp, keyGroup, undefined);
        return;
      }
      case "broadcast":
        for (const ch of this.#channels) this.#add(ch, value, timestamp);
        return;
      default: {
        const ch = this.#channels[this.#roundRobin]!;
        this.#roundRobin = (this.#roundRobin + 1) % this.#channels.length;
        this.#add(ch, value, timestamp);
      }
    }
  }

  /** Opens `ch`'s buffer at its first record: arrays with room for a full buffer. */
  #open(ch: ChannelWriter, keyed: boolean): void {
    ch.openedAt = this.#options.now();
    const capacity = Math.min(this.#options.bufferSize, PREALLOCATED_RECORDS);
    ch.values = new Array(capacity);
    if (keyed) {
      ch.keyGroups = new Uint16Array(capacity);
      if (this.inThread) ch.keys = new Array(capacity);
    }
  }

  /**
   * Records `timestamp` as record `n`'s. Timestamps are kept only once a
   * record of the buffer has one (then the earlier records get null), so
   * untimed streams pay one branch per record; the array is allocated with
   * room for a full buffer, as the records' is.
   */
  #stamp(ch: ChannelWriter, n: number, timestamp: number | undefined): void {
    if (timestamp !== undefined) {
      if (!ch.hasTimestamps) {
        ch.hasTimestamps = true;
        ch.timestamps = new Array(Math.max(ch.values.length, n + 1));
        ch.timestamps.fill(null, 0, n);
      }
      ch.timestamps[n] = timestamp;
    } else if (ch.hasTimestamps) {
      ch.timestamps[n] = null;
    }
  }

  /** Appends a record to the channel's open buffer (not a hash edge). */
  #add(ch: ChannelWriter, value: unknown, timestamp: number | undefined): void {
    const n = ch.count;
    if (n === 0) this.#open(ch, false);
    if (timestamp !== undefined || ch.hasTimestamps) this.#stamp(ch, n, timestamp);
    ch.values[n] = value;
    ch.count = n + 1;
    if (n + 1 >= this.#options.bufferSize) this.#seal(ch);
  }

  /**
   * Appends a record of a hash edge with its key group and, on an in-thread
   * channel, its key (`undefined`: the consumer computes it).
   */
  #addKeyed(
    ch: ChannelWriter,
    value: unknown,
    timestamp: number | undefined,
    keyGroup: number,
    key: unknown,
  ): void {
    const n = ch.count;
    if (n === 0) this.#open(ch, true);
    if (timestamp !== undefined || ch.hasTimestamps) this.#stamp(ch, n, timestamp);
    ch.values[n] = value;
    let keyGroups = ch.keyGroups;
    if (n === keyGroups.length) {
      keyGroups = new Uint16Array(2 * n);
      keyGroups.set(ch.keyGroups);
      ch.keyGroups = keyGroups;
    }
    keyGroups[n] = keyGroup;
    if (this.inThread) ch.keys[n] = key;
    ch.count = n + 1;
    if (n + 1 >= this.#options.bufferSize) this.#seal(ch);
  }

  /** Moves a channel's open buffer into its send queue and sends what credit allows. */
  #seal(ch: ChannelWriter): void {
    const n = ch.count;
    if (n === 0) return;
    const values = ch.values;
    values.length = n; // a buffer sealed before it filled: drop the room left
    let ts: (number | null)[] | undefined;
    if (ch.hasTimestamps) {
      ts = ch.timestamps;
      ts.length = n;
    }
    const hashed = this.edge.partitioner === "hash";
    const kg = hashed
      ? (n === ch.keyGroups.length ? ch.keyGroups : ch.keyGroups.subarray(0, n))
      : undefined;
    let keys: unknown[] | undefined;
    if (hashed && this.inThread) {
      keys = ch.keys;
      keys.length = n;
    }
    ch.count = 0;
    ch.keyGroups = EMPTY_KEY_GROUPS;
    ch.values = [];
    ch.keys = [];
    ch.timestamps = [];
    ch.hasTimestamps = false;
    if (this.inThread) ch.queue.push({ kind: "vals", v: values, ts, kg, k: keys });
    else {
      // Encoding happens here, on the mailbox loop, so a record that cannot
      // be encoded fails the subtask where it was emitted (or, for an
      // in-thread buffer whose consumer turned out not to be in this thread,
      // where credit arrived).
      encodeBuffers(ch.queue, values, ts, kg, this.#bufferTarget);
    }
    this.#drain(ch);
  }

  #drain(ch: ChannelWriter): void {
    const { jobId, attempt, producerIndex, transport } = this.#options;
    while (ch.queue.length > 0) {
      const item = ch.queue[0]!;
      if (item.kind === "vals") {
        if (ch.credits <= 0) break;
        const msg: ReceivedBufferMessage = {
          t: "buf",
          job: jobId,
          att: attempt,
          edge: this.edge.index,
          src: producerIndex,
          seq: ch.seq,
          v: item.v,
          ts: item.ts,
          ...(item.kg ? { kg: item.kg } : {}),
          ...(item.k ? { k: item.k } : {}),
        };
        ch.queue.shift();
        if (transport.publishValue!(ch.subject, msg)) {
          ch.credits--;
          ch.seq++;
          this.buffersOut++;
        } else {
          // The consumer is not in this thread: encode (perhaps into
          // several buffers) in the buffer's place, and send those (the
          // keys stay behind: the consumer computes them).
          const encoded: Pending[] = [];
          encodeBuffers(encoded, item.v, item.ts, item.kg, this.#bufferTarget);
          ch.queue.unshift(...encoded);
        }
      } else if (item.kind === "buf") {
        if (ch.credits <= 0) break;
        ch.credits--;
        ch.queue.shift();
        const msg: BufferMessage = {
          t: "buf",
          job: jobId,
          att: attempt,
          edge: this.edge.index,
          src: producerIndex,
          seq: ch.seq++,
          vb: item.vb,
          ...(item.kg ? { kg: item.kg } : {}),
        };
        this.buffersOut++;
        transport.publish(ch.subject, encodeBufferFrame(msg));
      } else {
        ch.queue.shift();
        const msg: EventMessage = {
          t: "evt",
          job: jobId,
          att: attempt,
          edge: this.edge.index,
          src: producerIndex,
          seq: ch.seq++,
          e: item.e,
        };
        if (!(this.inThread && transport.publishValue!(ch.subject, msg))) {
          transport.publish(ch.subject, encode(msg));
        }
      }
    }
  }

  /**
   * Sends `event` on every channel, after the records buffered before it. A
   * watermark not above the last one sent, and a watermark status equal to
   * the current one (active at first), are not sent.
   */
  broadcastEvent(event: ChannelEvent): void {
    if (event.k === "wm") {
      if (event.wm <= this.#lastWatermark) return;
      this.#lastWatermark = event.wm;
    } else if (event.k === "status") {
      if (event.s === this.#lastStatus) return;
      this.#lastStatus = event.s;
    } else if (event.k === "eod") {
      this.#endOfData = true;
    }
    for (const ch of this.#channels) {
      this.#seal(ch);
      ch.queue.push({ kind: "evt", e: event });
      this.#drain(ch);
    }
  }

  /**
   * Sends `event` (the barrier of an unaligned checkpoint, FLIP-76) on every
   * channel AHEAD of the buffers and events not yet sent: the open buffer is
   * sealed, the event goes to the head of each send queue (an event needs
   * no credit, so it leaves at once), and what it overtook is sent after it
   * as credit allows. Sequence numbers are given at sending, so they stay
   * in order. After end of data the event goes in order instead, as
   * `broadcastEvent` sends it (the final checkpoint must not complete
   * before the data ahead of it was processed: the job ends after it).
   * @returns what the event overtook, per channel with any (the output part of channel state).
   */
  overtakeWithEvent(event: ChannelEvent): OutputChannelCapture[] {
    if (this.#endOfData) {
      this.broadcastEvent(event);
      return [];
    }
    const captures: OutputChannelCapture[] = [];
    for (const ch of this.#channels) {
      this.#seal(ch);
      if (ch.queue.length > 0) {
        captures.push({ edge: this.edge.index, consumer: ch.target, items: [...ch.queue] });
      }
      ch.queue.unshift({ kind: "evt", e: event });
      this.#drain(ch);
    }
    return captures;
  }

  /**
   * Puts recovered output channel state in front of consumer `consumer`'s
   * send queue (at restore, before anything is emitted); it is sent first,
   * against credits.
   * @throws {RangeError} when this writer does not feed `consumer`.
   */
  restoreOutput(consumer: number, items: readonly OutputChannelItem[]): void {
    const ch = this.#byConsumer[consumer];
    if (!ch) {
      throw new RangeError(
        `Recovered channel state names output edge ${this.edge.index} to consumer subtask ${consumer}, which producer subtask ${this.#options.producerIndex} does not feed`,
      );
    }
    ch.queue.unshift(...items);
  }

  /** Seals and sends every open buffer (what credit allows). */
  flush(): void {
    for (const ch of this.#channels) this.#seal(ch);
  }

  /** Seals buffers opened before `nowMs - timeoutMs`. */
  flushOlderThan(nowMs: number, timeoutMs: number): void {
    for (const ch of this.#channels) {
      if (ch.count > 0 && nowMs - ch.openedAt >= timeoutMs) this.#seal(ch);
    }
  }

  /** Adds `n` credits for consumer `consumer` and sends what waited for them. */
  addCredit(consumer: number, n: number): void {
    const ch = this.#byConsumer[consumer];
    if (!ch) return;
    ch.credits += n;
    this.#drain(ch);
  }

  /** True when no sealed buffer is waiting for credit. */
  get isAvailable(): boolean {
    for (const ch of this.#channels) if (ch.queue.length > 0) return false;
    return true;
  }

  /** Buffers waiting for credit, over all channels. */
  get backlog(): number {
    let n = 0;
    for (const ch of this.#channels) n += ch.queue.length;
    return n;
  }
}
