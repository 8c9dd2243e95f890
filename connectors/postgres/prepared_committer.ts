/**
 * {@linkcode PostgresPreparedSink}'s committer: `COMMIT PREPARED` for each
 * committable, pipelined on one connection, with the outcome of each
 * decided by `decideCommitOutcome` (`commit_outcome.ts`): committed,
 * already committed, vanished (the job fails without restarts), retried.
 *
 * @module
 */

import type { CommitRequest, Committer } from "../../runtime/api/sink_v2.ts";
import { logger } from "../../runtime/log.ts";
import { closeNow, columnValues, connect, type Sql } from "./_driver.ts";
import { type CommitTableSql, ensureCommitTable } from "./commit_table.ts";
import type { PostgresCommittable } from "./committable.ts";
import { decideCommitOutcome } from "./commit_outcome.ts";
import {
  describeError,
  errorCode,
  PreparedTransactionVanishedError,
  UNDEFINED_OBJECT,
} from "./errors.ts";
import { checkPreparedTransactionsEnabled } from "./prepared_writer.ts";

const log = logger("postgres-sink");

/** The committer deletes expired commit-table rows at most this often, in ms. */
const EXPIRE_EVERY_MS = 60 * 60 * 1000;

/** What a {@linkcode PreparedCommitter} is built from (checked by the sink). */
export interface PreparedCommitterParts {
  /** `PostgresPreparedSink '<uid>' subtask <i>`, for messages. */
  readonly name: string;
  /** The server's URL. */
  readonly url: string;
  /** The sink's gid prefix. */
  readonly gidPrefix: string;
  /** The commit table's statements. */
  readonly commitSql: CommitTableSql;
  /** The commit table's name, for messages. */
  readonly commitTable: string;
  /** How long commit-table rows are kept, in ms. */
  readonly retentionMs: number;
  /** The alternative a `PreparedTransactionsDisabledError` suggests (default: the DataStream one). */
  readonly preparedTransactionsRemedy?: string;
}

/** One subtask's committer: `COMMIT PREPARED` on its own connection (see `commit_outcome.ts`). */
export class PreparedCommitter implements Committer<PostgresCommittable> {
  readonly #p: PreparedCommitterParts;
  readonly #sql: Sql;
  #lastExpiry = 0;

  /** Creates the committer's client; it connects in {@linkcode open}. */
  constructor(parts: PreparedCommitterParts) {
    this.#p = parts;
    this.#sql = connect({ url: parts.url, applicationName: `weir ${parts.name} committer` });
  }

  /**
   * Checks the server and creates the commit table (exactly-once mode).
   * @throws {PreparedTransactionsDisabledError} when the server has `max_prepared_transactions = 0`.
   */
  async open(): Promise<void> {
    await checkPreparedTransactionsEnabled(
      this.#sql,
      this.#p.name,
      this.#p.url,
      this.#p.preparedTransactionsRemedy,
    );
    await ensureCommitTable(this.#sql, this.#p.commitSql);
  }

  /** Commits the requests' gids and signals each outcome (`commit_outcome.ts`). */
  async commit(requests: readonly CommitRequest<PostgresCommittable>[]): Promise<void> {
    const settled = await Promise.allSettled(
      requests.map((r) => this.#sql.unsafe(`COMMIT PREPARED '${r.committable.gid}'`)),
    );
    const missing = requests
      .filter((_, i) => {
        const s = settled[i]!;
        return s.status === "rejected" && errorCode(s.reason) === UNDEFINED_OBJECT;
      })
      .map((r) => r.committable.gid);
    let recorded: Set<string> | Error | undefined;
    if (missing.length > 0) {
      try {
        const rows = await this.#sql.unsafe(this.#p.commitSql.lookup, [this.#p.gidPrefix, missing]);
        recorded = new Set(columnValues(rows, "gid").map(String));
      } catch (error) {
        recorded = error instanceof Error ? error : new Error(String(error));
      }
    }
    let allCommitted = true;
    requests.forEach((request, i) => {
      const s = settled[i]!;
      const { gid } = request.committable;
      const outcome = decideCommitOutcome({
        commitError: s.status === "rejected" ? s.reason : undefined,
        recorded: recorded instanceof Set ? recorded.has(gid) : recorded,
      });
      switch (outcome.kind) {
        case "committed":
          return;
        case "already-committed":
          request.signalAlreadyCommitted();
          return;
        case "vanished":
          allCommitted = false;
          request.signalFailedWithKnownReason(
            new PreparedTransactionVanishedError(
              this.#p.name,
              gid,
              request.checkpointId,
              this.#p.commitTable,
            ),
          );
          return;
        case "retry":
          allCommitted = false;
          log.warn(
            `${this.#p.name}: COMMIT PREPARED '${gid}' of checkpoint ${request.checkpointId} ` +
              `(try ${request.numberOfRetries + 1}) will be retried: ${
                describeError(outcome.cause)
              }`,
          );
          request.retryLater();
          return;
        case "failed":
          allCommitted = false;
          request.signalFailedWithUnknownReason(
            new Error(
              `${this.#p.name}: COMMIT PREPARED '${gid}' of checkpoint ${request.checkpointId} ` +
                `failed: ${describeError(outcome.cause)}`,
              { cause: outcome.cause },
            ),
          );
          return;
      }
    });
    if (allCommitted) await this.#expire();
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await closeNow(this.#sql);
  }

  /** Deletes the prefix's commit-table rows past the retention, at most once an hour. */
  async #expire(): Promise<void> {
    const now = Date.now();
    if (now - this.#lastExpiry < EXPIRE_EVERY_MS) return;
    this.#lastExpiry = now;
    try {
      await this.#sql.unsafe(this.#p.commitSql.expire, [
        this.#p.gidPrefix,
        this.#p.retentionMs / 1000,
      ]);
    } catch (error) {
      log.warn(`${this.#p.name}: cannot delete expired commit-table rows: ${describeError(error)}`);
    }
  }
}
