/**
 * Shared parts of the cluster-mode benchmarks (`cluster_channel.ts`,
 * `cluster_keyed_sum.ts`): a NATS server of their own, a coordinator and
 * worker processes started with `cli.ts`, job modules run as client
 * processes, and summaries of CPU profiles. Rounds, medians and CPU time are
 * `_rounds.ts`'s.
 *
 * Every process started here is a child of the benchmark and is stopped by
 * the `stop()` of what started it (SIGTERM, then SIGKILL after 5 s); call it
 * in `finally`.
 *
 * @module
 */

import { join } from "node:path";
import { Proc, REPO_ROOT } from "../tests/_cluster.ts";
import { startNatsServer } from "../tests/_nats_server.ts";
import { connect, objApi } from "../runtime/actor/nats_deps.ts";

/** The NATS server a benchmark talks to. */
export interface BenchNats {
  /** Its URL. */
  readonly url: string;
  /** Whether the benchmark started it (a private server) rather than being given `--nats`. */
  readonly private: boolean;
  /** Stops a private server (removing its store); does nothing for a given one. */
  stop(): Promise<void>;
}

/**
 * The server at `url` when given, else a private nats-server with JetStream
 * on a free port (so the benchmark neither loads nor is disturbed by a
 * shared server).
 * @throws {Error} with the server's log when a private server does not start.
 */
export async function benchNats(url: string | undefined): Promise<BenchNats> {
  if (url !== undefined) return { url, private: false, stop: () => Promise.resolve() };
  const server = await startNatsServer({ jetstream: true });
  return { url: server.url, private: true, stop: () => server.stop() };
}

/** Options of {@linkcode BenchCluster}. */
export interface BenchClusterOptions {
  /** NATS URL. */
  readonly nats: string;
  /** Worker processes. */
  readonly workers: number;
  /** Slots per worker. */
  readonly slots: number;
  /**
   * When set, each worker process runs with `--cpu-prof --cpu-prof-dir <dir>/w<i>`
   * and writes its V8 CPU profile there when it stops.
   */
  readonly cpuProfileDir?: string | undefined;
  /** Extra environment variables of every process. */
  readonly env?: Record<string, string>;
}

