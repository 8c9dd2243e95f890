/**
 * What a `StreamTask`'s set-up (`stream_task.ts`) builds before its loop starts
 * (Flink's `StreamTask#restoreInternal` side of a task): its reporter to the
 * coordinator, its input gate, the record writers of its output edges, its operator chain with the operators' environment,
 * and its share of the checkpoint it restores from.
 *
 * @module
 */

import type { KeyGroupRange } from "../state/key_group.ts";
import type { StateReader } from "../state/keyed_state_backend.ts";
import { TransportClosedError } from "../actor/types.ts";
import { encode } from "../actor/codec.ts";
import { type CoordinatorMessage, coordinatorSubject, type MessageBody } from "./messages.ts";
import { SuppressRestartsError } from "../failure.ts";
import { RecordWriter } from "./record_writer.ts";
import { InputGate } from "./input_gate.ts";
import { OperatorChain } from "./operator_chain.ts";
import type { OperatorRestore } from "./operators/operator.ts";
import { readSubtaskRestore } from "./subtask_state.ts";
import type { StreamTaskOptions } from "./task_options.ts";

/**
 * The subtask's way to report to its job's coordinator: fills in job and
 * attempt and publishes. A report after the job's transport closed (a
 * subtask of a cancelled attempt still finishing work) is dropped: nobody
 * listens any more.
 * @throws whatever else the transport throws.
 */
export function coordinatorReporter(
  o: StreamTaskOptions,
): (body: MessageBody<CoordinatorMessage>) => void {
  return (body) => {
    const msg = { ...body, job: o.jobId, att: o.attempt } as CoordinatorMessage;
    try {
      o.transport.publish(coordinatorSubject(o.jobId), encode(msg));
    } catch (error) {
      if (error instanceof TransportClosedError) return;
      throw error;
    }
  };
}

/** The subtask's input gate over its input edges' channels (none for a source). */
export function createInputGate(o: StreamTaskOptions): InputGate {
  return new InputGate({
    jobId: o.jobId,
    attempt: o.attempt,
    graph: o.graph,
    vertex: o.vertex.index,
    subtask: o.subtask,
    transport: o.transport,
    initialCredits: o.config.initialCredits,
    // Unaligned checkpoints without alignment timeout: barriers overtake queued data.
    priorityBarriers: o.config.checkpointingMode === "exactly-once" &&
      o.config.unalignedCheckpoints === true && (o.config.alignedCheckpointTimeoutMs ?? 0) === 0,
    // With an alignment timeout: barriers wait in order, announced on arrival.
    announceBarriers: o.config.checkpointingMode === "exactly-once" &&
      o.config.unalignedCheckpoints === true && (o.config.alignedCheckpointTimeoutMs ?? 0) > 0,
  });
}

/** The record writers of the subtask's output edges, by edge index, in edge order. */
export function createRecordWriters(o: StreamTaskOptions): Map<number, RecordWriter> {
  const writers = new Map<number, RecordWriter>();
  for (const edgeIndex of o.vertex.outputs) {
    const edge = o.graph.edges[edgeIndex]!;
    const consumer = o.graph.vertices[edge.target]!;
    writers.set(
      edgeIndex,
      new RecordWriter({
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
      }),
    );
  }
  return writers;
}

/**
 * The subtask's operator chain, wired to `writers`.
 * @param requestWakeup asks the task for a processing-time wake-up at or after `timeMs`.
 */
export function createOperatorChain(
  o: StreamTaskOptions,
  writers: Map<number, RecordWriter>,
  keyGroupRange: KeyGroupRange,
  requestWakeup: (timeMs: number) => void,
): OperatorChain {
  return new OperatorChain({
    graph: o.graph,
    vertex: o.vertex,
    writers,
    autoWatermarkIntervalMs: o.config.autoWatermarkIntervalMs,
    env: {
      jobId: o.jobId,
      jobName: o.graph.name,
      vertexId: o.vertex.id,
      subtaskIndex: o.subtask,
      parallelism: o.vertex.parallelism,
      maxParallelism: o.vertex.maxParallelism,
      keyGroupRange,
      attempt: o.attempt,
      clock: o.clock,
      checkpointingMode: o.config.checkpointingMode,
      stateBackend: o.config.stateBackend,
      requestWakeup,
    },
  });
}

/**
 * Reads the subtask's share of `o.restore`, per operator uid (empty for a
 * fresh start). A missing, unreadable or inconsistent checkpoint fails the
 * job without restarts: restarting cannot repair it.
 * @param name the subtask's name, for the message.
 * @throws {SuppressRestartsError} naming the subtask, the checkpoint and the cause.
 */
export async function loadSubtaskRestore(
  o: StreamTaskOptions,
  keyGroupRange: KeyGroupRange,
  name: string,
): Promise<Map<string, OperatorRestore>> {
  const point = o.restore;
  if (point === null) return new Map();
  const remote: StateReader = (handle) => o.storage.readState(point.jobId, handle);
  try {
    return await readSubtaskRestore({
      meta: await o.storage.readMetadata(point.jobId, point.checkpointId),
      // Local recovery: this worker's copy of the checkpoint first (same job, vertex, subtask
      // and key groups; `local_state_store.ts`), checkpoint storage for what it lacks.
      read: o.localState && point.jobId === o.jobId
        ? o.localState.restoreReader(point.checkpointId, remote)
        : remote,
      vertex: o.vertex,
      subtask: o.subtask,
      keyGroupRange,
    });
  } catch (error) {
    throw new SuppressRestartsError(
      `Cannot restore ${name} from checkpoint ${point.checkpointId} of job ${point.jobId}: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
}
