/**
 * Connecting to NATS: the connection options a job or a `weir` process takes
 * from its command line (`--nats URL`) or environment (`WEIR_NATS_URL`), and
 * {@linkcode connectNats}, which opens a connection that reconnects forever.
 *
 * | flag               | environment          | meaning                                  |
 * | ------------------ | -------------------- | ---------------------------------------- |
 * | `--nats`           | `WEIR_NATS_URL`      | server URL(s), comma-separated           |
 * | `--nats-user`      | `WEIR_NATS_USER`     | user name (with a password)              |
 * | `--nats-password`  | `WEIR_NATS_PASSWORD` | password                                 |
 * | `--nats-token`     | `WEIR_NATS_TOKEN`    | authentication token                     |
 * | `--nats-tls-ca`    | `WEIR_NATS_TLS_CA`   | PEM file of the CA to trust              |
 * | `--nats-tls-cert`  | `WEIR_NATS_TLS_CERT` | PEM file of the client certificate       |
 * | `--nats-tls-key`   | `WEIR_NATS_TLS_KEY`  | PEM file of the client certificate's key |
 *
 * ## Invariants
 *
 * - Flags win over the environment, field by field; an empty value counts as
 *   absent. Without a URL from either, there are no options (local mode).
 * - Parsing never throws on flags it does not know: a job module has flags
 *   of its own.
 * - A first connect that fails is an error naming the servers; once
 *   connected, the connection reconnects forever (every ~250 ms) and logs
 *   each disconnect and reconnect, since NATS core drops messages while
 *   disconnected and the data plane's sequence numbers will report it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { natsOptionsFromArgs } from "./nats_connect.ts";
 *
 * const options = natsOptionsFromArgs(
 *   ["--input", "data.csv", "--nats=nats://10.0.0.5:4222", "--nats-user", "weir"],
 *   { WEIR_NATS_PASSWORD: "secret" },
 * );
 * assert.deepEqual(options, {
 *   servers: "nats://10.0.0.5:4222",
 *   user: "weir",
 *   password: "secret",
 * });
 * assert.equal(natsOptionsFromArgs(["--input", "data.csv"], {}), undefined);
 * ```
 *
 * @module
 */

import { connect, type ConnectionOptions, type NatsConnection } from "./nats_deps.ts";
import { delay } from "./async.ts";
import { logger } from "../log.ts";

const log = logger("nats");

/** The delay between two reconnect attempts, in ms (plus NATS's jitter of up to 100 ms). */
export const RECONNECT_WAIT_MS = 250;

/**
 * The default time one connect attempt may take, in ms. nats.js waits 20 s,
 * which is how long a first connect to a server that accepts TCP but never
 * completes the handshake (a wrong port, a refused client certificate)
 * would hang; nats.go allows 2 s. 5 s leaves room for a loaded machine.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/** Files of a TLS connection (PEM). Paths are read by {@linkcode connectNats}. */
export interface NatsTlsOptions {
  /** The CA certificate(s) to trust, instead of the system's. */
  readonly caFile?: string;
  /** The client certificate, for servers that verify clients (mutual TLS). */
  readonly certFile?: string;
  /** The client certificate's private key. */
  readonly keyFile?: string;
}

/** How to reach and authenticate to a NATS server or cluster. */
export interface NatsConnectionOptions {
  /**
   * One server URL or several, comma-separated, e.g.
   * `"nats://a:4222,nats://b:4222"`; the client tries them all.
   */
  readonly servers: string;
  /** User name (NATS user/password authentication). */
  readonly user?: string;
  /** The user's password. */
  readonly password?: string;
  /** Authentication token (NATS token authentication). */
  readonly token?: string;
  /** Use TLS with these files. */
  readonly tls?: NatsTlsOptions;
  /** The connection's name, shown by the server's monitoring (`connz`). Default `"weir"`. */
  readonly name?: string;
  /**
   * How long one connect attempt (TCP, TLS and the NATS handshake) may take,
   * in ms. Default {@linkcode CONNECT_TIMEOUT_MS}.
   */
  readonly connectTimeoutMs?: number;
}

/** An environment to read: `Deno.env`, or a plain record (tests). */
export type Environment = Record<string, string | undefined> | Deno.Env;

