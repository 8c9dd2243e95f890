/**
 * Channel state of unaligned checkpoints (FLIP-76; Flink's
 * `ChannelStateWriter` / `ChannelStateWriteRequestExecutor` and
 * `SequentialChannelStateReader`): the in-flight buffers a checkpoint
 * holds, how they are recorded, written and read back.
 *
 * ```ts
 * import { decodeChannelState, encodeChannelState } from "./channel_state.ts";
 * const bytes = encodeChannelState({
 *   inputs: [{ edge: 0, producer: 1, items: [{ t: "evt", job: "j", att: 0, edge: 0, src: 1, seq: 4, e: { k: "wm", wm: 5 } }] }],
 *   outputs: [],
 * });
 * const back = decodeChannelState(bytes, "chk-1/v1-0-a0.channel");
 * console.assert(back.inputs[0]?.items[0]?.kind === "evt");
 * ```
 *
 * ## What checkpoint *n* holds, per subtask
 *
 * - **Input channel state:** for each input channel whose barrier *n* had
 *   not arrived when the subtask took its snapshot, the buffers and events
 *   (watermarks, watermark status) it delivered before barrier *n*: those
 *   still queued in the input gate at the snapshot (the barrier overtook
 *   them) and those that arrived after it, until barrier *n*. They are
 *   processed as usual, and recorded besides. Recording a channel stops at
 *   its barrier *n* or its end of data (end of data is not recorded: a
 *   restored producer sends it again when its input ends again).
 * - **Output channel state:** for each output channel, the buffers and
 *   events not yet sent when barrier *n* was forwarded: the barrier goes
 *   ahead of them (`RecordWriter.overtakeWithEvent`), they are sent after it
 *   as credit allows, and recorded besides.
 *
 * The participant ({@linkcode channelStateSnapshot}) writes one private blob
 * of kind `channel` (uid `""`, state of the whole subtask) once every
 * recorded input channel delivered barrier *n*; the subtask's ack waits for
 * it. Nothing is written when nothing was in flight.
 *
 * ## Restore
 *
 * {@linkcode loadChannelStateRestore} reads the subtask's channel state
 * before any new input: the input gate puts the recovered input in front of
 * each channel's queue (processed first, per channel, in order, and without
 * returning credits that were never granted), and each record writer puts
 * the recovered output in front of its channel's send queue (re-sent first,
 * against credits, with this attempt's sequence numbers).
 *
 * **Rescaling:** Flink redistributes channel state when parallelism changes
 * (`StateAssignmentOperation` with the `InflightDataRescalingDescriptor`,
 * filtering records by key group on the new subtasks). Weir refuses it: a
 * checkpoint with channel state restores only when the subtask's vertex and
 * every vertex it reads from or writes to run at the parallelism they had
 * at the checkpoint; otherwise the job fails without restarts
 * ({@linkcode ChannelStateRescaleError}), naming the option to turn off.
 * Savepoints are always aligned and never hold channel state, so rescaling
 * from a savepoint is unaffected.
 *
 * ## Blob format (MessagePack, `runtime/actor/codec.ts`)
 *
 * | field | value                                                                  |
 * | ----- | ---------------------------------------------------------------------- |
 * | `v`   | `1`                                                                    |
 * | `in`  | `[edge, producer, items][]`, input channels                            |
 * | `out` | `[edge, consumer, items][]`, output channels                           |
 * | item  | `{ b: record block (record_codec), kg?: key groups (LE u16 bytes) }` or `{ e: ChannelEvent }` |
 *
 * @module
 */

import { decode, encode } from "../actor/codec.ts";
import { decodeRecords, encodeRecords } from "./record_codec.ts";
import {
  servingInline,
  type SnapshotResult,
  type StateHandle,
  type StateWriter,
} from "../checkpoint/snapshot_contract.ts";
import type { CheckpointMetadata } from "../checkpoint/types.ts";
import type { JobGraph, JobVertex } from "../graph/job_graph.ts";
import type { ChannelEvent, EventMessage, ReceivedBufferMessage } from "./messages.ts";
import { SuppressRestartsError } from "../failure.ts";

/** A message of an input channel as the gate queues it. */
export type InputChannelItem = ReceivedBufferMessage | EventMessage;

/**
 * A message waiting in an output channel's send queue (`record_writer.ts`):
 * an encoded buffer, an in-thread buffer's records, or an event.
 */
export type OutputChannelItem =
  | { readonly kind: "buf"; readonly vb: Uint8Array; readonly kg: Uint16Array | undefined }
  | {
    readonly kind: "vals";
    readonly v: unknown[];
    readonly ts: (number | null)[] | undefined;
    readonly kg: Uint16Array | undefined;
    /** The records' keys (in-thread hash edges); not kept in channel state. */
    readonly k: unknown[] | undefined;
  }
  | { readonly kind: "evt"; readonly e: ChannelEvent };

