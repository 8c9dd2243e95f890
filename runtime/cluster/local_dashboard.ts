/**
 * The web dashboard of a job run in this process (local mode): `deno run -A
 * job.ts --ui`, or `WEIR_UI_PORT=<port>` in the environment, serves the
 * dashboard and the REST API (`rest/rest_server.ts`, one job and one worker
 * `local`, `local_rest_backend.ts`) on `127.0.0.1:<port>` while the job
 * runs, and prints
 *
 * ```text
 * weir: dashboard at http://127.0.0.1:<port>/ (job <jobId>)
 * ```
 *
 * on stderr. The port is `WEIR_UI_PORT`, default 8081; 0 picks a free one
 * (the printed line has the real port). The server binds before the job
 * starts (a taken port fails the run before anything is deployed) and
 * closes when the job ends. `--ui` is taken out of `Deno.args` when Weir
 * is imported (`role.ts`), before the job's own argument parsing runs, so
 * a job that refuses unknown arguments accepts it. In cluster mode (`--nats`) neither applies:
 * the leading coordinator serves the dashboard (`weir coordinator
 * --rest-port`). Flink's MiniCluster likewise serves its web UI for a job
 * run from the IDE (with `flink-runtime-web` on the class path).
 *
 * @module
 */

import { RestServer } from "./rest/rest_server.ts";
import { UI_FLAG, uiFlagGiven } from "./role.ts";
import { LocalRestBackend, type LocalRun } from "./local_rest_backend.ts";

/** The environment variable that turns the local dashboard on and names its port. */
export const UI_PORT_ENV = "WEIR_UI_PORT";

/** The argument that turns the local dashboard on (on {@linkcode DEFAULT_UI_PORT} unless `WEIR_UI_PORT` says otherwise). */
export { UI_FLAG };

/** The dashboard's port when `WEIR_UI_PORT` is not set: Flink's `rest.port` default. */
export const DEFAULT_UI_PORT = 8081;

/**
 * Whether the local dashboard is asked for, and on which port. Pure.
 * @param args the job module's arguments (`Deno.args`): `--ui` turns it on.
 * @param envPort `WEIR_UI_PORT`'s value (`undefined` or `""`: unset); set, it turns the dashboard on too.
 * @returns the port (0: a free one), or `undefined` when not asked for.
 * @throws {RangeError} when `WEIR_UI_PORT` is not an integer from 0 to 65535, naming it and its value.
 */
export function localDashboardPort(
  args: readonly string[],
  envPort: string | undefined,
): number | undefined {
  const text = envPort?.trim() ?? "";
  if (text === "") return args.includes(UI_FLAG) ? DEFAULT_UI_PORT : undefined;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw new RangeError(
      `${UI_PORT_ENV} must be an integer from 0 to 65535 (0 picks a free port): current value ` +
        `is ${JSON.stringify(envPort)}`,
    );
  }
  return port;
}

/** Options of {@linkcode LocalDashboard.start}. */
export interface LocalDashboardOptions {
  /** The TCP port on 127.0.0.1; 0 picks a free one. */
  readonly port: number;
  /** The built dashboard's directory; default `ui/dist/` of the repository. */
  readonly dashboardRoot?: URL | string | undefined;
}

/** The dashboard and REST API of one local run (see the module docs). */
export class LocalDashboard {
  readonly #server: RestServer;
  readonly #backend: LocalRestBackend;
  #closed: Promise<void> | undefined;

  private constructor(server: RestServer, backend: LocalRestBackend) {
    this.#server = server;
    this.#backend = backend;
  }

  /**
   * Binds the port and serves the REST API (no job yet) and the dashboard.
   * @throws {RangeError} when `port` is not an integer from 0 to 65535.
   * @throws {Deno.errors.AddrInUse} when the port is taken, naming it and `WEIR_UI_PORT`.
   */
  static start(options: LocalDashboardOptions): LocalDashboard {
    const backend = new LocalRestBackend();
    try {
      const server = RestServer.start({
        backend,
        port: options.port,
        hostname: "127.0.0.1",
        dashboardRoot: options.dashboardRoot,
      });
      return new LocalDashboard(server, backend);
    } catch (error) {
      if (error instanceof Deno.errors.AddrInUse) {
        throw new Deno.errors.AddrInUse(
          `Cannot serve the dashboard on 127.0.0.1:${options.port}: the port is taken; set ` +
            `${UI_PORT_ENV} to a free port, or to 0 to pick one`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** The bound port (the one picked, when started with port 0). */
  get port(): number {
    return this.#server.port;
  }

  /** The dashboard's URL, `http://127.0.0.1:<port>/`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  /**
   * Serves `run` and prints `weir: dashboard at <url> (job <id>)` on stderr.
   * @throws {Error} when a run is already attached.
   */
  attach(run: LocalRun): void {
    this.#backend.attach(run);
    console.error(`weir: dashboard at ${this.url} (job ${run.job.jobId})`);
  }

  /** Stops serving (idempotent); resolves once open connections closed. */
  close(): Promise<void> {
    this.#closed ??= this.#server.close();
    return this.#closed;
  }
}

/**
 * Starts the local dashboard when this process was started with `--ui`
 * ({@linkcode uiFlagGiven}) or `WEIR_UI_PORT`
 * is set (see {@linkcode localDashboardPort}; an environment without
 * `--allow-env` counts as unset).
 * @returns the dashboard, or `undefined` when not asked for.
 * @throws {RangeError} as {@linkcode localDashboardPort}.
 * @throws {Deno.errors.AddrInUse} as {@linkcode LocalDashboard.start}.
 */
export function startLocalDashboardIfAsked(): LocalDashboard | undefined {
  let envPort: string | undefined;
  try {
    envPort = Deno.env.get(UI_PORT_ENV);
  } catch {
    envPort = undefined; // no --allow-env
  }
  const port = localDashboardPort(uiFlagGiven() ? [UI_FLAG] : Deno.args, envPort);
  return port === undefined ? undefined : LocalDashboard.start({ port });
}
