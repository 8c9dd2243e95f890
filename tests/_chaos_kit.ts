/**
 * The fault-making parts of the chaos run (`chaos.ts`): the kill plan, a
 * watch over the run's processes and the coordinator's log, the two ways
 * to kill a worker (externally, or at an armed fault point of
 * `jobs/audit_chaos_job.ts`), and small NATS look-ups.
 *
 * @module
 */

import { delay } from "../runtime/actor/async.ts";
import { connectNats, type NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi, kvApi } from "../runtime/actor/nats_deps.ts";
import type { Proc, TestCluster } from "./_cluster.ts";
import { ARMABLE_POINTS, type ArmablePoint, armFile, firedPrefix } from "./jobs/audit_chaos_job.ts";

/** How a worker was killed. */
export type KillKind = "external" | ArmablePoint;

/** Every {@linkcode KillKind}, in report order. */
export const KILL_KINDS: readonly KillKind[] = ["external", ...ARMABLE_POINTS];

/**
 * The order of the kills: every armed point `max(1, ⌊kills / 6⌋)` times
 * (so at least twice each from 12 kills), external kills for the rest,
 * shuffled.
 */
export function planKills(kills: number, rand: () => number): KillKind[] {
  const each = Math.max(1, Math.floor(kills / 6));
  const plan: KillKind[] = [];
  for (const point of ARMABLE_POINTS) {
    for (let i = 0; i < each && plan.length < kills; i++) {
      plan.push(point);
    }
  }
  while (plan.length < kills) plan.push("external");
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [plan[i], plan[j]] = [plan[j]!, plan[i]!];
  }
  return plan;
}

/** Watches the processes of a run: exits, and the coordinator's log. */
export class Watch {
  readonly #cluster: TestCluster;
  readonly #exited = new Set<Proc>();
  #jobExited = false;

  /** Watches `cluster`'s coordinator and the process `job` that submitted the job. */
  constructor(cluster: TestCluster, job: Proc) {
    this.#cluster = cluster;
    job.child.status.then(() => this.#jobExited = true);
  }

  /** Whether the job's process has exited (the job ended). */
  get jobEnded(): boolean {
    return this.#jobExited;
  }

  /** Notes a worker process to watch for its exit. */
  track(worker: Proc): void {
    worker.child.status.then(() => this.#exited.add(worker));
  }

  /** Workers still running. */
  live(): Proc[] {
    return this.#cluster.workers.filter((w) => !this.#exited.has(w));
  }

  /** Where the coordinators' merged log is now (to wait for what comes after). */
  mark(): number {
    return this.#cluster.coordinatorLog.length;
  }

  /**
   * Waits until the coordinator logs a completed checkpoint after `mark`.
   * @param what names the moment in the timeout's message, e.g. `before kill 3`.
   * @returns false when the job ended first.
   * @throws {Error} after `timeoutMs`.
   */
  async checkpointAfter(mark: number, timeoutMs: number, what: string): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    const completed = /: checkpoints: .* latest #\d+/;
    while (!completed.test(this.#cluster.coordinatorLog.slice(mark))) {
      if (this.#jobExited) return false;
      if (Date.now() > until) {
        throw new Error(`no checkpoint completed within ${timeoutMs} ms ${what}`);
      }
      await delay(50);
    }
    return true;
  }
}

/** SIGKILLs a random live worker that runs a slot thread of the job; returns its name. */
export async function killExternally(
  watch: Watch,
  rand: () => number,
): Promise<string | undefined> {
  const live = watch.live();
  const busy = live.filter((w) => /starting a thread for job/.test(w.output));
  const pool = busy.length > 0 ? busy : live;
  const victim = pool[Math.floor(rand() * pool.length)];
  if (victim === undefined) return undefined;
  await victim.kill("SIGKILL");
  return `worker ${victim.name}`;
}

/**
 * Arms `point` and waits for a worker to kill itself there. Disarms after
 * 30 s without a kill (the job may be between attempts, or have ended).
 * @returns the worker and the fault site, or undefined when it did not fire.
 */
export async function killArmed(
  watch: Watch,
  dir: string,
  point: ArmablePoint,
): Promise<string | undefined> {
  const before = new Set(watch.live());
  await Deno.writeTextFile(armFile(dir, point), "");
  const until = Date.now() + 30_000;
  for (;;) {
    const fired = [...Deno.readDirSync(dir)].find((e) => e.name.startsWith(firedPrefix(point)));
    if (fired !== undefined) {
      // Claimed: the claiming worker is SIGKILLing itself.
      Deno.removeSync(`${dir}/${fired.name}`);
      const pid = Number(fired.name.slice(firedPrefix(point).length).split("-")[0]);
      const site = fired.name.slice(firedPrefix(point).length);
      const victim = [...before].find((w) => w.child.pid === pid);
      if (victim === undefined) return `an unknown process (pid ${pid}) at ${site}`;
      await victim.endWithin(30_000); // a worker that claimed the kill is SIGKILLing itself
      return `worker ${victim.name} at ${site}`;
    }
    if (watch.jobEnded || Date.now() > until) {
      try {
        Deno.removeSync(armFile(dir, point));
        return undefined;
      } catch {
        continue; // claimed just now
      }
    }
    await delay(20);
  }
}

/** Messages in the sink stream now (committed or not), or -1 when NATS cannot tell. */
export async function sinkMessages(
  connection: NatsConnectionOptions,
  stream: string,
): Promise<number> {
  try {
    const nc = await connectNats({ ...connection, connectTimeoutMs: 2000 });
    try {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      return (await jsm.streams.info(stream)).state.messages;
    } finally {
      await nc.close();
    }
  } catch {
    return -1;
  }
}

/** Transactions in state `open` in the sink's KV bucket. */
export async function countOpenTransactions(
  connection: NatsConnectionOptions,
  bucket: string,
): Promise<number> {
  const nc = await connectNats(connection);
  try {
    const kv = await new kvApi.Kvm(nc).open(bucket);
    let open = 0;
    for await (const key of await kv.keys("txn.>")) {
      const entry = await kv.get(key);
      if (entry !== null && entry.json<{ state: string }>().state === "open") open++;
    }
    return open;
  } finally {
    await nc.close();
  }
}

export async function deleteStreams(
  connection: NatsConnectionOptions,
  streams: string[],
): Promise<void> {
  try {
    const nc = await connectNats({ ...connection, connectTimeoutMs: 2000 });
    try {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      for (const s of streams) await jsm.streams.delete(s).catch(() => {});
    } finally {
      await nc.close();
    }
  } catch {
    // the server is gone: its store directory goes with it
  }
}