/** The flags of {@linkcode natsOptionsFromArgs} and the environment variables they fall back to. */
const FIELDS = [
  { flag: "--nats", variable: "WEIR_NATS_URL", key: "servers" },
  { flag: "--nats-user", variable: "WEIR_NATS_USER", key: "user" },
  { flag: "--nats-password", variable: "WEIR_NATS_PASSWORD", key: "password" },
  { flag: "--nats-token", variable: "WEIR_NATS_TOKEN", key: "token" },
  { flag: "--nats-tls-ca", variable: "WEIR_NATS_TLS_CA", key: "caFile" },
  { flag: "--nats-tls-cert", variable: "WEIR_NATS_TLS_CERT", key: "certFile" },
  { flag: "--nats-tls-key", variable: "WEIR_NATS_TLS_KEY", key: "keyFile" },
] as const;

type Key = (typeof FIELDS)[number]["key"];
type Values = Partial<Record<Key, string>>;

/**
 * Reads the connection options from `WEIR_NATS_URL`, `WEIR_NATS_USER`,
 * `WEIR_NATS_PASSWORD`, `WEIR_NATS_TOKEN`, `WEIR_NATS_TLS_CA`,
 * `WEIR_NATS_TLS_CERT` and `WEIR_NATS_TLS_KEY`. Empty variables count as
 * unset.
 *
 * @param env `Deno.env` (needs `--allow-env`), or a record of variables.
 * @returns The options, or `undefined` when `WEIR_NATS_URL` is unset (local mode).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { natsOptionsFromEnv } from "./nats_connect.ts";
 *
 * assert.deepEqual(
 *   natsOptionsFromEnv({ WEIR_NATS_URL: "nats://n1:4222", WEIR_NATS_TLS_CA: "ca.pem" }),
 *   { servers: "nats://n1:4222", tls: { caFile: "ca.pem" } },
 * );
 * ```
 */
export function natsOptionsFromEnv(env: Environment): NatsConnectionOptions | undefined {
  return build(fromEnv(env));
}

/**
 * Reads the connection options from an argv: `--nats URL` or `--nats=URL`,
 * and likewise `--nats-user`, `--nats-password`, `--nats-token`,
 * `--nats-tls-ca`, `--nats-tls-cert` and `--nats-tls-key`, anywhere before a
 * `--` that ends the options. Every other argument is ignored. What the
 * flags leave unset comes from `env` (see {@linkcode natsOptionsFromEnv}); a
 * flag given twice takes its last value.
 *
 * @param args The arguments, e.g. `Deno.args`.
 * @param env `Deno.env`, or a record of variables (`{}` to ignore the environment).
 * @returns The options, or `undefined` when neither the flags nor `env` give a URL.
 * @throws {TypeError} when one of these flags is last, or followed by another
 * flag, instead of its value (e.g. `--nats --parallelism 4`).
 */
export function natsOptionsFromArgs(
  args: readonly string[],
  env: Environment,
): NatsConnectionOptions | undefined {
  const flags: Values = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") break;
    const eq = arg.indexOf("=");
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const field = FIELDS.find((f) => f.flag === name);
    if (field === undefined) continue;
    let value: string;
    if (eq >= 0) {
      value = arg.slice(eq + 1);
    } else {
      const next = args[i + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new TypeError(
          `The flag ${name} needs a value${name === "--nats" ? " (a server URL)" : ""}: ${
            next === undefined ? "it is the last argument" : `it is followed by ${next}`
          }`,
        );
      }
      value = next;
      i++;
    }
    if (value !== "") flags[field.key] = value;
  }
  return build({ ...fromEnv(env), ...flags });
}

function fromEnv(env: Environment): Values {
  const get = isDenoEnv(env) ? (name: string) => env.get(name) : (name: string) => env[name];
  const values: Values = {};
  for (const field of FIELDS) {
    const value = get(field.variable);
    if (value !== undefined && value !== "") values[field.key] = value;
  }
  return values;
}

function isDenoEnv(env: Environment): env is Deno.Env {
  return typeof (env as Partial<Deno.Env>).get === "function" &&
    typeof (env as Partial<Deno.Env>).toObject === "function";
}

