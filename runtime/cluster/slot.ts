/**
 * The inside of a slot thread (a Web Worker a worker process starts for one
 * job on one slot; see `role.ts` and `worker_process.ts`). The job module's
 * `execute()` calls {@linkcode runSlot} with the graph it built: the slot
 * checks the graph's fingerprint against the submitted one, connects to
 * NATS, opens the shared checkpoint storage, and runs a {@linkcode Worker}
 * that receives the slot's messages from its parent through `postMessage`.
 * Its transport keeps messages between this thread's subtasks in the
 * thread (`thread_local.ts`): their network edges pass records unencoded.
 *
 * The subtasks' checkpoint state is uploaded by a thread of the slot's own
 * (`checkpoint_uploads.ts`: a Web Worker with its own NATS connection), not
 * on this thread, so uploads do not hold up the records in flight through
 * it; restore reads and discards use this thread's connection.
 *
 * Exchanges with the subtasks of this job in the process's other slot
 * threads go through `MessagePort`s the parent brokers (`port_transport.ts`):
 * the parent posts `{ t: "peer", slotId, port }` for each other slot thread
 * of the job (before any deployment that could send to it) and
 * `{ t: "peer-lost", slotId, reason }` when one ends; only exchanges with
 * other processes, and the control plane, go through NATS.
 *
 * Messages to the parent: `{ t: "ready" }` once it accepts deployments,
 * `{ t: "error", message }` when it cannot run the job, and
 * `{ t: "released" }` once its subtasks ended after a `release`.
 *
 * @module
 */

import { decode } from "../actor/codec.ts";
import { delay } from "../actor/async.ts";
import { connectNats, watchReconnects } from "../actor/nats_connect.ts";
import { NatsTransport } from "../actor/nats_transport.ts";
import { isTaskSubject, PortTransport, type PortTransportStats } from "../actor/port_transport.ts";
import { ThreadLocalTransport } from "../actor/thread_local.ts";
import { ObjectStoreCheckpointStorage } from "../checkpoint/object_store_storage.ts";
import { CheckpointUploadThread, uploadingOffThread } from "./checkpoint_uploads.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import { jobGraphFingerprint } from "../graph/job_graph_summary.ts";
import type { WorkerMessage } from "../task/messages.ts";
import type { SlotLaunch } from "./role.ts";
import { JobGraphMismatchError, SuppressRestartsError } from "../failure.ts";
import { type JobRuntime, Worker } from "./worker.ts";
import { LocalStateStore } from "../task/local_state_store.ts";

/** What the slot thread posts to its parent. */
export type SlotThreadMessage =
  | { readonly t: "ready" }
  /**
   * Every subtask ended after a `release` (sinks closed and aborted their
   * open transactions); `exchange` counts what the thread's transport sent
   * through ports and through NATS.
   */
  | { readonly t: "released"; readonly exchange: PortTransportStats }
  /**
   * The thread cannot run the job. `suppressRestarts`: a retry cannot fix it
   * (`name` is then the error's class, e.g. `JobGraphMismatchError`);
   * `byJobCode`: the job's own code ended the thread (`Deno.exit`), which
   * before `ready` means the module failed while loading.
   */
  | {
    readonly t: "error";
    readonly message: string;
    readonly suppressRestarts: boolean;
    readonly name?: string;
    readonly byJobCode?: boolean;
  };

/**
 * What the worker process posts to a slot thread besides the coordinator's
 * messages (which it forwards as their encoded bytes): the thread's end of a
 * `MessageChannel` to another slot thread of the job in the same process,
 * and the end of such a thread.
 */
export type SlotPeerMessage =
  | { readonly t: "peer"; readonly slotId: string; readonly port: MessagePort }
  | { readonly t: "peer-lost"; readonly slotId: string; readonly reason: string };

/** The job settings the job module's environment gives the slot. */
export type SlotRuntimeSettings = Omit<JobRuntime, "graph" | "storage">;

/**
 * Runs this slot thread's share of the job until the parent terminates it.
 * Never resolves.
 */
export async function runSlot(
  launch: SlotLaunch,
  graph: JobGraph,
  settings: SlotRuntimeSettings,
): Promise<never> {
  const post = (m: SlotThreadMessage) => (self as unknown as Worker_).postMessage(m);
  try {
    const fingerprint = jobGraphFingerprint(graph);
    if (fingerprint !== launch.fingerprint) {
      throw new JobGraphMismatchError(
        `the job module built a different graph on slot ${launch.slotId} than on the client ` +
          `(fingerprint ${fingerprint.slice(0, 12)} vs ${
            launch.fingerprint.slice(0, 12)
          }): a job ` +
          `module must build the same graph from the same arguments everywhere`,
      );
    }
    const nc = await connectNats({ ...launch.nats, name: `weir-slot-${launch.slotId}` });
    // Subtask mailboxes of this job in the process's other slot threads are reached through ports.
    const ports = new PortTransport({
      remote: new NatsTransport(nc, { ownsConnection: true }),
      ownsRemote: true,
      name: `slot ${launch.slotId}`,
      routable: isTaskSubject,
    });
    // Subtasks of this slot thread exchange records unencoded (DESIGN.md §15).
    const transport = new ThreadLocalTransport(ports, {
      name: `weir-slot-${launch.slotId} in-thread`,
    });
    // State uploads run in a thread of their own (checkpoint_uploads.ts); the rest here.
    const storage = uploadingOffThread(
      await ObjectStoreCheckpointStorage.open({ connection: nc, bucket: launch.checkpointBucket }),
      new CheckpointUploadThread({
        nats: launch.nats,
        bucket: launch.checkpointBucket,
        slotId: launch.slotId,
      }),
    );
    const runtime: JobRuntime = { graph, storage, ...settings };
    // Local recovery: copies of the subtasks' snapshots on this host, per worker id.
    const localState = launch.localRecovery && new LocalStateStore(launch.localRecovery);
    const worker = new Worker({
      transport,
      workerId: launch.slotId,
      resolveJob: () => runtime,
      localState,
    });
    (self as unknown as Worker_).onmessage = (e) => {
      if (!(e.data instanceof Uint8Array)) {
        const peer = e.data;
        if (peer.t === "peer") ports.connectPeer(peer.slotId, peer.port);
        else ports.peerLost(peer.slotId, peer.reason);
        return;
      }
      const msg = decode(e.data) as WorkerMessage;
      worker.deliver(msg);
      if (msg.t === "release") {
        // Let cancelled subtasks close (a sink aborts its open transaction), then say so.
        void (async () => {
          while (worker.runningTasks > 0) await delay(20);
          // The job ended: its local copies are of no more use here.
          await localState?.releaseJob(launch.jobId);
          post({ t: "released", exchange: ports.stats });
        })();
      }
    };
    watchReconnects(nc, () =>
      worker.failAll(
        new Error(
          `slot ${launch.slotId} lost its NATS connection and reconnected: messages may have ` +
            `been lost, so its subtasks restart from the latest checkpoint`,
        ),
      ));
    post({ t: "ready" });
  } catch (error) {
    post({
      t: "error",
      message: error instanceof Error ? error.message : String(error),
      suppressRestarts: error instanceof SuppressRestartsError,
      ...(error instanceof SuppressRestartsError ? { name: error.name } : {}),
    });
  }
  return await new Promise<never>(() => {});
}

/** The dedicated-worker global's part this module uses. */
interface Worker_ {
  postMessage(message: unknown): void;
  onmessage: ((e: MessageEvent<Uint8Array | SlotPeerMessage>) => void) | null;
}
