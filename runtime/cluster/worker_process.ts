/**
 * The worker process (`cli.ts worker`, Flink's TaskManager): offers slots
 * to the cluster, heartbeats, and runs each job's subtasks in slot threads.
 *
 * ## Slots and threads
 *
 * The process has `slots` slots (default: the number of cores). Each slot
 * has a subject `weir.worker.<slotId>` on which job coordinators deploy
 * subtasks. On the first deployment of a job to a slot, the process fetches
 * the job's spec from the coordinator and starts a *slot thread*: a Web
 * Worker whose entry is the job module itself (so `import.meta.main` holds
 * and its `Deno.args` are the job's arguments; see `role.ts`). The module
 * rebuilds the graph and `execute()` turns the thread into a worker for that
 * slot (`slot.ts`). The process hands the slot's messages to the thread in
 * order. Subtasks of one job on one slot share a thread; each slot thread
 * has its own NATS connection, so a process uses as many cores as it has
 * busy slots. A slot thread uploads its checkpoint state through a thread
 * of its own with another connection (`checkpoint_uploads.ts`), off the
 * thread that processes records.
 *
 * ## Exchanges between slot threads
 *
 * The slot threads of one job in this process exchange data through
 * `MessagePort`s rather than the NATS server (`../actor/port_transport.ts`;
 * Flink's local input channels): when a job's slot thread is created, the
 * process makes a `MessageChannel` to each other live thread of the job and
 * posts one end to each (`{ t: "peer" }`, queued in order with the slot's
 * messages, so a thread knows its peers before it runs a deployment). When
 * a thread ends (crash, start timeout, release), the others get
 * `{ t: "peer-lost" }`: a subtask publishing to a mailbox in it fails, as
 * after losing a NATS peer, and the coordinator hears of the failure from
 * this process. NATS carries only what crosses processes, and the control
 * plane.
 *
 * A subtask's exception is reported by the thread and never reaches the
 * process. An uncaught error in a thread is caught here: the thread is
 * terminated and the failure is reported to the job's coordinator. How the
 * coordinator reacts depends on when it happened (`../failure.ts`):
 *
 * - before the thread said it is ready (the module is still loading: its
 *   import failed, its top-level code threw or called `Deno.exit`, a
 *   configuration check it runs failed): a {@linkcode JobModuleLoadError}
 *   naming the module URL, the slot and the thrown error, which fails the
 *   job without restarts, since every restart would load the same module;
 * - a graph that differs from the submitted one: the thread's
 *   `JobGraphMismatchError`, likewise without restarts;
 * - later (an unhandled rejection in user code), or the thread's own setup
 *   failing (NATS unreachable): an ordinary failure, which the restart
 *   strategy retries; the next deployment starts a fresh thread.
 *
 * When a job ends, its coordinator sends `release` and the process
 * terminates the job's threads, which also frees subtasks stuck in user
 * code.
 *
 * ## Leader epochs
 *
 * With a highly available coordinator (`ha/`), every message from a
 * coordinator carries its leader epoch. The process refuses messages of an
 * epoch below the highest it saw, and when it sees a higher one (a message,
 * or the new leader's announcement on `weir.cluster.leader`) it cancels
 * every subtask in the slot threads an older epoch deployed to (as a
 * `cancel-attempt` of every attempt), so they stop writing, and heartbeats
 * at once to register with the new leader (`ha/epoch_fence.ts`). The
 * threads stay, their job module loaded, for the new leader's deployments
 * (a job the new leader does not run again keeps idle threads until the
 * worker restarts). Slot threads of different epochs are never peers.
 *
 * @module
 */

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subscription, Transport } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import {
  type CoordinatorMessage,
  coordinatorSubject,
  errorInfo,
  subjectToken,
  type WorkerMessage,
  workerSubject,
} from "../task/messages.ts";
import {
  type Heartbeat,
  HEARTBEAT_SUBJECT,
  JOB_SPEC_SUBJECT,
  type JobSpecReply,
  LEADER_SUBJECT,
  type LeaderAnnouncement,
} from "./cluster_protocol.ts";
import { SLOT_NAME_PREFIX, type SlotLaunch } from "./role.ts";
import type { SlotPeerMessage, SlotThreadMessage } from "./slot.ts";
import { JobModuleLoadError, SuppressRestartsError } from "../failure.ts";
import { logger } from "../log.ts";
import { EpochFence, type EpochVerdict } from "./ha/epoch_fence.ts";

const log = logger("worker");

