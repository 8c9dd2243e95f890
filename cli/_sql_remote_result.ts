/**
 * A SELECT's rows from a cluster back to `weir sql` (Flink's SQL client
 * collects results from the cluster the same way, through a collect sink):
 * the job's result sink, at parallelism 1, publishes each change on a core
 * NATS subject unique to the query, then an end marker; the client
 * subscribes before it submits the job and shows what arrives with its
 * result view (`_sql_result_view.ts`).
 *
 * ## Messages
 *
 * JSON on the subject: `{"row": {"kind": "INSERT", "fields": [...]}}` per
 * change, in changelog order, then `{"end": true}` at the end of input.
 *
 * ## Guarantees
 *
 * Best effort, as the `print` connector: core NATS delivers in order per
 * publisher but drops messages over a disconnect, and a job that restarts
 * publishes the replayed changes again. The end marker tells a finished
 * result from one still running.
 *
 * @module
 */

import { connectNats, type NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import type { NatsConnection, Subscription } from "../runtime/actor/nats_deps.ts";
import type { Sink } from "../runtime/api/sink.ts";
import type { Row } from "../runtime/table/row.ts";

/** One message of the result subject (see the module docs). */
export type RemoteResultMessage =
  | { readonly row: Row }
  | { readonly end: true };

/** A new subject for one query's result: `weir.sql.result.<uuid>`. */
export function newResultSubject(): string {
  return `weir.sql.result.${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * The job side: a sink publishing each change on `subject`, then the end
 * marker when the input ends.
 * @param subject where to publish.
 * @param connection how to reach NATS from the subtask (a worker's slot thread).
 */
export function natsResultSink(subject: string, connection: NatsConnectionOptions): Sink<Row> {
  const encoder = new TextEncoder();
  let nc: NatsConnection | undefined;
  const publish = (message: RemoteResultMessage) => {
    if (nc === undefined) throw new Error(`the result sink of ${subject} is not open`);
    nc.publish(subject, encoder.encode(JSON.stringify(message)));
  };
  return {
    kind: "simple",
    async open() {
      nc = await connectNats({ ...connection, name: "weir-sql-result" });
    },
    invoke(row) {
      publish({ row: { kind: row.kind, fields: row.fields } });
    },
    async finish() {
      publish({ end: true });
      await nc?.flush();
    },
    async close() {
      const open = nc;
      nc = undefined;
      await open?.drain().catch(() => open.close());
    },
  };
}

/** The client side of one result: its subscription and the end. */
export interface RemoteResult {
  /** Resolves when the end marker arrived. */
  readonly ended: Promise<void>;
  /** Stops listening. */
  stop(): void;
}

/**
 * Subscribes to `subject` and hands each change to `onRow`, in order.
 * @param nc an open connection.
 * @param subject the query's result subject.
 * @param onRow gets each change.
 * @returns the subscription's handle; `ended` rejects when a message is not
 *   a result message, naming it.
 */
export function receiveResult(
  nc: NatsConnection,
  subject: string,
  onRow: (row: Row) => void,
): RemoteResult {
  const decoder = new TextDecoder();
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const ended = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  ended.catch(() => {});
  const subscription: Subscription = nc.subscribe(subject, {
    callback: (error, msg) => {
      if (error !== null) {
        reject(new Error(`the result subscription of ${subject} failed: ${error.message}`));
        return;
      }
      const text = decoder.decode(msg.data);
      let message: Partial<{ row: Row; end: boolean }>;
      try {
        message = JSON.parse(text);
      } catch {
        reject(new Error(`a message on ${subject} is not JSON: ${text.slice(0, 80)}`));
        return;
      }
      if (message.end === true) resolve();
      else if (message.row !== undefined) onRow(message.row);
      else reject(new Error(`a message on ${subject} is no result message: ${text.slice(0, 80)}`));
    },
  });
  return { ended, stop: () => subscription.unsubscribe() };
}
