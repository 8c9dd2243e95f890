/**
 * Test support for cluster mode: serves the repository over HTTP (so jobs
 * and Weir are imported by `http://` URLs, as from another host), and starts
 * a coordinator and worker processes with `cli.ts`, which a test can kill
 * with SIGKILL and restart.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { dirname, extname, join, normalize } from "node:path";
import { connect, objApi } from "../runtime/actor/nats_deps.ts";
import { deadline, DeadlineError } from "../runtime/actor/async.ts";

/** The repository's root directory. */
export const REPO_ROOT: string = dirname(dirname(fileURLToPath(import.meta.url)));

/** A running HTTP server of a directory. */
export interface FileServer {
  /** Base URL, ending with `/`. */
  readonly url: string;
  /** Stops serving. */
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  ".ts": "application/typescript",
  ".js": "application/javascript",
  ".json": "application/json",
  ".csv": "text/csv",
};

/**
 * Serves `root` read-only on 127.0.0.1 at a free port, under a path prefix
 * unique to this server (`http://127.0.0.1:<port>/<nonce>/`).
 *
 * The prefix matters: Deno caches remote modules by URL for good (only
 * `--reload` of everything refreshes a dynamic import), and ports are reused
 * across test runs, so without it a worker could import a module cached by an
 * earlier run of older code (seen: a slot thread mixing this commit's
 * connectors with an older runtime). Requests outside the prefix get 404.
 */
export function serveDirectory(root: string = REPO_ROOT): FileServer {
  const nonce = `r${crypto.randomUUID().replaceAll("-", "")}`;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const requested = decodeURIComponent(new URL(req.url).pathname);
    if (!requested.startsWith(`/${nonce}/`)) return new Response("not found", { status: 404 });
    const path = normalize(requested.slice(nonce.length + 1));
    if (path.includes("..")) return new Response("bad path", { status: 400 });
    try {
      const body = await Deno.readFile(join(root, path));
      return new Response(body, {
        headers: { "content-type": TYPES[extname(path)] ?? "application/octet-stream" },
      });
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/${nonce}/`,
    close: () => server.shutdown(),
  };
}

/** A child process with its output collected. */
export class Proc {
  /** Its name in messages, e.g. `"coordinator"` or `"w0"`. */
  readonly name: string;
  /** The running process (to send signals, or read its pid). */
  readonly child: Deno.ChildProcess;
  #out = "";
  readonly #done: Promise<Deno.CommandStatus>;
  readonly #pumps: Promise<void>[];

  /**
   * Starts `deno <args>` (with `--no-lock` after `run`) in the repository's root.
   *
   * @param name Its name in messages.
   * @param args Arguments of `deno`, e.g. `["run", "-A", "cli.ts", "worker"]`.
   * @param env More environment variables.
   * @param launcher A command that starts `deno` for it, e.g. `["ip", "netns",
   *   "exec", "<namespace>"]` to run it in a network namespace
   *   (`tests/_netns.ts`); default none: `deno` is started directly. The
   *   launcher must exec `deno` in place (as `ip netns exec` does), so the
   *   child's pid and signals are deno's.
   */
  constructor(
    name: string,
    args: string[],
    env: Record<string, string> = {},
    launcher: readonly string[] = [],
  ) {
    this.name = name;
    // No lockfile: modules served over HTTP on a random port must not pile up in deno.lock.
    const denoArgs = args[0] === "run" ? ["run", "--no-lock", ...args.slice(1)] : args;
    const [command, ...launcherArgs] = [...launcher, Deno.execPath()];
    this.child = new Deno.Command(command!, {
      args: [...launcherArgs, ...denoArgs],
      cwd: REPO_ROOT,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) this.#out += chunk;
    };
    this.#pumps = [pump(this.child.stdout), pump(this.child.stderr)];
    this.#done = this.child.status;
  }

  /** Everything the process printed so far (stdout and stderr interleaved by arrival). */
  get output(): string {
    return this.#out;
  }

  /** Resolves with the exit status once the process ended and its output was read. */
  async wait(): Promise<Deno.CommandStatus> {
    const status = await this.#done;
    await Promise.all(this.#pumps);
    return status;
  }

  /**
   * Like {@linkcode Proc.wait}, but a process still running after `timeoutMs`
   * is killed (SIGKILL) and the wait fails, so a test never hangs on it.
   *
   * @param timeoutMs How long it may run on, in ms.
   * @returns Its exit status.
   * @throws {Error} naming the process and the timeout, with its output, when
   * it did not end in time.
   */
  async endWithin(timeoutMs: number): Promise<Deno.CommandStatus> {
    try {
      return await deadline(this.wait(), timeoutMs, `${this.name} ending`);
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      await this.kill();
      throw new Error(
        `${this.name} did not end within ${timeoutMs} ms (killed); its output:\n${this.#out}`,
        { cause: error },
      );
    }
  }

  /** Sends `signal` (default SIGKILL) and waits for the end. */
  async kill(signal: Deno.Signal = "SIGKILL"): Promise<void> {
    try {
      this.child.kill(signal);
    } catch {
      // already gone
    }
    await this.wait();
  }

  /** Resolves when the output matches `pattern`; rejects after `timeoutMs` or on exit. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    let exited = false;
    this.#done.then(() => exited = true);
    while (!pattern.test(this.#out)) {
      if (exited) throw new Error(`${this.name} exited before printing ${pattern}:\n${this.#out}`);
      if (Date.now() > until) {
        throw new Error(
          `${this.name} did not print ${pattern} within ${timeoutMs} ms:\n${this.#out}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Options of {@linkcode startCluster}. */