function build(values: Values): NatsConnectionOptions | undefined {
  const { servers, user, password, token, caFile, certFile, keyFile } = values;
  if (servers === undefined) return undefined;
  const tls: { caFile?: string; certFile?: string; keyFile?: string } = {};
  if (caFile !== undefined) tls.caFile = caFile;
  if (certFile !== undefined) tls.certFile = certFile;
  if (keyFile !== undefined) tls.keyFile = keyFile;
  return {
    servers,
    ...(user === undefined ? {} : { user }),
    ...(password === undefined ? {} : { password }),
    ...(token === undefined ? {} : { token }),
    ...(Object.keys(tls).length === 0 ? {} : { tls }),
  };
}

/**
 * The server URLs of `options.servers`: split at commas, trimmed, empty
 * entries dropped.
 *
 * @param options The connection options.
 * @returns At least one URL.
 * @throws {TypeError} when `servers` holds no URL.
 */
export function natsServerList(options: NatsConnectionOptions): string[] {
  const servers = options.servers.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (servers.length === 0) {
    throw new TypeError(
      `Cannot connect to NATS as 'servers' holds no URL: current value is ${
        JSON.stringify(options.servers)
      }`,
    );
  }
  return servers;
}

/**
 * Connects to NATS. The first connect fails fast (each server is tried once,
 * each attempt within `connectTimeoutMs`);
 * after that the connection reconnects forever, every
 * {@linkcode RECONNECT_WAIT_MS} ms, and logs disconnects, reconnects, slow
 * consumers and server errors (component `nats`). TLS files are read here,
 * so a missing file is reported by name.
 *
 * NATS core loses what is published while a connection is down; Weir's data
 * plane detects that with sequence numbers (FACTS.md, "A slow subscriber
 * loses data silently").
 *
 * @param options Servers, credentials, TLS files and the connection's name.
 * @returns The connection; close it with `drain()` or `close()`.
 * @throws {TypeError} when `options.servers` holds no URL.
 * @throws {Error} naming the server URL(s) and the cause (e.g. connection
 * refused, authorization violation, an unreadable TLS file) when the first
 * connect fails.
 *
 * @example
 * ```ts
 * import { connectNats } from "./nats_connect.ts";
 *
 * const nc = await connectNats({ servers: "nats://127.0.0.1:4222", name: "example" });
 * await nc.flush();
 * await nc.close();
 * ```
 */
export async function connectNats(options: NatsConnectionOptions): Promise<NatsConnection> {
  const servers = natsServerList(options);
  const where = servers.join(", ");
  const fail = (what: string, cause: unknown): Error =>
    new Error(`Cannot connect to NATS at ${where}: ${what}`, { cause });
  const name = options.name ?? "weir";
  const config: ConnectionOptions = {
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: RECONNECT_WAIT_MS,
    waitOnFirstConnect: false,
    timeout: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
  };
  if (options.user !== undefined) config.user = options.user;
  if (options.password !== undefined) config.pass = options.password;
  if (options.token !== undefined) config.token = options.token;
  if (options.tls !== undefined) {
    try {
      config.tls = await readTls(options.tls);
    } catch (error) {
      throw fail(error instanceof Error ? error.message : String(error), error);
    }
  }
  let nc: NatsConnection;
  const absorber = absorbSocketErrors(where);
  try {
    nc = await connect(config);
  } catch (error) {
    await delay(STRAY_ERROR_WINDOW_MS); // still absorbing
    const stray = absorber.messages.length === 0
      ? ""
      : ` (the socket reported: ${[...new Set(absorber.messages)].join("; ")})`;
    throw fail(`${error instanceof Error ? error.message : error}${stray}`, error);
  } finally {
    absorber.stop();
  }
  if (absorber.messages.length > 0) {
    log.warn(`connecting to NATS at ${where} left socket errors: ${absorber.messages.join("; ")}`);
  }
  watchStatus(nc, name);
  return nc;
}

/** How long after a failed first connect a stray socket error is still absorbed, in ms. */
const STRAY_ERROR_WINDOW_MS = 50;

/** Where Deno's `node:net` and `node:tls` emit socket errors from (in an error's stack). */
const SOCKET_INTERNALS = /ext:deno_node\/internal(_binding\/tls_wrap|\/stream_base_commons)/;