/** Options of {@linkcode WorkerProcess}. */
export interface WorkerProcessOptions {
  /** The process's transport (NATS). */
  readonly transport: Transport;
  /** Connection options slot threads use to connect to NATS themselves. */
  readonly nats: SlotLaunch["nats"];
  /** `[A-Za-z0-9_-]+`; default: host name, pid and random digits. */
  readonly workerId?: string;
  /** Number of slots; default `navigator.hardwareConcurrency`. */
  readonly slots?: number;
  /** Heartbeat period, in ms. Default 500. */
  readonly heartbeatIntervalMs?: number;
  /** How long a slot thread may take to load the job module, in ms. Default 60 000. */
  readonly slotStartTimeoutMs?: number;
  /**
   * How long a released job's slot thread may take to close its subtasks
   * (sinks abort their open transactions) before it is terminated, in ms.
   * Default 5000.
   */
  readonly releaseGraceMs?: number;
  /**
   * Local recovery (Flink's `state.backend.local-recovery`): slot threads
   * keep a copy of their subtasks' latest completed snapshot on this
   * host's disk and restore from it when a subtask comes back on this
   * worker (`../task/local_state_store.ts`). Default `true`. Restores after
   * a process restart find the copies only when the worker keeps its id
   * (`workerId`, `cli.ts worker --id`).
   */
  readonly localRecovery?: boolean;
  /**
   * Root directory of local state (Flink's `taskmanager.state.local.root-dirs`);
   * the worker's copies go under `<dir>/<workerId>/`. Default
   * `<OS temp dir>/weir-local-state`.
   */
  readonly localStateDirectory?: string;
}

/** The default root of local state copies: `weir-local-state` under the OS temp directory. */
export function defaultLocalStateDirectory(): string {
  return join(tmpdir(), "weir-local-state");
}

/** Runs a cluster worker (see the module docs). */
export class WorkerProcess {
  readonly #o: WorkerProcessOptions;
  /** The worker's id. */
  readonly workerId: string;
  /** Its slot ids. */
  readonly slotIds: readonly string[];
  readonly #threads = new Map<string, SlotThread>();
  readonly #subscriptions: Subscription[] = [];
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #beat: (() => void) | undefined;
  readonly #instance = crypto.randomUUID();
  /** The highest leader epoch seen (high availability; see `ha/epoch_fence.ts`). */
  readonly #fence = new EpochFence();

  constructor(options: WorkerProcessOptions) {
    this.#o = options;
    this.workerId = options.workerId ?? defaultWorkerId();
    if (!/^[A-Za-z0-9_-]+$/.test(this.workerId)) {
      throw new RangeError(
        `worker id must match [A-Za-z0-9_-]+, got ${JSON.stringify(this.workerId)}`,
      );
    }
    const slots = options.slots ?? navigator.hardwareConcurrency;
    if (!Number.isInteger(slots) || slots < 1) {
      throw new RangeError(`slots must be a positive integer, got ${slots}`);
    }
    this.slotIds = Array.from({ length: slots }, (_, i) => `${this.workerId}-s${i}`);
  }

  /** Number of slot threads running. */
  get slotThreads(): number {
    return this.#threads.size;
  }