/** What one input channel delivered before barrier *n*, in order. */
export interface InputChannelCapture {
  /** The JobGraph edge index. */
  readonly edge: number;
  /** The producer subtask. */
  readonly producer: number;
  /** Buffers and events (never barriers or end of data), in channel order. */
  readonly items: readonly InputChannelItem[];
}

/** What one output channel had not sent when barrier *n* overtook it, in order. */
export interface OutputChannelCapture {
  /** The JobGraph edge index. */
  readonly edge: number;
  /** The consumer subtask. */
  readonly consumer: number;
  /** Buffers and events, in channel order. */
  readonly items: readonly OutputChannelItem[];
}

/** A recovered input item: a decoded buffer or an event. */
export type RecoveredInputItem =
  | {
    readonly kind: "buf";
    readonly v: unknown[];
    readonly ts: (number | null)[] | undefined;
    readonly kg: Uint16Array | undefined;
  }
  | { readonly kind: "evt"; readonly e: ChannelEvent };

/** One subtask's channel state as read back. */
export interface ChannelState {
  /** Recovered input per channel. */
  readonly inputs: readonly {
    readonly edge: number;
    readonly producer: number;
    readonly items: readonly RecoveredInputItem[];
  }[];
  /** Recovered output per channel (re-sent as encoded buffers). */
  readonly outputs: readonly {
    readonly edge: number;
    readonly consumer: number;
    readonly items: readonly OutputChannelItem[];
  }[];
}

/**
 * A checkpoint with channel state cannot be restored at another
 * parallelism (see the module docs): a restart cannot fix it.
 */
export class ChannelStateRescaleError extends SuppressRestartsError {
  /** The error class name. */
  override name = "ChannelStateRescaleError";
}

/**
 * Records, for one unaligned checkpoint, what the input channels still
 * pending deliver before their barrier. The input gate feeds it
 * (`input_gate.ts`); {@linkcode InputChannelStateRecorder.done} resolves
 * when every recorded channel delivered its barrier or ended, with the
 * captures, or with `undefined` once discarded (the checkpoint was aborted
 * or subsumed).
 */
