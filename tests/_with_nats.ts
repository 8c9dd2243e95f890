/**
 * The runner of `deno task test`: makes sure a NATS server with JetStream
 * answers at `WEIR_TEST_NATS_URL` (default `nats://127.0.0.1:4222`), then
 * runs `deno test` with this script's arguments.
 *
 *     deno run -A tests/_with_nats.ts -A --parallel --doc mod.ts runtime/ tests/ ...
 *
 * 1. It probes the URL: a NATS server there sends its `INFO` line on connect.
 *    When one answers with JetStream, the tests use it as it is.
 * 2. When nothing answers, it starts `nats-server` (on `PATH`, else
 *    `/usr/sbin/nats-server`) with JetStream and a temporary store: on the
 *    URL's port when the URL is on this host (so the default URL, which the
 *    doc examples use too, gets its server), else on a free port. It sets
 *    `WEIR_TEST_NATS_URL` to that server for the tests, and stops it (and
 *    removes its store) when they end.
 * 3. It creates an *anchor stream* (`weir-test-anchor-<random>`) that lives
 *    while the tests run. nats-server 2.9 removes an account's stream
 *    directory when its last stream is deleted, so with tests creating and
 *    deleting streams in parallel a create could race that removal and fail
 *    with "error creating store for stream" (seen in a full run: `mkdir
 *    …/jetstream/$G/streams/weir-test-…: no such file or directory`). With
 *    one stream always present the directory stays.
 * 4. It runs `deno test <arguments>` with the Deno that runs this script
 *    (`Deno.execPath()`), deletes the anchor, and exits with the tests' exit
 *    code.
 *
 * It fails before running any test, with a message saying what to do, when
 * no `nats-server` binary is found (`apt-get install nats-server`), when
 * something that is not a NATS server listens at the URL, or when the
 * server there has no JetStream.
 *
 * @module
 */

import { delay } from "../runtime/actor/async.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi, type NatsConnection } from "../runtime/actor/nats_deps.ts";
import {
  findNatsServerBinary,
  INSTALL_HINT,
  type NatsServerHandle,
  startNatsServer,
  TEST_NATS_URL,
} from "./_nats_server.ts";

/** How long the probe waits for a server's `INFO` line, in ms. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * What answers at a NATS URL: `nothing` (the TCP connect failed, for
 * `reason`), `not-nats` (it sent `got` instead of an `INFO` line, e.g. `no
 * line within 2000 ms`), or a `nats` server of `version`, with or without
 * JetStream.
 */
export type Probe =
  | { readonly kind: "nothing"; readonly reason: string }
  | { readonly kind: "not-nats"; readonly got: string }
  | { readonly kind: "nats"; readonly jetstream: boolean; readonly version: string };

/**
 * Connects to the host and port of `url` and reads the server's first line:
 * a NATS server sends `INFO {json}` at once.
 *
 * @param url A `nats://host:port` URL (port default 4222).
 * @returns What answered.
 */
export async function probeNats(url: string): Promise<Probe> {
  const { hostname, port } = hostAndPort(url);
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname, port });
  } catch (error) {
    return { kind: "nothing", reason: error instanceof Error ? error.message : String(error) };
  }
  try {
    const line = await firstLine(conn);
    if (!line.startsWith("INFO ")) {
      return { kind: "not-nats", got: `the line ${JSON.stringify(line.slice(0, 200))}` };
    }
    const info = JSON.parse(line.slice(5)) as { jetstream?: boolean; version?: string };
    return { kind: "nats", jetstream: info.jetstream === true, version: info.version ?? "?" };
  } catch (error) {
    return { kind: "not-nats", got: error instanceof Error ? error.message : String(error) };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the probe's timeout
    }
  }
}

/** The first line `conn` sends, within {@linkcode PROBE_TIMEOUT_MS}. */
async function firstLine(conn: Deno.TcpConn): Promise<string> {
  const chunks: Uint8Array[] = [];
  let text = "";
  const timeout = new AbortController();
  const timer = delay(PROBE_TIMEOUT_MS, { signal: timeout.signal }).then(
    () => conn.close(),
    () => {},
  );
  try {
    const buffer = new Uint8Array(4096);
    while (!text.includes("\n") && text.length < 65_536) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
      text = new TextDecoder().decode(concat(chunks));
    }
  } catch {
    // closed by the timeout
  } finally {
    timeout.abort();
    await timer;
  }
  if (!text.includes("\n")) {
    throw new Error(`no line within ${PROBE_TIMEOUT_MS} ms`);
  }
  return text.slice(0, text.indexOf("\n")).trimEnd();
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** The host and port of a `nats://` URL (the first one of a comma-separated list). */
function hostAndPort(url: string): { hostname: string; port: number } {
  const first = url.split(",")[0]!.trim();
  const parsed = new URL(first.includes("://") ? first : `nats://${first}`);
  const hostname = parsed.hostname.replace(/^\[|\]$/g, "");
  return { hostname, port: parsed.port === "" ? 4222 : Number(parsed.port) };
}

