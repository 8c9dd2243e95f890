/**
 * The NATS servers of the tests: the shared one, at {@linkcode TEST_NATS_URL},
 * and private `nats-server` processes for tests that need a server of their
 * own (with credentials, or one to stop, kill and restart mid-run, as the
 * cluster and chaos tests do).
 *
 * Tests that need only core NATS or JetStream use the shared server. Its URL
 * comes from one environment variable, `WEIR_TEST_NATS_URL` (default
 * `nats://127.0.0.1:4222`); `deno task test` (`tests/_with_nats.ts`) starts
 * one there when none answers.
 *
 * A private server listens on 127.0.0.1 (or `host`) on a free port (or `port`) and keeps
 * its JetStream store and log in a temporary directory (or in `storeDir`,
 * when given), which {@linkcode NatsServerHandle.stop} removes. Its binary is
 * `nats-server` on `PATH`, else Debian's `/usr/sbin/nats-server`
 * ({@linkcode findNatsServerBinary}).
 *
 * ```ts ignore
 * const server = await startNatsServer({ jetstream: true });
 * try {
 *   const nc = await connectNats({ servers: server.url });
 *   // ...
 *   await server.kill();    // SIGKILL, as a crash
 *   await server.restart(); // same port and store; resolves once it accepts connections
 * } finally {
 *   await server.stop();
 * }
 * ```
 *
 * @module
 */

import { delay } from "../runtime/actor/async.ts";

/** The URL of the shared server when `WEIR_TEST_NATS_URL` is unset or empty. */
export const DEFAULT_TEST_NATS_URL = "nats://127.0.0.1:4222";

/**
 * The shared NATS server (with JetStream) of the tests: `WEIR_TEST_NATS_URL`,
 * default {@linkcode DEFAULT_TEST_NATS_URL}. Every test that uses the shared
 * server takes its URL from here.
 */
export const TEST_NATS_URL: string = Deno.env.get("WEIR_TEST_NATS_URL") || DEFAULT_TEST_NATS_URL;

/** Where Debian's `nats-server` package installs the binary (not on a user's `PATH`). */
const DEBIAN_BINARY = "/usr/sbin/nats-server";

/**
 * Finds the `nats-server` binary: the first `nats-server` file on `PATH`,
 * else `/usr/sbin/nats-server` (Debian's package).
 *
 * @returns Its path, or `undefined` when there is none.
 */
