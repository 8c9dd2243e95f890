/**
 * A private PostgreSQL server for tests that need prepared transactions (the
 * shared server at 127.0.0.1:5432 runs with `max_prepared_transactions = 0`)
 * or a server to stop and restart mid-test.
 *
 * {@linkcode startPostgresServer} runs `initdb` into a temporary directory
 * and `pg_ctl start` on a free port of 127.0.0.1, with
 * `max_prepared_transactions`, its Unix socket in that directory, and
 * `fsync=off` (a test server survives process restarts and crashes, not
 * power loss). `initdb` refuses to run as root, so as root every server
 * command runs as the `postgres` system user (through `runuser`, which the
 * Debian packages' setup has), with the directory handed to that user.
 * The binaries come from `/usr/lib/postgresql/<version>/bin` (the newest
 * version there), else `PATH`.
 *
 * Start-up (`initdb` and the first start) took 0.6–2.2 s here, depending
 * on the machine's load (`startupMs` tells): start one server per test
 * file, not per test, and give each test its own tables.
 *
 * ```ts ignore
 * const server = await startPostgresServer();
 * try {
 *   const sql = postgres(server.url);
 *   // ...
 *   await server.restart(); // same port and data; resolves once it accepts connections
 * } finally {
 *   await server.stop(); // stops it and removes its directory
 * }
 * ```
 *
 * ## Invariants
 *
 * - A server that fails to start is stopped and its directory removed
 *   before the error (which holds the server log's tail) is thrown.
 * - Every wait has a deadline (`pg_ctl -w -t`): a server that never gets
 *   ready fails the test instead of hanging it.
 *
 * @module
 */

/** Options of {@linkcode startPostgresServer}. */
export interface PostgresServerOptions {
  /** `max_prepared_transactions` of the server. Default 16. */
  readonly maxPreparedTransactions?: number;
  /** How long `pg_ctl` may wait for the server to start or stop, in seconds. Default 60. */
  readonly timeoutSeconds?: number;
}

/** How {@linkcode PostgresServerHandle.restart} stops the server first. */
export type PostgresStopMode = "fast" | "immediate";

/** A running private server. */
export interface PostgresServerHandle {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string;
  /** The TCP port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** The server's temporary directory (data, log, socket); removed by `stop`. */
  readonly directory: string;
  /** Milliseconds `initdb` plus the first start took. */
  readonly startupMs: number;
  /**
   * Stops the server (`"fast"`: clean shutdown, connections ended;
   * `"immediate"`: like a crash, recovery from the WAL at the next start)
   * and starts it again on the same port with the same data.
   * @throws {Error} with the server log's tail when it does not come back.
   */
  restart(mode?: PostgresStopMode): Promise<void>;
  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /**
   * {@linkcode stop}, blocking: for an `unload` listener, which cannot
   * await (a test file whose tests share one server). Idempotent.
   */
  stopSync(): void;
}

/**
 * Starts a private PostgreSQL server (see the module docs).
 * @returns its handle; call `stop()` in a `finally`.
 * @throws {Error} naming the command that failed, with its output and the
 *   server log's tail; {@linkcode Deno.errors.NotFound} when no `initdb`
 *   is installed.
 */
