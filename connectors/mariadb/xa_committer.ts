/**
 * The MariaDB XA sink's committer: `XA COMMIT` per committable, on one
 * connection of its own, with the outcome of an "unknown xid" decided by
 * `decideUnknownXid` (`xa_committable.ts`).
 *
 * | what happens                                   | signal                          |
 * |------------------------------------------------|---------------------------------|
 * | `XA COMMIT` succeeds                           | none (committed)                |
 * | `ER_XAER_NOTA`, listed by `XA RECOVER`         | commit again for up to 1 s ({@linkcode ATTACHED_WAIT_MS}), then `retryLater` (still attached) |
 * | `ER_XAER_NOTA`, commit-log row present         | `signalAlreadyCommitted`        |
 * | `ER_XAER_NOTA`, neither                        | `signalFailedWithKnownReason` ({@linkcode XaTransactionLostError}) |
 * | connection lost (server restart, `KILL`)       | `retryLater` (a new connection next time) |
 * | any other server error                         | `signalFailedWithUnknownReason` |
 *
 * The committer of subtask 0 also prunes the commit log (see
 * `commit_log.ts`) after a round, at most once per 10 minutes.
 *
 * @module
 */

import type { CommitRequest, Committer } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { logger } from "../../runtime/log.ts";
import { type CommitLog, PRUNE_INTERVAL_MS } from "./commit_log.ts";
import {
  ER_XAER_NOTA,
  isConnectionLost,
  type MariaDbConnectionOptions,
  openConnection,
  releaseConnection,
  type SqlConnection,
  sqlErrno,
} from "./connection.ts";
import { committableXid, decideUnknownXid, type XaCommittable } from "./xa_committable.ts";
import { recoverXids } from "./xa_writer.ts";
import { describeXid, xidSql } from "./xid.ts";

const log = logger("mariadb-xa");

/**
 * How long one commit waits for a prepared xid to detach from the
 * connection that prepared it before signalling `retryLater`, in ms.
 */
export const ATTACHED_WAIT_MS = 1000;

/**
 * A prepared XA transaction is gone without having committed: its records
 * are lost. A retry cannot bring them back, so the job fails without
 * restarts (DESIGN §12).
 */
export class XaTransactionLostError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the xid, its checkpoint, its record count and the sink.
   */
  constructor(message: string) {
    super(message);
    this.name = "XaTransactionLostError";
  }
}

/** What an {@linkcode XaCommitter} is built from. */
export interface XaCommitterOptions {
  /** Where to connect. */
  readonly connection: MariaDbConnectionOptions;
  /** The commit log. */
  readonly commitLog: CommitLog;
  /** How long commit-log rows are kept, in ms; pruned by subtask 0 when defined. */
  readonly pruneRetentionMs: number | undefined;
  /** The sink, subtask, job and attempt, for logs and errors. */
  readonly where: string;
}

/** Commits the XA sink's prepared xids (see the module docs). */
export class XaCommitter implements Committer<XaCommittable> {
  readonly #options: XaCommitterOptions;
  #connection: SqlConnection | undefined;
  #lastPruneMs = -Infinity;

  /** @param options see {@linkcode XaCommitterOptions}. */
  constructor(options: XaCommitterOptions) {
    this.#options = options;
  }

  /** Commits each request's xid, signalling per request (see the module docs' table). */
  async commit(requests: readonly CommitRequest<XaCommittable>[]): Promise<void> {
    for (const request of requests) {
      try {
        await this.#commitOne(request);
      } catch (e) {
        if (isConnectionLost(e)) {
          releaseConnection(this.#connection);
          this.#connection = undefined;
          log.warn(
            `${this.#options.where}: lost the connection committing ${
              describeXid(committableXid(request.committable))
            } of checkpoint ${request.checkpointId}; retrying: ${(e as Error).message}`,
          );
          request.retryLater();
        } else {
          request.signalFailedWithUnknownReason(
            new Error(
              `${this.#options.where}: XA COMMIT ${
                describeXid(committableXid(request.committable))
              } of checkpoint ${request.checkpointId} failed: ${(e as Error)?.message ?? e}`,
              { cause: e },
            ),
          );
        }
      }
    }
    await this.#maybePrune();
  }

  async #commitOne(request: CommitRequest<XaCommittable>): Promise<void> {
    const xid = committableXid(request.committable);
    const connection = this.#connection ??= await openConnection(this.#options.connection);
    const waitUntil = Date.now() + ATTACHED_WAIT_MS;
    let stillPrepared: boolean;
    for (let pause = 2;; pause = Math.min(pause * 2, 64)) {
      try {
        await connection.query(`XA COMMIT ${xidSql(xid)}`);
        log.debug(`${this.#options.where}: XA COMMIT ${describeXid(xid)}`);
        return;
      } catch (e) {
        if (sqlErrno(e) !== ER_XAER_NOTA) throw e;
      }
      stillPrepared = (await recoverXids(connection)).some((x) =>
        x.formatId === xid.formatId && x.gtrid === xid.gtrid && x.bqual === xid.bqual
      );
      // Right after the writer ended its connection the server may not have
      // detached the prepared transaction yet: wait a little here rather
      // than leave it to the operator's backoff.
      if (!stillPrepared || Date.now() >= waitUntil) break;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
    const logged = stillPrepared ? false : await this.#options.commitLog.contains(connection, xid);
    switch (decideUnknownXid({ stillPrepared, logged })) {
      case "attached":
        log.info(
          `${this.#options.where}: xid ${
            describeXid(xid)
          } of checkpoint ${request.checkpointId} is prepared but still attached to a connection; retrying`,
        );
        request.retryLater();
        return;
      case "already-committed":
        request.signalAlreadyCommitted();
        return;
      case "lost":
        request.signalFailedWithKnownReason(
          new XaTransactionLostError(
            `${this.#options.where}: prepared XA transaction ${
              describeXid(xid)
            } of checkpoint ${request.checkpointId} with ${request.committable.records} records ` +
              `is neither prepared (XA RECOVER) nor committed (no row in commit log ${this.#options.commitLog.table}): ` +
              `it was rolled back or lost, or committed longer ago than the commit log's retention`,
          ),
        );
        return;
    }
  }

  async #maybePrune(): Promise<void> {
    const retention = this.#options.pruneRetentionMs;
    if (retention === undefined || this.#connection === undefined) return;
    const now = Date.now();
    if (now - this.#lastPruneMs < PRUNE_INTERVAL_MS) return;
    this.#lastPruneMs = now;
    try {
      const deleted = await this.#options.commitLog.prune(this.#connection, retention);
      if (deleted > 0) {
        log.info(`${this.#options.where}: pruned ${deleted} commit-log rows`);
      }
    } catch (e) {
      // Pruning is housekeeping: a failure leaves old rows for the next try.
      log.warn(`${this.#options.where}: pruning the commit log failed: ${(e as Error).message}`);
    }
  }

  /** Releases the connection. Never commits. */
  close(): void {
    releaseConnection(this.#connection);
    this.#connection = undefined;
  }
}
