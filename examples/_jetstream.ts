/**
 * What the cluster-mode examples share around their JetStream streams:
 * reading the connection from the command line, creating a stream that
 * captures `<name>.>` when it is missing, and publishing input. Client-side
 * setup only: the examples call these in the `"client"` and `"local"`
 * roles, never on a worker's slot thread (see `executionRole()`).
 *
 * @module
 */

import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";

/** Publishes awaiting their acknowledgement at most, when loading input. */
const PUBLISH_WINDOW = 1000;

/**
 * The NATS connection of an example: `--nats URL` (cluster mode) or
 * `--jetstream URL` (local mode, the job runs in this process but reads and
 * writes JetStream there).
 * @throws {Error} naming both flags when neither is given.
 */
export function exampleConnection(
  values: { nats?: string | undefined; jetstream?: string | undefined },
  example: string,
): NatsConnectionOptions {
  const servers = values.nats ?? values.jetstream;
  if (servers === undefined || servers === "") {
    throw new Error(
      `${example} needs NATS: --nats URL (cluster mode) or --jetstream URL (local mode)`,
    );
  }
  return { servers, name: `weir-example-${example}` };
}

/** What {@linkcode ensureStream} found. */
export type EnsureStreamOutcome =
  | { readonly kind: "created" }
  | { readonly kind: "exists"; readonly messages: number };

/**
 * Creates stream `name` capturing the subjects `<name>.>` (file storage,
 * the server's default limits) unless it exists.
 * @returns whether it was created, or how many messages it already holds.
 * @throws {Error} naming the stream when NATS refuses (e.g. a subject overlap with another stream).
 */
export async function ensureStream(
  connection: NatsConnectionOptions,
  name: string,
): Promise<EnsureStreamOutcome> {
  const nc = await connectNats(connection);
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    try {
      const info = await jsm.streams.info(name);
      return { kind: "exists", messages: info.state.messages };
    } catch (error) {
      // 10059: JetStream's "stream not found"; anything else is a real failure.
      if (!(error instanceof jetstreamApi.JetStreamApiError && error.code === 10059)) throw error;
    }
    try {
      await jsm.streams.add({ name, subjects: [`${name}.>`] });
    } catch (error) {
      throw new Error(
        `Cannot create stream ${name} (subjects ${name}.>): ${
          error instanceof Error ? error.message : error
        }`,
        { cause: error },
      );
    }
    return { kind: "created" };
  } finally {
    await nc.close();
  }
}

/**
 * Publishes `messages` in order (each `[subject, payload]`), non-transactionally,
 * with at most 1000 acknowledgements outstanding.
 * @returns the number of messages published.
 * @throws {Error} naming the subject when a publish fails (no stream stores it, or no ack).
 */
export async function publishAll(
  connection: NatsConnectionOptions,
  messages: Iterable<readonly [string, Uint8Array]>,
): Promise<number> {
  const nc = await connectNats(connection);
  try {
    const js = jetstreamApi.jetstream(nc);
    let window: Promise<unknown>[] = [];
    let count = 0;
    for (const [subject, data] of messages) {
      const n = count;
      window.push(
        js.publish(subject, data).catch((error) => {
          throw new Error(
            `Cannot publish message ${n} to ${subject}: ${
              error instanceof Error ? error.message : error
            }`,
            { cause: error },
          );
        }),
      );
      count++;
      if (window.length >= PUBLISH_WINDOW) {
        await Promise.all(window);
        window = [];
      }
    }
    await Promise.all(window);
    return count;
  } finally {
    await nc.close();
  }
}