/**
 * Absorbs, until `stop()`, the socket errors nobody listens for, and keeps
 * their messages for the connect's error. When a server refuses a
 * connection (an "Authorization Violation", a client certificate it
 * rejects), the NATS client removes its
 * socket's listeners and destroys the socket, or has removed them for a
 * moment during the TLS upgrade; under Deno's `node:net` the socket can
 * still emit `read ECONNRESET` (measured: 10–40% of refused connects,
 * within 2 ms) or `received fatal alert`, an uncaught error that would end
 * the process before the caller sees the error naming the server and the
 * cause. Only used during a first connect: after it, such errors end the
 * process, as they are not expected.
 */
function absorbSocketErrors(where: string): { messages: string[]; stop(): void } {
  const messages: string[] = [];
  const absorb = (event: ErrorEvent) => {
    const error: unknown = event.error;
    if (error instanceof Error && SOCKET_INTERNALS.test(error.stack ?? "")) {
      event.preventDefault();
      messages.push(error.message);
      log.debug(`a connect to NATS at ${where} left a socket error unhandled: ${error.message}`);
    }
  };
  globalThis.addEventListener("error", absorb);
  return { messages, stop: () => globalThis.removeEventListener("error", absorb) };
}

async function readTls(
  tls: NatsTlsOptions,
): Promise<{ ca?: string; cert?: string; key?: string }> {
  const read = async (what: string, path: string): Promise<string> => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new Error(
        `cannot read the TLS ${what} file ${path}: ${
          error instanceof Error ? error.message : error
        }`,
        { cause: error },
      );
    }
  };
  const out: { ca?: string; cert?: string; key?: string } = {};
  if (tls.caFile !== undefined) out.ca = await read("CA", tls.caFile);
  if (tls.certFile !== undefined) out.cert = await read("certificate", tls.certFile);
  if (tls.keyFile !== undefined) out.key = await read("key", tls.keyFile);
  return out;
}

/** Logs the connection's status events until it closes. */
function watchStatus(nc: NatsConnection, name: string): void {
  const who = `connection ${name}`;
  (async () => {
    for await (const status of nc.status()) {
      switch (status.type) {
        case "disconnect":
          log.warn(`${who} lost server ${status.server}; reconnecting`);
          break;
        case "reconnect":
          log.warn(`${who} reconnected to server ${status.server}`);
          break;
        case "slowConsumer":
          log.warn(
            `${who}: slow consumer on '${status.sub.getSubject()}' with ${status.pending} messages pending`,
          );
          break;
        case "error":
          log.error(`${who}: server error: ${status.error.message}`);
          break;
        case "staleConnection":
          log.warn(`${who}: the connection is stale (no PONG); reconnecting`);
          break;
        case "ldm":
          log.warn(`${who}: server ${status.server} enters lame duck mode`);
          break;
        case "update":
          log.info(
            `${who}: cluster update, added [${status.added?.join(", ") ?? ""}], deleted [${
              status.deleted?.join(", ") ?? ""
            }]`,
          );
          break;
        default:
          log.debug(`${who}: status ${status.type}`);
      }
    }
  })().catch((error) => log.error(`${who}: status watch failed: ${error}`));
}

/** What {@linkcode watchConnection} calls on a connection's status changes. */
export interface ConnectionWatcher {
  /** The connection lost its server and is reconnecting (a NATS outage, as seen from here). */
  readonly disconnected?: () => void;
  /** It is connected again (core NATS may have dropped messages in between). */
  readonly reconnected?: () => void;
}

/**
 * Calls `watcher.disconnected` each time `nc` loses its server and
 * `watcher.reconnected` each time it is back, in that order. Ends when `nc`
 * closes.
 *
 * @param nc the connection.
 * @param watcher what to call.
 */
export function watchConnection(nc: NatsConnection, watcher: ConnectionWatcher): void {
  (async () => {
    let down = false;
    for await (const status of nc.status()) {
      if ((status.type === "disconnect" || status.type === "staleConnection") && !down) {
        down = true;
        watcher.disconnected?.();
      } else if (status.type === "reconnect") {
        down = false;
        watcher.reconnected?.();
      }
    }
  })().catch(() => {});
}

/**
 * Calls `onReconnect` each time `nc` reconnects after losing its server
 * (core NATS may have dropped messages in between). Ends when `nc` closes.
 */
export function watchReconnects(nc: NatsConnection, onReconnect: () => void): void {
  (async () => {
    for await (const status of nc.status()) {
      if (status.type === "reconnect") onReconnect();
    }
  })().catch(() => {});
}
