/**
 * The REST API of a `weir coordinator` process, served only while the
 * process leads (high availability: standbys serve nothing; Flink's
 * `WebMonitorEndpoint` runs on the leading JobManager).
 *
 * - {@linkcode LeaderRestEndpoint.leading} binds the port and serves; the
 *   backend is looked up at each request, so a leader still taking over
 *   answers `503` until its coordinator is ready.
 * - {@linkcode LeaderRestEndpoint.notLeading} stops serving (a deposed or
 *   stopping leader).
 * - Port 0 picks a free port; the bound one is logged and given to
 *   `onListen`.
 * - A port that cannot be bound is logged as an error (a warning for the
 *   default port 8081, Flink's `rest.port`, which another process on the
 *   host may hold): the coordinator then runs without a REST API. Check an
 *   explicit port at start with {@linkcode checkRestPort}, so a taken one
 *   fails the process instead.
 *
 * @module
 */

import { logger } from "../../log.ts";
import { CoordinatorNotReadyError, type RestBackend } from "./job_facts.ts";
import { RestServer } from "./rest_server.ts";

const log = logger("rest");

/** The REST API's default port (Flink's `rest.port`). */
export const DEFAULT_REST_PORT = 8081;

/** Options of {@linkcode LeaderRestEndpoint}. */
export interface LeaderRestEndpointOptions {
  /** The port; `undefined`: {@linkcode DEFAULT_REST_PORT}, and a taken port is not fatal. */
  readonly port?: number | undefined;
  /** Interface to bind. Default `"0.0.0.0"`. */
  readonly hostname?: string | undefined;
  /** Bearer token every request must carry, if any. */
  readonly token?: string | undefined;
  /** The leading coordinator, `undefined` while it is not ready. */
  readonly backend: () => RestBackend | undefined;
  /** Called with the bound port each time the server starts. */
  readonly onListen?: ((port: number) => void) | undefined;
}

/** Serves the REST API while this process leads (see the module docs). */
export class LeaderRestEndpoint {
  readonly #o: LeaderRestEndpointOptions;
  #server: RestServer | undefined;

  /**
   * Keeps the options; serves nothing until `leading`.
   * @throws {RangeError} when `port` is not an integer from 0 to 65535 or the token is empty.
   */
  constructor(options: LeaderRestEndpointOptions) {
    const { port, token } = options;
    if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
      throw new RangeError(
        `the REST port must be an integer from 0 to 65535: current value is ${port}`,
      );
    }
    if (token !== undefined && token === "") {
      throw new RangeError("the REST API's bearer token must not be empty: current value is ''");
    }
    this.#o = options;
  }

  /** The bound port while serving, else `undefined`. */
  get port(): number | undefined {
    return this.#server?.port;
  }

  /**
   * This process leads: serve the REST API (no-op while serving). A port
   * that cannot be bound is logged (see the module docs); never throws.
   */
  leading(): void {
    if (this.#server !== undefined) return;
    const o = this.#o;
    const port = o.port ?? DEFAULT_REST_PORT;
    try {
      this.#server = RestServer.start({
        port,
        hostname: o.hostname,
        token: o.token,
        backend: leaderBackend(o.backend),
      });
    } catch (error) {
      const message = `the REST API is off: cannot bind port ${port} (${error})` +
        (o.port === undefined ? "; give the coordinator --rest-port N (0 picks a free port)" : "");
      const fields = { name: "rest-unavailable", port };
      if (o.port === undefined) log.warn(message, fields);
      else log.error(message, fields);
      return;
    }
    const bound = this.#server.port;
    log.info(
      `REST API on http://${o.hostname ?? "0.0.0.0"}:${bound}` +
        (o.token === undefined ? "" : " (bearer token required)"),
      { name: "rest-listening", port: bound },
    );
    o.onListen?.(bound);
  }

  /** This process no longer leads (or stops): stop serving. */
  async notLeading(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    await server?.close();
  }
}

/**
 * Checks that `port` can be bound now (binds and closes it); port 0 always can.
 * @throws {Error} naming the port and why (e.g. `AddrInUse`), with the bind error as cause.
 */
export function checkRestPort(port: number, hostname = "0.0.0.0"): void {
  if (port === 0) return;
  try {
    Deno.listen({ port, hostname }).close();
  } catch (error) {
    throw new Error(`cannot serve the REST API on ${hostname}:${port}: ${error}`, {
      cause: error,
    });
  }
}

function leaderBackend(current: () => RestBackend | undefined): RestBackend {
  const get = (): RestBackend => {
    const b = current();
    if (b === undefined) {
      throw new CoordinatorNotReadyError(
        "this coordinator is taking over the leadership and not ready yet; try again",
      );
    }
    return b;
  };
  return {
    overview: () => get().overview(),
    jobFacts: (jobId) => get().jobFacts(jobId),
    cancelJob: (jobId) => get().cancelJob(jobId),
    savepoint: (order) => get().savepoint(order),
    leaderEpoch: () => get().leaderEpoch?.() ?? 0,
    savepointLocation: (jobId, triggerId) => get().savepointLocation?.(jobId, triggerId),
  };
}
