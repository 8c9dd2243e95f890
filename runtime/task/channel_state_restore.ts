/**
 * Restores a subtask's channel state (unaligned checkpoints, FLIP-76)
 * before it takes any new input: the recovered input goes in front of each
 * input channel's queue and the recovered output in front of each output
 * channel's send queue (see `channel_state.ts` for the order and the
 * rescaling rule). The I/O edge of `channel_state.ts`'s pure decoding.
 *
 * @module
 */

import type { InputGate } from "./input_gate.ts";
import type { RecordWriter } from "./record_writer.ts";
import type { StreamTaskOptions } from "./task_options.ts";
import { ChannelStateRescaleError, readChannelState } from "./channel_state.ts";
import { SuppressRestartsError } from "../failure.ts";

/**
 * Reads subtask `o.subtask`'s channel state from `o.restore` (nothing for a
 * fresh start or a checkpoint without channel state) and queues it.
 * @param name the subtask's name, for messages.
 * @throws {ChannelStateRescaleError} when parallelism changed around a
 *   vertex with channel state; {@linkcode SuppressRestartsError} naming the
 *   subtask and checkpoint when the state cannot be read or names a channel
 *   this subtask does not have.
 */
export async function restoreChannelState(
  o: StreamTaskOptions,
  gate: InputGate,
  writers: ReadonlyMap<number, RecordWriter>,
  name: string,
): Promise<void> {
  const point = o.restore;
  if (point === null) return;
  try {
    const state = await readChannelState({
      meta: await o.storage.readMetadata(point.jobId, point.checkpointId),
      read: (handle) => o.storage.readState(point.jobId, handle),
      graph: o.graph,
      vertex: o.vertex,
      subtask: o.subtask,
    });
    for (const c of state.inputs) gate.recover(c.edge, c.producer, c.items);
    for (const c of state.outputs) {
      const writer = writers.get(c.edge);
      if (!writer) {
        throw new RangeError(
          `Recovered channel state names output edge ${c.edge}, which vertex ${o.vertex.id} does not write`,
        );
      }
      writer.restoreOutput(c.consumer, c.items);
    }
  } catch (error) {
    if (error instanceof ChannelStateRescaleError) throw error;
    throw new SuppressRestartsError(
      `Cannot restore the channel state of ${name} from checkpoint ${point.checkpointId} of job ${point.jobId}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}