export interface ClusterOptions {
  /** NATS URL. */
  readonly nats: string;
  /** Number of worker processes. Default 2. */
  readonly workers?: number;
  /** Slots per worker. Default 2. */
  readonly slots?: number;
  /** Checkpoint bucket; default a unique one (deleted by `stop`). */
  readonly checkpointBucket?: string;
  /** Heartbeat timeout of the coordinator, in ms. Default 3000 (the product default: a loaded CI machine can stall a worker for over a second). */
  readonly heartbeatTimeoutMs?: number;
  /** Extra environment variables of every process (e.g. `WEIR_LOG_LEVEL`). */
  readonly env?: Record<string, string>;
  /** Extra arguments of every `cli.ts worker` (e.g. `--local-state-dir DIR`). */
  readonly workerArgs?: readonly string[];
  /**
   * Coordinator processes started by `start` (high availability: one leads,
   * the others stand by). Default 1.
   */
  readonly coordinators?: number;
  /** Extra arguments of every `cli.ts coordinator` (e.g. `--lease-ms 2000`). */
  readonly coordinatorArgs?: readonly string[];
}

/** A coordinator and workers, each a `cli.ts` process. */
export class TestCluster {
  /** The options it was made with. */
  readonly options: ClusterOptions;
  /** The checkpoint bucket of the coordinator. */
  readonly bucket: string;
  /** The first coordinator process, once {@linkcode TestCluster.start} ran. */
  coordinator!: Proc;
  /** Every coordinator process started, in order (killed ones included). */
  readonly coordinators: Proc[] = [];
  readonly #exited = new Set<Proc>();
  #coordinatorLog = "";
  readonly #logged = new Map<Proc, number>();
  /** Every worker process started, in order (killed ones included). */
  readonly workers: Proc[] = [];
  #started = 0;

  /**
   * Makes a cluster that is not started yet.
   *
   * @param options NATS URL, workers, slots, bucket, heartbeat timeout, environment.
   */
  constructor(options: ClusterOptions) {
    this.options = options;
    this.bucket = options.checkpointBucket ??
      `weir-test-chk-${crypto.randomUUID().slice(0, 8)}`;
  }