  /** Subscribes to the slots' subjects and starts heartbeating. */
  start(): void {
    for (const slotId of this.slotIds) {
      this.#subscriptions.push(this.#o.transport.subscribe(workerSubject(slotId), (m) => {
        let msg: WorkerMessage;
        try {
          msg = decode(m.data) as WorkerMessage;
        } catch (error) {
          log.warn(`slot ${slotId}: dropping an undecodable message: ${error}`);
          return;
        }
        this.#onMessage(slotId, msg, m.data);
      }));
    }
    this.#subscriptions.push(this.#o.transport.subscribe(LEADER_SUBJECT, (m) => {
      try {
        const { epoch, leader } = decode(m.data) as LeaderAnnouncement;
        const verdict = this.#fence.observe(epoch);
        if (verdict.kind === "newer") this.#newLeader(verdict.previous);
        log.info(`worker ${this.workerId}: coordinator ${leader} leads with epoch ${epoch}`);
        this.heartbeatNow(); // register with it at once
      } catch (error) {
        log.warn(`worker ${this.workerId}: dropping a leader announcement: ${error}`);
      }
    }));
    const beat = () => {
      const hb: Heartbeat = {
        workerId: this.workerId,
        host: Deno.hostname(),
        pid: Deno.pid,
        instance: this.#instance,
        slots: this.slotIds,
        slotThreads: this.#threads.size,
        sentAt: Date.now(),
      };
      try {
        this.#o.transport.publish(HEARTBEAT_SUBJECT, encode(hb));
      } catch (error) {
        log.warn(`worker ${this.workerId}: cannot send a heartbeat: ${error}`);
      }
    };
    this.#beat = beat;
    beat();
    this.#heartbeat = setInterval(beat, this.#o.heartbeatIntervalMs ?? 500);
    log.info(`worker ${this.workerId} started with ${this.slotIds.length} slots`);
  }

  /** Sends a heartbeat now (cluster mode calls it when the NATS connection is back). */
  heartbeatNow(): void {
    this.#beat?.();
  }

  /** Terminates every slot thread and stops heartbeating. */
  close(): void {
    clearInterval(this.#heartbeat);
    for (const s of this.#subscriptions) s.unsubscribe();
    for (const t of this.#threads.values()) t.terminate();
    this.#threads.clear();
  }

  /** Brokers a `MessageChannel` between `thread` and each other live slot thread of `job`. */
  #connectPeers(job: string, slotId: string, thread: SlotThread): void {
    for (const [key, other] of this.#threads) {
      const [otherJob, otherSlot] = splitKey(key);
      if (otherJob !== job || otherSlot === slotId || other.dead) continue;
      if (other.epoch !== thread.epoch) continue; // started by another leader
      const channel = new MessageChannel();
      thread.postPeer({ t: "peer", slotId: otherSlot, port: channel.port1 }, [channel.port1]);
      other.postPeer({ t: "peer", slotId, port: channel.port2 }, [channel.port2]);
    }
  }

  /** Tells the other slot threads of `job` that `slotId`'s thread ended. */
  #peerLost(job: string, slotId: string, thread: SlotThread): void {
    const reason =
      `the slot thread of job ${job} on slot ${slotId} (worker ${this.workerId}) ended`;
    for (const [key, other] of this.#threads) {
      const [otherJob, otherSlot] = splitKey(key);
      if (otherJob !== job || other === thread || otherSlot === slotId) continue;
      if (other.epoch !== thread.epoch) continue; // started by another leader
      other.postPeer({ t: "peer-lost", slotId, reason }, []);
    }
  }

  /**
   * A leader of a higher epoch than `previous` appeared: cancels every
   * subtask in the slot threads an older leader deployed to (Flink fences a
   * deposed JobManager), so they stop writing. The threads stay, with their
   * job module loaded, and run the new leader's deployments.
   */
  #newLeader(previous: number): void {
    const epoch = this.#fence.highest;
    const stale = [...this.#threads].filter(([, t]) => t.epoch < epoch && !t.dead);
    if (previous > 0 || stale.length > 0) {
      log.info(
        `worker ${this.workerId}: leader epoch ${previous} -> ${epoch}; cancelling the subtasks ` +
          `of ${stale.length} slot thread(s) the previous leader deployed to`,
        { name: "leader-epoch-changed", epoch, previous, threads: stale.length },
      );
    }
    for (const [key, thread] of stale) {
      const [job] = splitKey(key);
      // Every attempt of the job: the thread's Worker cancels attempts up to `att`.
      const cancel: WorkerMessage = {
        t: "cancel-attempt",
        job,
        att: Number.MAX_SAFE_INTEGER,
        epoch,
      };
      thread.post(encode(cancel));
      thread.adoptEpoch(epoch);
    }
  }

  #onMessage(slotId: string, msg: WorkerMessage, bytes: Uint8Array): void {
    try {
      subjectToken(msg.job, "job id");
    } catch (error) {
      log.warn(`slot ${slotId}: dropping a ${msg.t} message: ${error}`);
      return;
    }
    let verdict: EpochVerdict;
    try {
      verdict = this.#fence.observe(msg.epoch);
    } catch (error) {
      log.warn(`slot ${slotId}: dropping a ${msg.t} message of job ${msg.job}: ${error}`);
      return;
    }
    if (verdict.kind === "stale") {
      log.warn(
        `slot ${slotId}: refusing a ${msg.t} of job ${msg.job} attempt ${msg.att} from leader ` +
          `epoch ${msg.epoch ?? 0}: the leader is at epoch ${verdict.highest}`,
      );
      return;
    }
    if (verdict.kind === "newer") {
      this.#newLeader(verdict.previous);
      this.heartbeatNow();
    }
    const key = `${msg.job}/${slotId}`;
    let thread = this.#threads.get(key);
    if (msg.t === "release") {
      if (thread) log.debug(`slot ${slotId}: releasing job ${msg.job}`);
      this.#threads.delete(key);
      thread?.release(bytes, this.#o.releaseGraceMs ?? 5000);
      return;
    }
    if (msg.t === "cancel-attempt") {
      if (thread && !thread.dead) return thread.post(bytes);
      // No thread of this job here (never deployed, or ended): nothing of
      // the attempt runs on this slot, so it is cancelled already.
      const done: CoordinatorMessage = {
        t: "attempt-cancelled",
        worker: slotId,
        job: msg.job,
        att: msg.att,
      };
      this.#o.transport.publish(coordinatorSubject(msg.job), encode(done));
      return;
    }
    if (!thread) {
      const created: SlotThread = new SlotThread({
        epoch: this.#fence.highest,
        jobId: msg.job,
        slotId,
        transport: this.#o.transport,
        nats: this.#o.nats,
        startTimeoutMs: this.#o.slotStartTimeoutMs ?? 60_000,
        localRecovery: this.#o.localRecovery === false ? undefined : {
          workerId: this.workerId,
          directory: this.#o.localStateDirectory ?? defaultLocalStateDirectory(),
        },
        onDead: () => {
          if (this.#threads.get(key) === created) this.#threads.delete(key);
          this.#peerLost(msg.job, slotId, created);
        },
      });
      thread = created;
      this.#connectPeers(msg.job, slotId, created);
      this.#threads.set(key, created);
      created.start();
    }
    thread.noteDeploy(msg);
    thread.post(bytes);
  }
}