export async function startPostgresServer(
  options: PostgresServerOptions = {},
): Promise<PostgresServerHandle> {
  const maxPrepared = options.maxPreparedTransactions ?? 16;
  const timeoutSeconds = options.timeoutSeconds ?? 60;
  const bin = postgresBinDir();
  const started = performance.now();
  const dir = await Deno.makeTempDir({ prefix: "weir-pg-" });
  const dataDir = `${dir}/data`;
  const logFile = `${dir}/server.log`;
  const asRoot = Deno.uid() === 0;
  let port = freePort();
  const commandOf = (command: string, args: readonly string[]): [string, string[]] =>
    asRoot
      ? ["runuser", ["-u", "postgres", "--", `${bin}/${command}`, ...args]]
      : [`${bin}/${command}`, [...args]];
  const run = async (command: string, args: readonly string[]): Promise<void> => {
    const [program, programArgs] = commandOf(command, args);
    const output = await new Deno.Command(program, {
      args: programArgs,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      const text = new TextDecoder().decode(output.stdout) +
        new TextDecoder().decode(output.stderr);
      throw new Error(
        `${command} ${args.join(" ")} exited with code ${output.code}: ${text.trim()}` +
          `\n--- server log (tail) ---\n${await logTail(logFile)}`,
      );
    }
  };
  const start = () =>
    run("pg_ctl", [
      "start",
      "-D",
      dataDir,
      "-l",
      logFile,
      "-w",
      "-t",
      String(timeoutSeconds),
      "-o",
      [
        `-c port=${port}`,
        "-c listen_addresses=127.0.0.1",
        `-c unix_socket_directories=${dir}`,
        `-c max_prepared_transactions=${maxPrepared}`,
        "-c max_connections=60",
        "-c shared_buffers=16MB",
        "-c fsync=off",
      ].join(" "),
    ]);
  const halt = (mode: PostgresStopMode) =>
    run("pg_ctl", ["stop", "-D", dataDir, "-m", mode, "-w", "-t", String(timeoutSeconds)]);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    try {
      await halt("fast");
    } catch {
      // not running (never started, or crashed): nothing to stop
    }
    await Deno.remove(dir, { recursive: true });
  };
  try {
    if (asRoot) await chownToPostgres(dir);
    await run("initdb", ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "-N"]);
    for (let tries = 0;; tries++) {
      try {
        await start();
        break;
      } catch (error) {
        // another process may have taken the free port meanwhile
        if (tries >= 2 || !(await logTail(logFile)).includes("could not bind")) throw error;
        port = freePort();
      }
    }
  } catch (error) {
    await stop();
    if (error instanceof Error) error.message += `\n(server directory ${dir}, removed)`;
    throw error;
  }
  return {
    get url() {
      return `postgres://postgres@127.0.0.1:${port}/postgres`;
    },
    get port() {
      return port;
    },
    directory: dir,
    startupMs: performance.now() - started,
    async restart(mode: PostgresStopMode = "fast") {
      await halt(mode);
      await start();
    },
    stop,
    stopSync() {
      if (stopped) return;
      stopped = true;
      const [program, args] = commandOf("pg_ctl", ["stop", "-D", dataDir, "-m", "fast", "-w"]);
      new Deno.Command(program, { args, stdin: "null", stdout: "null", stderr: "null" })
        .outputSync();
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

/** The newest `/usr/lib/postgresql/<version>/bin` with an `initdb`, else the `PATH` directory holding one. */
function postgresBinDir(): string {
  const versions: number[] = [];
  try {
    for (const entry of Deno.readDirSync("/usr/lib/postgresql")) {
      if (/^\d+$/.test(entry.name) && exists(`/usr/lib/postgresql/${entry.name}/bin/initdb`)) {
        versions.push(Number(entry.name));
      }
    }
  } catch {
    // not a Debian layout
  }
  if (versions.length > 0) return `/usr/lib/postgresql/${Math.max(...versions)}/bin`;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir !== "" && exists(`${dir}/initdb`)) return dir;
  }
  throw new Deno.errors.NotFound(
    "No PostgreSQL server binaries: no /usr/lib/postgresql/<version>/bin/initdb and no initdb " +
      "on PATH (Debian/Ubuntu: apt-get install postgresql)",
  );
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

async function chownToPostgres(dir: string): Promise<void> {
  const id = async (flag: string): Promise<number> => {
    const output = await new Deno.Command("id", { args: [flag, "postgres"], stderr: "piped" })
      .output();
    const value = Number(new TextDecoder().decode(output.stdout).trim());
    if (!output.success || !Number.isSafeInteger(value)) {
      throw new Error(
        "Running as root, the test PostgreSQL server needs the 'postgres' system user " +
          `(initdb refuses root): id ${flag} postgres failed: ` +
          new TextDecoder().decode(output.stderr).trim(),
      );
    }
    return value;
  };
  await Deno.chown(dir, await id("-u"), await id("-g"));
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function logTail(path: string): Promise<string> {
  try {
    return (await Deno.readTextFile(path)).split("\n").slice(-20).join("\n");
  } catch {
    return "(no server log)";
  }
}