  #cli(...args: string[]): string[] {
    return ["run", "-A", join(REPO_ROOT, "cli.ts"), ...args, "--nats", this.options.nats];
  }

  /** Starts the coordinator(s) and the workers; resolves once all are up. */
  async start(): Promise<void> {
    this.coordinator = await this.startCoordinator();
    for (let i = 1; i < (this.options.coordinators ?? 1); i++) await this.startCoordinator();
    await Promise.all(
      Array.from({ length: this.options.workers ?? 2 }, () => this.startWorker()),
    );
  }

  /**
   * Starts one more coordinator process; resolves once it leads or stands by.
   * @returns the process.
   */
  async startCoordinator(): Promise<Proc> {
    const n = this.coordinators.length;
    const proc = new Proc(
      n === 0 ? "coordinator" : `coordinator${n}`,
      this.#cli(
        "coordinator",
        "--checkpoint-bucket",
        this.bucket,
        "--heartbeat-timeout",
        String(this.options.heartbeatTimeoutMs ?? 3000),
        ...(this.options.coordinatorArgs ?? []),
      ),
      this.options.env,
    );
    this.coordinators.push(proc);
    proc.child.status.then(() => this.#exited.add(proc));
    await proc.waitFor(/weir coordinator: listening/);
    return proc;
  }

  /** The live coordinator process whose latest role line says it leads, if any. */
  leader(): Proc | undefined {
    return this.coordinators.find((p) => {
      if (this.#exited.has(p)) return false;
      const roles = p.output.match(/weir coordinator: (leading|standby|no longer leading)/g);
      return roles !== null && roles.at(-1) === "weir coordinator: leading";
    });
  }

  /**
   * Every coordinator's output, merged line by line as it is read
   * (append-only, so an offset into it marks a moment across leader changes).
   */
  get coordinatorLog(): string {
    for (const p of this.coordinators) {
      const out = p.output;
      const from = this.#logged.get(p) ?? 0;
      const end = out.lastIndexOf("\n") + 1;
      if (end > from) {
        this.#coordinatorLog += out.slice(from, end);
        this.#logged.set(p, end);
      }
    }
    return this.#coordinatorLog;
  }

  /**
   * Starts one more worker process; resolves once it is connected.
   * @param workerId the worker's id (default `w<n>-<pid>`); give a killed
   *   worker's id to restart it as the same worker (local recovery).
   */
  async startWorker(workerId?: string): Promise<Proc> {
    const id = `w${this.#started++}`;
    const worker = new Proc(
      id,
      this.#cli(
        "worker",
        "--slots",
        String(this.options.slots ?? 2),
        "--id",
        workerId ?? `${id}-${Deno.pid}`,
        ...(this.options.workerArgs ?? []),
      ),
      this.options.env,
    );
    this.workers.push(worker);
    await worker.waitFor(/weir worker .*slots/);
    return worker;
  }

  /** Runs `cli.ts <args...> --nats URL` to its end (killed and failed after 60 s). */
  async cli(...args: string[]): Promise<{ code: number; output: string }> {
    const p = new Proc(`cli ${args[0]}`, this.#cli(...args), this.options.env);
    const status = await p.endWithin(60_000);
    return { code: status.code, output: p.output };
  }

  /** Stops every process (SIGTERM, then SIGKILL) and deletes the checkpoint bucket. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.workers, ...this.coordinators].map(async (p) => {
        try {
          p.child.kill("SIGTERM");
        } catch {
          // gone
        }
        const timer = setTimeout(() => {
          try {
            p.child.kill("SIGKILL");
          } catch {
            // gone
          }
        }, 5000);
        await p.wait();
        clearTimeout(timer);
      }),
    );
    if (this.options.checkpointBucket === undefined) {
      const nc = await connect({ servers: this.options.nats });
      try {
        const store = await new objApi.Objm(nc).open(this.bucket);
        await store.destroy();
      } catch {
        // never created
      } finally {
        await nc.close();
      }
    }
  }

  /** Everything the processes printed, for failure messages. */
  logs(): string {
    return [...this.coordinators, ...this.workers]
      .map((p) => `----- ${p.name}\n${p.output}`).join("\n");
  }
}
