/**
 * Test helpers for the MariaDB sinks: the test server's connection, unique
 * table names and xid prefixes, cleanup of a prefix's prepared xids, and
 * commit requests that record how they were signalled.
 *
 * @module
 */

import type { CommitRequest, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import type { CommitterInitContext } from "../../runtime/api/sink_v2.ts";
import { type MariaDbConnectionOptions, openConnection, type SqlConnection } from "./connection.ts";
import { recoverXids, rollBackLingering } from "./xa_writer.ts";
import { tryParseXid } from "./xid.ts";

/** The test server: 127.0.0.1:3306, root without password, database `test`. */
export const TEST_CONNECTION: MariaDbConnectionOptions = {
  host: "127.0.0.1",
  port: 3306,
  user: "root",
  database: "test",
};

/** A unique name for a table or xid prefix: `<label>_<time>_<random>`, at most 32 characters. */
export function uniqueName(label: string): string {
  const random = crypto.getRandomValues(new Uint32Array(1))[0]!.toString(36);
  return `${label}_${Date.now().toString(36)}_${random}`.slice(0, 32);
}

/** Runs `body` with a connection to the test server, then ends it. */
export async function withConnection<R>(body: (c: SqlConnection) => Promise<R>): Promise<R> {
  const connection = await openConnection(TEST_CONNECTION);
  try {
    return await body(connection);
  } finally {
    await connection.end();
  }
}

/** Runs one statement on a fresh connection. */
export function sql(text: string, values?: unknown[]): Promise<unknown> {
  return withConnection((c) => c.query(text, values));
}

/** The rows of `table` ordered by `orderBy`, numbers as numbers. */
export async function rows(table: string, orderBy = "id"): Promise<Record<string, unknown>[]> {
  const result = await sql(`SELECT * FROM \`${table}\` ORDER BY ${orderBy}`) as Record<
    string,
    unknown
  >[];
  return result.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [k, typeof v === "bigint" ? Number(v) : v]),
    )
  );
}

/** The prepared xids of `prefix` on the server, as `gtrid/bqual` strings. */
export async function preparedOf(prefix: string): Promise<string[]> {
  const xids = await withConnection(recoverXids);
  return xids.filter((x) => tryParseXid(x)?.prefix === prefix).map((x) => `${x.gtrid}/${x.bqual}`);
}

/** Rolls back every prepared xid of `prefix` and drops the commit-log and fence tables (test cleanup). */
export async function cleanupPrefix(prefix: string, commitLogTable?: string): Promise<void> {
  await withConnection(async (c) => {
    // Every owner (parallelism 1), waiting for xids still attached to a closing connection.
    await rollBackLingering({
      connection: c,
      prefix,
      subtaskIndex: 0,
      parallelism: 1,
      restoredCheckpointId: undefined,
      detachTimeoutMs: 10_000,
      where: `test cleanup of xid prefix ${prefix}`,
    });
    if (commitLogTable !== undefined) {
      await c.query(
        `DROP TABLE IF EXISTS \`${commitLogTable}\`, \`${commitLogTable}_fence\`, \`${commitLogTable}_fences\``,
      );
    }
  });
}

/** A writer init context for subtask `subtaskIndex` of `parallelism`. */
export function writerContext(options: {
  uid: string;
  subtaskIndex?: number;
  parallelism?: number;
  attempt?: number;
  restoredCheckpointId?: number;
}): WriterInitContext<never> {
  return {
    uid: options.uid,
    jobId: "test-job",
    subtaskIndex: options.subtaskIndex ?? 0,
    parallelism: options.parallelism ?? 1,
    attempt: options.attempt ?? 0,
    restoredCheckpointId: options.restoredCheckpointId,
    restoredState: [],
    checkpointingMode: "exactly-once",
  };
}

/** A committer init context (same fields as {@linkcode writerContext}). */
export function committerContext(options: {
  uid: string;
  subtaskIndex?: number;
  parallelism?: number;
  restoredCheckpointId?: number;
}): CommitterInitContext {
  return {
    uid: options.uid,
    jobId: "test-job",
    subtaskIndex: options.subtaskIndex ?? 0,
    parallelism: options.parallelism ?? 1,
    attempt: 0,
    restoredCheckpointId: options.restoredCheckpointId,
  };
}

/** How a {@linkcode RecordingRequest} was signalled (`"committed"` when not at all). */
export type Signal =
  | { readonly kind: "committed" }
  | { readonly kind: "already-committed" }
  | { readonly kind: "retry-later" }
  | { readonly kind: "failed-known"; readonly error: Error }
  | { readonly kind: "failed-unknown"; readonly error: Error };

/** A commit request that records its signal. */
export class RecordingRequest<C> implements CommitRequest<C> {
  /** The committable. */
  readonly committable: C;
  /** Its checkpoint. */
  readonly checkpointId: number;
  /** Always 0. */
  readonly numberOfRetries = 0;
  /** What the committer signalled. */
  signal: Signal = { kind: "committed" };

  /** @param committable the committable. @param checkpointId its checkpoint. */
  constructor(committable: C, checkpointId: number) {
    this.committable = committable;
    this.checkpointId = checkpointId;
  }

  /** Records a known failure. */
  signalFailedWithKnownReason(error: Error): void {
    this.signal = { kind: "failed-known", error };
  }
  /** Records an unknown failure. */
  signalFailedWithUnknownReason(error: Error): void {
    this.signal = { kind: "failed-unknown", error };
  }
  /** Records a retry. */
  retryLater(): void {
    this.signal = { kind: "retry-later" };
  }
  /** Records a retry (the new committable is ignored). */
  updateAndRetryLater(_committable: C): void {
    this.signal = { kind: "retry-later" };
  }
  /** Records an already-committed commit. */
  signalAlreadyCommitted(): void {
    this.signal = { kind: "already-committed" };
  }
}