/** Stops a child with SIGTERM, and SIGKILL if it is still running 5 s later. */
async function stopProc(p: Proc): Promise<void> {
  try {
    p.child.kill("SIGTERM");
  } catch {
    // already gone
  }
  const timer = setTimeout(() => {
    try {
      p.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }, 5000);
  await p.wait();
  clearTimeout(timer);
}

/**
 * A coordinator and worker processes (`cli.ts coordinator` and `cli.ts
 * worker`) with a checkpoint bucket of their own, which `stop()` deletes.
 * Worker ids sort in start order (`bench-w0-<pid>`, `bench-w1-<pid>`, ...),
 * so the coordinator's round-robin deployment puts the job's first subtask on
 * worker 0 and the second on worker 1.
 */
export class BenchCluster {
  /** The options it was made with. */
  readonly options: BenchClusterOptions;
  /** The checkpoint bucket (`weir-bench-chk-<random>`). */
  readonly bucket: string = `weir-bench-chk-${crypto.randomUUID().slice(0, 8)}`;
  /** The coordinator process, once started. */
  coordinator: Proc | undefined;
  /** The worker processes, in start order. */
  readonly workers: Proc[] = [];

  /** Keeps the options; nothing starts before {@linkcode BenchCluster.start}. */
  constructor(options: BenchClusterOptions) {
    this.options = options;
  }

  /**
   * Starts the coordinator, then the workers one by one; resolves once all
   * are up.
   * @throws {Error} with the process's output when one exits or says nothing within 60 s.
   */
  async start(): Promise<void> {
    const o = this.options;
    const cli = join(REPO_ROOT, "cli.ts");
    this.coordinator = new Proc(
      "coordinator",
      ["run", "-A", cli, "coordinator", "--nats", o.nats, "--checkpoint-bucket", this.bucket],
      o.env,
    );
    await this.coordinator.waitFor(/weir coordinator: listening/);
    for (let i = 0; i < o.workers; i++) {
      const prof = o.cpuProfileDir === undefined
        ? []
        : ["--cpu-prof", "--cpu-prof-dir", join(o.cpuProfileDir, `w${i}`)];
      const worker = new Proc(`w${i}`, [
        "run",
        "-A",
        ...prof,
        cli,
        "worker",
        "--nats",
        o.nats,
        "--slots",
        String(o.slots),
        "--id",
        `bench-w${i}-${Deno.pid}`,
      ], o.env);
      this.workers.push(worker);
      await worker.waitFor(/weir worker .*slots/);
    }
    // The coordinator learns of a worker from its first heartbeat: wait until it knows them all.
    const until = Date.now() + 30_000;
    while (true) {
      const listing = await runDeno("list", ["run", "-A", cli, "list", "--nats", o.nats, "--json"]);
      const json = listing.split("\n").find((l) => l.startsWith("{"));
      if (json === undefined) throw new Error(`cli.ts list --json printed no JSON:\n${listing}`);
      const overview = JSON.parse(json) as { workers: unknown[] };
      if (overview.workers.length >= o.workers) return;
      if (Date.now() > until) {
        throw new Error(`the coordinator knows ${overview.workers.length} of ${o.workers} workers`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The pid of worker `i`'s process. */
  workerPid(i: number): number {
    return this.workers[i]!.child.pid;
  }

  /**
   * Stops the workers and the coordinator (SIGTERM, then SIGKILL) and deletes
   * the checkpoint bucket.
   */
  async stop(): Promise<void> {
    await Promise.all(this.workers.map(stopProc));
    if (this.coordinator !== undefined) await stopProc(this.coordinator);
    const nc = await connect({ servers: this.options.nats });
    try {
      await (await new objApi.Objm(nc).open(this.bucket)).destroy();
    } catch {
      // never created
    } finally {
      await nc.close();
    }
  }

  /** Everything the processes printed, for failure messages. */
  logs(): string {
    return [this.coordinator, ...this.workers].filter((p) => p !== undefined)
      .map((p) => `----- ${p!.name}\n${p!.output}`).join("\n");
  }
}

/**
 * Waits for `p` to exit, killing it (SIGKILL) after `timeoutMs`.
 * @returns its exit status.
 * @throws {Error} with its output when it had to be killed.
 */
export async function waitOrKill(p: Proc, timeoutMs: number): Promise<Deno.CommandStatus> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      p.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }, timeoutMs);
  try {
    const status = await p.wait();
    if (timedOut) throw new Error(`${p.name} did not end within ${timeoutMs} ms:\n${p.output}`);
    return status;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `deno <args...>` from the repository's root to its end.
 * @param timeoutMs after this long the process is killed. Default 300 000.
 * @returns what it printed (stdout and stderr).
 * @throws {Error} with that output when it exits with a non-zero code or is killed.
 */
export async function runDeno(name: string, args: string[], timeoutMs = 300_000): Promise<string> {
  const p = new Proc(name, args);
  const status = await waitOrKill(p, timeoutMs);
  if (status.code !== 0) {
    throw new Error(`${name} (deno ${args.join(" ")}) exited with ${status.code}:\n${p.output}`);
  }
  return p.output;
}

/**
 * The JSON after `RESULT ` on the last such line of `output`.
 * @throws {Error} quoting the output when there is none.
 */
export function parseResultLine<T>(output: string): T {
  const line = output.split("\n").findLast((l) => l.startsWith("RESULT "));
  if (line === undefined) throw new Error(`no RESULT line in:\n${output}`);
  return JSON.parse(line.slice("RESULT ".length)) as T;
}

/**
 * What the CPU figures of a cluster benchmark cover (`readCpu()` of
 * `_rounds.ts` in the benchmark process: itself and every process it
 * started), for its report.
 */
export function cpuScope(nats: BenchNats): string {
  return "CPU: all processes of the run (benchmark, coordinator, workers, clients" +
    (nats.private ? ", the private NATS server)" : "; not the NATS server, given by --nats)") +
    ", start-up included";
}

/** One function's share of a CPU profile. */
export interface ProfileEntry {
  /** `name (url:line)`. */
  readonly fn: string;
  /** Self time, in ms. */
  readonly selfMs: number;
  /** Share of all samples of the profile, in percent. */
  readonly percent: number;
}

interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
  }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * The functions with the most self time in each `.cpuprofile` file under
 * `dir` (V8's format, as `deno run --cpu-prof` writes it: one file per
 * thread, so a worker process's slot threads each have their own), by file.
 * `(idle)` is time the thread waited for events; `op_worker_maybe_wait_for_debugger`
 * is a Web Worker waiting for its next `postMessage`.
 * @param top how many functions per file.
 */
export async function summarizeCpuProfiles(
  dir: string,
  top = 12,
): Promise<Map<string, ProfileEntry[]>> {
  const out = new Map<string, ProfileEntry[]>();
  const files: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const path = join(d, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".cpuprofile")) files.push(path);
    }
  };
  await walk(dir);
  for (const file of files.sort()) {
    const profile = JSON.parse(await Deno.readTextFile(file)) as CpuProfile;
    const frameOf = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    const selfUs = new Map<string, number>();
    let total = 0;
    profile.samples.forEach((id, i) => {
      const delta = profile.timeDeltas[i] ?? 0;
      const frame = frameOf.get(id)!;
      const where = frame.url === ""
        ? ""
        : ` (${frame.url.split("/").slice(-2).join("/")}:${frame.lineNumber + 1})`;
      const fn = `${frame.functionName || "(anonymous)"}${where}`;
      selfUs.set(fn, (selfUs.get(fn) ?? 0) + delta);
      total += delta;
    });
    out.set(
      file,
      [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, top).map(([fn, us]) => ({
        fn,
        selfMs: us / 1000,
        percent: total > 0 ? (100 * us) / total : 0,
      })),
    );
  }
  return out;
}

/** Prints {@linkcode summarizeCpuProfiles} of `dir`, one line per function. */
export async function printCpuProfiles(dir: string): Promise<void> {
  for (const [file, entries] of await summarizeCpuProfiles(dir)) {
    console.log(`top self time in ${file}:`);
    for (const e of entries) {
      console.log(
        `  ${e.percent.toFixed(1).padStart(5)}% ${e.selfMs.toFixed(0).padStart(6)} ms  ${e.fn}`,
      );
    }
  }
}