export class InputChannelStateRecorder {
  /** The checkpoint recorded. */
  readonly checkpointId: number;
  /** Resolves with the captures (see the class docs). */
  readonly done: Promise<InputChannelCapture[] | undefined>;
  readonly #channels: readonly {
    readonly edge: { readonly index: number };
    readonly producer: number;
  }[];
  readonly #recording = new Set<number>();
  readonly #items = new Map<number, InputChannelItem[]>();
  #resolve!: (captures: InputChannelCapture[] | undefined) => void;
  #settled = false;

  /**
   * Starts recording `pendingChannels` (gate indexes into `channels`).
   * Resolves at once when `pendingChannels` is empty.
   */
  constructor(
    checkpointId: number,
    channels: readonly { readonly edge: { readonly index: number }; readonly producer: number }[],
    pendingChannels: readonly number[],
  ) {
    this.checkpointId = checkpointId;
    this.#channels = channels;
    this.done = new Promise((resolve) => this.#resolve = resolve);
    for (const c of pendingChannels) this.#recording.add(c);
  }

  /** Whether `channel` is still recorded. */
  isRecording(channel: number): boolean {
    return this.#recording.has(channel);
  }

  /** Whether the recording ended (every channel done, or discarded). */
  get settled(): boolean {
    return this.#settled;
  }

  /**
   * Records `item`, delivered by `channel` before its barrier: a buffer or
   * a watermark (status); end of data stops the channel's recording;
   * barriers are not recorded.
   */
  record(channel: number, item: InputChannelItem): void {
    if (!this.#recording.has(channel)) return;
    if (item.t === "evt") {
      if (item.e.k === "eod") return this.stop(channel);
      if (item.e.k === "barrier") return;
    }
    let list = this.#items.get(channel);
    if (!list) this.#items.set(channel, list = []);
    list.push(item);
  }

  /** `channel` delivered its barrier (or ended): its recording is complete. */
  stop(channel: number): void {
    if (!this.#recording.delete(channel) || this.#recording.size > 0) return;
    this.#finish();
  }

  /** Starts with nothing pending, or after the last `stop`: resolves the captures. */
  finishIfComplete(): void {
    if (this.#recording.size === 0) this.#finish();
  }

  /** The checkpoint was aborted: `done` resolves `undefined` and nothing more is recorded. */
  discard(): void {
    this.#recording.clear();
    this.#items.clear();
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(undefined);
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    const captures: InputChannelCapture[] = [];
    for (const [c, items] of [...this.#items].sort((a, b) => a[0] - b[0])) {
      const ch = this.#channels[c]!;
      captures.push({ edge: ch.edge.index, producer: ch.producer, items });
    }
    this.#items.clear();
    this.#resolve(captures);
  }
}

/**
 * The channel-state participant of checkpoint *n* (kind `channel`): its
 * `write` waits until `input` (if any) recorded every pending channel, then
 * writes one private blob `channel` holding the input and `outputs`
 * captures, unless both are empty.
 *
 * @param input the input recorder of an unaligned checkpoint, or `undefined`
 *   (a source, or a checkpoint aligned at this subtask).
 * @param outputs what the barrier overtook in the output channels.
 * @returns the snapshot result; `write` throws what storage throws.
 */
export function channelStateSnapshot(
  input: InputChannelStateRecorder | undefined,
  outputs: readonly OutputChannelCapture[],
): SnapshotResult {
  return {
    async write(writer: StateWriter): Promise<StateHandle[]> {
      const inputs = input ? await input.done : [];
      if (inputs === undefined || writer.cancelled) return [];
      const nonEmpty = outputs.filter((o) => o.items.length > 0);
      if (inputs.length === 0 && nonEmpty.length === 0) return [];
      const bytes = encodeChannelState({ inputs, outputs: nonEmpty });
      return [await writer.writePrivate("channel", bytes, "channel", "")];
    },
    discard(): void {
      input?.discard();
    },
  };
}

function keyGroupBytes(kg: Uint16Array | readonly number[] | undefined): Uint8Array | undefined {
  if (kg === undefined) return undefined;
  const u16 = kg instanceof Uint16Array ? kg : Uint16Array.from(kg);
  return new Uint8Array(u16.buffer.slice(u16.byteOffset, u16.byteOffset + u16.byteLength));
}

type EncodedItem = { b: Uint8Array; kg?: Uint8Array } | { e: ChannelEvent };

function encodeBuffer(b: Uint8Array, kg: Uint16Array | readonly number[] | undefined): EncodedItem {
  const bytes = keyGroupBytes(kg);
  return bytes ? { b, kg: bytes } : { b };
}

/**
 * Encodes one subtask's captures into the blob format of the module docs.
 * @throws {import("./record_codec.ts").CodecError} when a record cannot be encoded.
 */
export function encodeChannelState(state: {
  readonly inputs: readonly InputChannelCapture[];
  readonly outputs: readonly OutputChannelCapture[];
}): Uint8Array {
  const inputs = state.inputs.map((c) => [
    c.edge,
    c.producer,
    c.items.map((m): EncodedItem =>
      m.t === "evt" ? { e: m.e } : encodeBuffer(encodeRecords(m.v, m.ts), m.kg)
    ),
  ]);
  const outputs = state.outputs.map((c) => [
    c.edge,
    c.consumer,
    c.items.map((m): EncodedItem => {
      switch (m.kind) {
        case "evt":
          return { e: m.e };
        case "buf":
          return encodeBuffer(m.vb, m.kg);
        case "vals":
          return encodeBuffer(encodeRecords(m.v, m.ts), m.kg);
      }
    }),
  ]);
  return encode({ v: 1, in: inputs, out: outputs });
}

function decodeKeyGroups(bytes: unknown, where: string): Uint16Array | undefined {
  if (bytes === undefined) return undefined;
  if (!(bytes instanceof Uint8Array) || bytes.byteLength % 2 !== 0) {
    throw new Error(`${where}: key groups must be bytes of 16-bit integers`);
  }
  return new Uint16Array(bytes.slice().buffer);
}

function decodeItems(
  raw: unknown,
  where: string,
): { b?: Uint8Array; kg?: Uint16Array; e?: ChannelEvent }[] {
  if (!Array.isArray(raw)) throw new Error(`${where}: items must be an array`);
  return raw.map((item, i) => {
    const at = `${where}, item ${i}`;
    if (typeof item !== "object" || item === null) throw new Error(`${at}: not an object`);
    const o = item as { b?: unknown; kg?: unknown; e?: unknown };
    if (o.e !== undefined) {
      const e = o.e as ChannelEvent;
      if (typeof e !== "object" || e === null || !["wm", "status"].includes(e.k)) {
        throw new Error(`${at}: only watermark and watermark status events are channel state`);
      }
      return { e };
    }
    if (!(o.b instanceof Uint8Array)) throw new Error(`${at}: neither a buffer nor an event`);
    const kg = decodeKeyGroups(o.kg, at);
    return kg ? { b: o.b, kg } : { b: o.b };
  });
}

function channelList(raw: unknown, what: string, path: string): [number, number, unknown][] {
  if (!Array.isArray(raw)) throw new Error(`channel state ${path}: '${what}' must be an array`);
  return raw.map((c, i) => {
    if (
      !Array.isArray(c) || c.length !== 3 || !Number.isSafeInteger(c[0]) ||
      !Number.isSafeInteger(c[1])
    ) {
      throw new Error(`channel state ${path}: ${what}[${i}] must be [edge, subtask, items]`);
    }
    return c as [number, number, unknown];
  });
}

/**
 * Decodes a channel-state blob.
 * @param path the blob's path, for messages.
 * @throws {Error} naming the blob and what is malformed.
 */
export function decodeChannelState(bytes: Uint8Array, path: string): ChannelState {
  const raw = decode(bytes) as { v?: unknown; in?: unknown; out?: unknown };
  if (typeof raw !== "object" || raw === null || raw.v !== 1) {
    throw new Error(
      `channel state ${path}: expected format version 1, got ${
        JSON.stringify((raw as { v?: unknown } | null)?.v)
      }`,
    );
  }
  const inputs = channelList(raw.in, "in", path).map(([edge, producer, items]) => ({
    edge,
    producer,
    items: decodeItems(items, `channel state ${path}, input edge ${edge} from ${producer}`).map(
      (it): RecoveredInputItem => {
        if (it.e) return { kind: "evt", e: it.e };
        const { values, timestamps } = decodeRecords(it.b!);
        if (it.kg && it.kg.length !== values.length) {
          throw new Error(
            `channel state ${path}, input edge ${edge} from ${producer}: ${it.kg.length} key groups for ${values.length} records`,
          );
        }
        return { kind: "buf", v: values, ts: timestamps, kg: it.kg };
      },
    ),
  }));
  const outputs = channelList(raw.out, "out", path).map(([edge, consumer, items]) => ({
    edge,
    consumer,
    items: decodeItems(items, `channel state ${path}, output edge ${edge} to ${consumer}`).map(
      (it): OutputChannelItem =>
        it.e ? { kind: "evt", e: it.e } : { kind: "buf", vb: it.b!, kg: it.kg },
    ),
  }));
  return { inputs, outputs };
}

/**
 * Reads subtask `subtask` of `vertex`'s channel state from a completed
 * checkpoint (empty when it holds none).
 *
 * @param options.meta the checkpoint's metadata.
 * @param options.read reads a handle's blob.
 * @param options.graph the job graph being restored (for the neighbours' parallelism).
 * @returns the recovered inputs and outputs, in channel order.
 * @throws {ChannelStateRescaleError} when the checkpoint holds channel state
 *   of this vertex and it, or a vertex it reads from or writes to, runs at
 *   another parallelism than at the checkpoint; {@linkcode Error} for a
 *   malformed blob; whatever `read` throws.
 */
export async function readChannelState(options: {
  readonly meta: CheckpointMetadata;
  readonly read: (handle: StateHandle) => Promise<Uint8Array>;
  readonly graph: JobGraph;
  readonly vertex: JobVertex;
  readonly subtask: number;
}): Promise<ChannelState> {
  const { meta, graph, vertex, subtask } = options;
  const metaOf = (v: JobVertex) =>
    meta.vertices.find((m) => v.operators.some((op) => m.operatorUids.includes(op.uid)));
  const own = metaOf(vertex);
  if (!own) return { inputs: [], outputs: [] };
  const hasChannelState = own.subtasks.some((s) => s.handles.some((h) => h.kind === "channel"));
  if (!hasChannelState) return { inputs: [], outputs: [] };
  const neighbours = [
    vertex,
    ...vertex.inputs.map((e) => graph.vertices[graph.edges[e]!.source]!),
    ...vertex.outputs.map((e) => graph.vertices[graph.edges[e]!.target]!),
  ];
  for (const v of neighbours) {
    const m = metaOf(v);
    if (m && m.parallelism !== v.parallelism) {
      throw new ChannelStateRescaleError(
        `Checkpoint ${meta.checkpointId} holds in-flight data (channel state of unaligned ` +
          `checkpoints) of vertex ${vertex.id} (${vertex.name}), and vertex ${v.id} (${v.name}) ` +
          `ran at parallelism ${m.parallelism} then, ${v.parallelism} now: Weir does not ` +
          `redistribute channel state. Restore at the old parallelism, or take a savepoint ` +
          `(always aligned) and rescale from it; to avoid channel state, set ` +
          `enableCheckpointing(…, { unalignedCheckpoints: false })`,
      );
    }
  }
  const mine = own.subtasks.find((s) => s.subtask === subtask);
  const inputs: ChannelState["inputs"][number][] = [];
  const outputs: ChannelState["outputs"][number][] = [];
  for (const h of mine?.handles ?? []) {
    if (h.kind !== "channel") continue;
    const state = decodeChannelState(await servingInline(options.read)(h), h.path);
    for (const input of state.inputs) inputs.push(input);
    for (const output of state.outputs) outputs.push(output);
  }
  return { inputs, outputs };
}