interface SlotThreadOptions {
  /** The leader epoch that deployed it. */
  readonly epoch: number;
  readonly jobId: string;
  readonly slotId: string;
  readonly transport: Transport;
  readonly nats: SlotLaunch["nats"];
  readonly startTimeoutMs: number;
  readonly onDead: () => void;
  readonly localRecovery: SlotLaunch["localRecovery"];
}

/** One job's Web Worker on one slot. */
class SlotThread {
  readonly #o: SlotThreadOptions;
  #epoch: number;
  #worker: globalThis.Worker | undefined;
  #ready = false;
  #dead = false;
  /** What waits for the thread to be ready, in order, with what each message transfers. */
  readonly #queue: { message: Uint8Array | SlotPeerMessage; transfer: Transferable[] }[] = [];
  #lastDeploy: Extract<WorkerMessage, { t: "deploy" }> | undefined;
  #startTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: SlotThreadOptions) {
    this.#o = options;
    this.#epoch = options.epoch;
  }

  /** The leader epoch whose deployments the thread runs. */
  get epoch(): number {
    return this.#epoch;
  }

  /** The thread's subtasks of older epochs were cancelled: it runs `epoch`'s deployments now. */
  adoptEpoch(epoch: number): void {
    this.#epoch = epoch;
  }

  noteDeploy(msg: Extract<WorkerMessage, { t: "deploy" }>): void {
    this.#lastDeploy = msg;
  }

  /** Fetches the job's spec and starts the thread. */
  start(): void {
    this.#spawn().catch((error) => this.#fail(error));
  }

  async #spawn(): Promise<void> {
    const o = this.#o;
    const reply = await o.transport.request(JOB_SPEC_SUBJECT, encode({ jobId: o.jobId }), {
      timeoutMs: 10_000,
    });
    const answer = decode(reply.data) as JobSpecReply;
    if (!answer.ok) throw new Error(`cannot load job ${o.jobId}: ${answer.error}`);
    if (this.#dead) return;
    const spec = answer.spec;
    const launch: SlotLaunch = {
      jobId: o.jobId,
      slotId: o.slotId,
      args: spec.args,
      fingerprint: spec.fingerprint,
      checkpointBucket: spec.checkpointBucket,
      defaultParallelism: spec.defaultParallelism,
      nats: o.nats,
      ...(o.localRecovery === undefined ? {} : { localRecovery: o.localRecovery }),
    };
    log.info(`slot ${o.slotId}: starting a thread for job ${o.jobId} from ${spec.moduleUrl}`);
    const worker = new globalThis.Worker(spec.moduleUrl, {
      type: "module",
      name: SLOT_NAME_PREFIX + JSON.stringify(launch),
    });
    this.#worker = worker;
    worker.onmessage = (e: MessageEvent<SlotThreadMessage>) => {
      const m = e.data;
      if (m.t === "released") {
        const x = m.exchange;
        log.info(
          `slot ${o.slotId} released job ${o.jobId}: ${x.portMessages} messages ` +
            `(${x.portBytes} bytes) went through ports, ${x.remoteMessages} ` +
            `(${x.remoteBytes} bytes) through NATS`,
        );
        this.terminate();
      } else if (m.t === "ready") {
        clearTimeout(this.#startTimer);
        this.#ready = true;
        for (const q of this.#queue.splice(0)) worker.postMessage(q.message, q.transfer);
      } else if (m.suppressRestarts) {
        const error = new SuppressRestartsError(
          `slot ${o.slotId} cannot run job ${o.jobId} from ${spec.moduleUrl}: ${m.message}`,
        );
        if (m.name !== undefined) error.name = m.name;
        this.#fail(error);
      } else if (m.byJobCode === true && !this.#ready) {
        this.#fail(this.#loadError(spec.moduleUrl, m.message));
      } else {
        this.#fail(new Error(`slot ${o.slotId} cannot run job ${o.jobId}: ${m.message}`));
      }
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault(); // never let a job's error take the worker process down
      const where = e.filename ? ` (${e.filename}:${e.lineno}:${e.colno})` : "";
      // The thread's own "Uncaught (in promise)" prefix says nothing here: the worker caught it.
      const thrown = e.message.replace(/^Uncaught (\(in promise\) )?/, "");
      this.#fail(
        this.#ready
          ? new Error(
            `uncaught error in the slot thread of job ${o.jobId} on slot ${o.slotId}: ` +
              `${thrown}${where}`,
          )
          : this.#loadError(spec.moduleUrl, `${thrown}${where}`),
      );
    };
    this.#startTimer = setTimeout(() => {
      if (!this.#ready) {
        this.#fail(
          new Error(
            `the job module ${spec.moduleUrl} did not call execute() within ` +
              `${o.startTimeoutMs} ms on slot ${o.slotId}`,
          ),
        );
      }
    }, o.startTimeoutMs);
  }

  /** The job module failed while the thread loaded it: a retry cannot fix it (see the module docs). */
  #loadError(moduleUrl: string, reason: string): JobModuleLoadError {
    return new JobModuleLoadError({
      moduleUrl,
      slotId: this.#o.slotId,
      jobId: this.#o.jobId,
      reason,
    });
  }

  /** Whether the thread ended (or never started). */
  get dead(): boolean {
    return this.#dead;
  }

  /** Hands a message to the thread, in order (queued until it is ready). */
  post(bytes: Uint8Array): void {
    if (this.#dead) return;
    if (this.#ready) this.#worker!.postMessage(bytes);
    else this.#queue.push({ message: bytes, transfer: [] });
  }

  /**
   * Hands the thread a peer's port or a peer's end, in order with
   * {@linkcode SlotThread.post}; a dead thread's ports are closed.
   */
  postPeer(message: SlotPeerMessage, transfer: Transferable[]): void {
    if (this.#dead) {
      if (message.t === "peer") message.port.close();
      return;
    }
    if (this.#ready) this.#worker!.postMessage(message, transfer);
    else this.#queue.push({ message, transfer });
  }

  /** Reports the failure to the job's coordinator and ends the thread. */
  #fail(error: unknown): void {
    if (this.#dead) return;
    const o = this.#o;
    log.error(`slot ${o.slotId}: ${error instanceof Error ? error.message : error}`);
    const d = this.#lastDeploy;
    if (d) {
      const msg: CoordinatorMessage = {
        t: "failed",
        job: d.job,
        att: d.att,
        vertex: d.vertex,
        subtask: d.subtask,
        error: errorInfo(error),
      };
      try {
        o.transport.publish(coordinatorSubject(d.job), encode(msg));
      } catch (e) {
        log.warn(`slot ${o.slotId}: cannot report the failure: ${e}`);
      }
    }
    this.terminate();
  }

  /**
   * Hands the thread a `release` so its subtasks close, and terminates it
   * when it says they did, or after `graceMs` (user code stuck in a loop).
   */
  release(bytes: Uint8Array, graceMs: number): void {
    if (this.#dead) return;
    if (!this.#ready) return this.terminate();
    this.#worker!.postMessage(bytes);
    setTimeout(() => this.terminate(), graceMs);
  }

  terminate(): void {
    if (this.#dead) return;
    this.#dead = true;
    clearTimeout(this.#startTimer);
    this.#worker?.terminate();
    for (const q of this.#queue) {
      if (typeof q.message === "object" && "port" in q.message) q.message.port.close();
    }
    this.#queue.length = 0;
    this.#o.onDead();
  }
}

/** `[job, slotId]` of a thread key `<job>/<slotId>` (neither contains `/`). */
function splitKey(key: string): [string, string] {
  const at = key.indexOf("/");
  return [key.slice(0, at), key.slice(at + 1)];
}

function defaultWorkerId(): string {
  const host = Deno.hostname().replace(/[^A-Za-z0-9_-]+/g, "-").slice(0, 24) || "worker";
  const random = [...crypto.getRandomValues(new Uint8Array(2))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${host}-${Deno.pid}-${random}`;
}