function isThisHost(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "localhost" || hostname === "::1";
}

/**
 * Makes sure a NATS server with JetStream answers at `url`, starting one
 * when nothing does.
 *
 * @param url The URL the tests will use.
 * @returns The URL to give the tests, and the server started (if any).
 * @throws {Error} saying what to do, when no server can be used or started.
 */
async function ensureNats(url: string): Promise<{ url: string; started?: NatsServerHandle }> {
  const probe = await probeNats(url);
  if (probe.kind === "nats") {
    if (!probe.jetstream) {
      throw new Error(
        `The NATS server ${probe.version} at ${url} (WEIR_TEST_NATS_URL) has no JetStream: ` +
          "restart it with -js, or point WEIR_TEST_NATS_URL at a free port to have one started",
      );
    }
    console.error(`tests: using the NATS server ${probe.version} at ${url}`);
    if (findNatsServerBinary() === undefined) {
      console.error(
        "tests: warning: no nats-server binary is on PATH or at /usr/sbin/nats-server, so the " +
          `tests that start servers of their own (cluster, chaos) will fail: ${INSTALL_HINT}`,
      );
    }
    return { url };
  }
  if (probe.kind === "not-nats") {
    throw new Error(
      `Something that is not a NATS server listens at ${url} (WEIR_TEST_NATS_URL): it sent ` +
        `${probe.got}. Stop it, or point WEIR_TEST_NATS_URL at a free port`,
    );
  }
  if (findNatsServerBinary() === undefined) {
    throw new Error(
      `No NATS server answers at ${url} (WEIR_TEST_NATS_URL; ${probe.reason}) and no ` +
        `nats-server binary is on PATH or at /usr/sbin/nats-server: ${INSTALL_HINT}`,
    );
  }
  const { hostname, port } = hostAndPort(url);
  const server = await startNatsServer({
    jetstream: true,
    ...(isThisHost(hostname) ? { port } : {}),
  });
  console.error(
    `tests: no NATS server answered at ${url}; started nats-server with JetStream at ` +
      `${server.url} (store ${server.storeDir}), stopped when the tests end`,
  );
  return { url: server.url, started: server };
}

/** Runs `deno test <args>` with `WEIR_TEST_NATS_URL` set; returns its exit code. */
async function runTests(args: string[], url: string): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", ...args],
    env: { WEIR_TEST_NATS_URL: url },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const forward = (signal: Deno.Signal) => () => {
    try {
      child.kill(signal);
    } catch {
      // already ended
    }
  };
  const signals = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const handler = forward(signal);
    Deno.addSignalListener(signal, handler);
    return () => Deno.removeSignalListener(signal, handler);
  });
  try {
    const status = await child.status;
    return status.signal === null ? status.code : 128 + signalNumber(status.signal);
  } finally {
    for (const remove of signals) remove();
  }
}

function signalNumber(signal: Deno.Signal): number {
  return ({ SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[signal] ?? 1;
}

/**
 * Creates the anchor stream (see the module docs) on the server at `url`.
 * @returns a function that deletes it and closes the connection.
 * @throws when the server refuses the stream.
 */
async function createAnchorStream(url: string): Promise<() => Promise<void>> {
  const nc: NatsConnection = await connectNats({ servers: url, name: "weir-test-anchor" });
  const jsm = await jetstreamApi.jetstreamManager(nc);
  const name = `weir-test-anchor-${crypto.randomUUID().slice(0, 8)}`;
  await jsm.streams.add({ name, subjects: [`${name}.>`] });
  return async () => {
    await jsm.streams.delete(name).catch(() => {});
    await nc.close();
  };
}

if (import.meta.main) {
  let nats: { url: string; started?: NatsServerHandle };
  try {
    nats = await ensureNats(TEST_NATS_URL);
  } catch (error) {
    console.error(`tests: ${error instanceof Error ? error.message : error}`);
    Deno.exit(1);
  }
  let code = 1;
  try {
    const removeAnchor = await createAnchorStream(nats.url);
    try {
      code = await runTests(Deno.args, nats.url);
    } finally {
      await removeAnchor();
    }
  } finally {
    await nats.started?.stop();
  }
  Deno.exit(code);
}