export function findNatsServerBinary(): string | undefined {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir !== "");
  for (const candidate of [...dirs.map((dir) => `${dir}/nats-server`), DEBIAN_BINARY]) {
    try {
      if (Deno.statSync(candidate).isFile) return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** What to install when {@linkcode findNatsServerBinary} finds nothing. */
export const INSTALL_HINT: string =
  "install it (Debian/Ubuntu: `apt-get install nats-server`; elsewhere a release " +
  "from https://github.com/nats-io/nats-server/releases) so that `nats-server` is on PATH";

/**
 * The `nats-server` binary ({@linkcode findNatsServerBinary}).
 *
 * @returns Its path.
 * @throws {Error} naming the places searched and what to install, when there is none.
 */
export function natsServerBinary(): string {
  const binary = findNatsServerBinary();
  if (binary === undefined) {
    throw new Error(
      `Cannot start a NATS server as no nats-server binary is on PATH or at ${DEBIAN_BINARY}: ` +
        INSTALL_HINT,
    );
  }
  return binary;
}

/** How long a server may take to accept TCP connections after it is started, in ms. */
const STARTUP_TIMEOUT_MS = 10_000;

/** Options of {@linkcode startNatsServer}. */
export interface NatsServerOptions {
  /** Enable JetStream (`-js`). Default false. */
  readonly jetstream?: boolean;
  /**
   * The JetStream store directory (`-sd`). Default: a temporary directory,
   * removed by `stop()`. A given directory is left in place.
   */
  readonly storeDir?: string;
  /** More arguments for nats-server, e.g. `["--user", "u", "--pass", "p"]`. */
  readonly args?: readonly string[];
  /** The port to listen on. Default: a free port (tried again when another process takes it). */
  readonly port?: number;
  /**
   * The IPv4 address to listen on (`-a`), which must be one of this host's.
   * Default `127.0.0.1`. `tests/_netns.ts` gives the address of a bridge that
   * network namespaces (simulated hosts) reach.
   */
  readonly host?: string;
}

/** A running private nats-server; see {@linkcode startNatsServer}. */
export interface NatsServerHandle {
  /** `nats://<host>:<port>` (host default `127.0.0.1`). */
  readonly url: string;
  /** The TCP port it listens on. */
  readonly port: number;
  /** Its JetStream store directory. */
  readonly storeDir: string;
  /**
   * Stops it with SIGTERM (when running), waits for the process to exit, and
   * removes the temporary directory. Idempotent; call it in `finally`.
   */
  stop(): Promise<void>;
  /** Kills it with SIGKILL (a crash) and waits for the process to exit; the store is kept. */
  kill(): Promise<void>;
  /**
   * Stops it with SIGTERM if it is running, then starts it again on the same
   * port with the same store, and resolves once it accepts TCP connections.
   *
   * @throws {Error} after `stop()`, or when it does not start (with its log).
   */
  restart(): Promise<void>;
}

/**
 * Starts a nats-server on 127.0.0.1 (or `options.host`), on a free port or `options.port`, and
 * resolves once it accepts TCP connections.
 *
 * @param options JetStream, store directory, port and extra arguments.
 * @returns A handle to stop, kill or restart it.
 * @throws {Error} with the server's log when it exits or does not accept
 * connections within 10 s; when no binary is found ({@linkcode natsServerBinary}).
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const binary = natsServerBinary();
  const dir = await Deno.makeTempDir({ prefix: "weir-nats-" });
  const storeDir = options.storeDir ?? `${dir}/store`;
  const logFile = `${dir}/nats.log`;
  const host = options.host ?? "127.0.0.1";
  const argsFor = (port: number) => [
    "-a",
    host,
    "-p",
    String(port),
    "-l",
    logFile,
    ...(options.jetstream ? ["-js", "-sd", storeDir] : []),
    ...(options.args ?? []),
  ];
  let process: Deno.ChildProcess | undefined;
  let port = 0;
  try {
    // Another process may take the free port before the server binds it: try a few.
    for (let attempt = 0;; attempt++) {
      port = options.port ?? freePort(host);
      try {
        process = await launch(binary, argsFor(port), { host, port }, logFile);
        break;
      } catch (error) {
        const retry = options.port === undefined && attempt < 4 &&
          /address already in use/i.test(String(error));
        if (!retry) throw error;
      }
    }
  } catch (error) {
    await Deno.remove(dir, { recursive: true });
    throw error;
  }
  let stopped = false;
  const halt = async (signal: Deno.Signal) => {
    const running = process;
    process = undefined;
    if (running === undefined) return;
    try {
      running.kill(signal);
    } catch {
      // already exited
    }
    await running.status;
  };
  return {
    url: `nats://${host}:${port}`,
    port,
    storeDir,
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt("SIGTERM");
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
    kill: () => halt("SIGKILL"),
    async restart() {
      if (stopped) {
        throw new Error(`Cannot restart the nats-server of port ${port}: it was stopped`);
      }
      await halt("SIGTERM");
      process = await launch(binary, argsFor(port), { host, port }, logFile);
    },
  };
}

/** A port of `hostname` that was free a moment ago. */
function freePort(hostname: string): number {
  const listener = Deno.listen({ hostname, port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Spawns `binary` and waits until `host:port` accepts connections. */
async function launch(
  binary: string,
  args: string[],
  { host, port }: { host: string; port: number },
  logFile: string,
): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(binary, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => exited = status);
  const start = performance.now();
  while (true) {
    if (exited !== undefined) {
      throw new Error(
        `${binary} ${args.join(" ")} exited with code ${exited.code} before accepting ` +
          `connections on port ${port}; its log:\n${await readLog(logFile)}`,
      );
    }
    try {
      const conn = await Deno.connect({ hostname: host, port });
      conn.close();
      return child;
    } catch {
      // not listening yet
    }
    if (performance.now() - start > STARTUP_TIMEOUT_MS) {
      child.kill("SIGKILL");
      await child.status;
      throw new Error(
        `${binary} ${args.join(" ")} did not accept connections on port ${port} within ` +
          `${STARTUP_TIMEOUT_MS} ms; its log:\n${await readLog(logFile)}`,
      );
    }
    await delay(20);
  }
}

async function readLog(logFile: string): Promise<string> {
  try {
    return (await Deno.readTextFile(logFile)).slice(-4_000);
  } catch (error) {
    return `(no log: ${error instanceof Error ? error.message : error})`;
  }
}
