/**
 * The MariaDB XA sink's writer: one XA transaction at a time, on a
 * connection of its own (Flink's JDBC XA sink with
 * `transactionPerConnection`, which MySQL and MariaDB need).
 *
 * ## Lifecycle of one transaction
 *
 * 1. The first batch sent after a barrier opens a connection and runs
 *    `XA START <xid>` (lazily: a subtask that receives nothing between two
 *    barriers starts no transaction and returns no committable).
 * 2. Batches of `batchSize` rows go out as multi-row `INSERT`s (`write`
 *    awaits a full batch's statement: backpressure).
 * 3. At barrier *n*: `flush` sends the rest; `prepareCommit(n)` inserts the
 *    commit-log row, runs `XA END` and `XA PREPARE`, and *ends the
 *    connection*: MariaDB keeps a prepared transaction attached to the
 *    connection that prepared it, and no other connection can commit it
 *    until that one is gone. The committable is the xid (plain data).
 * 4. `close()` drops the connection: an active (unprepared) transaction is
 *    rolled back by the server, as on a crash; a prepared one stays for the
 *    committer or the next restore.
 *
 * ## At start
 *
 * `createWriter` first rolls back this writer's lingering prepared xids
 * (`XA RECOVER`, then {@linkcode decideLingeringRollbacks}): xids of its
 * prefix and owner share started after the restored checkpoint (all of them
 * on a fresh start). A lingering xid still attached to a connection (a
 * writer that is ending, or a zombie of an earlier attempt) is retried
 * until `detachTimeoutMs`, then the attempt fails naming it.
 *
 * Before that scan the writer claims its subtask's fence for its attempt,
 * and after every `XA PREPARE` it checks that no newer attempt took it over;
 * a replaced (zombie) writer rolls back what it just prepared and fails
 * (`fence.ts`).
 *
 * Checkpoint ids must increase along a job's lineage (across restores and
 * resumes); a barrier whose id is not above the previous one (or the
 * restored one) fails the job with {@linkcode CheckpointOrderError}.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { logger } from "../../runtime/log.ts";
import { RowBatch, type RowWriterOptions } from "./batch_writer.ts";
import type { CommitLog } from "./commit_log.ts";
import { FencedWriterError, type WriterFence } from "./fence.ts";
import {
  ER_XAER_NOTA,
  openConnection,
  releaseConnection,
  type SqlConnection,
  sqlErrno,
} from "./connection.ts";
import { ChangelogRowBatch } from "./changelog_batch.ts";
import type { XaCommittable } from "./xa_committable.ts";
import {
  decideLingeringRollbacks,
  describeXid,
  formatXid,
  newWriterId,
  type Xid,
  xidFromRecoverRow,
  xidSql,
} from "./xid.ts";

const log = logger("mariadb-xa");

/** What an {@linkcode XaSinkWriter} is built from. */
export interface XaSinkWriterOptions<T> extends RowWriterOptions<T> {
  /** The sink's xid prefix. */
  readonly prefix: string;
  /** The commit log. */
  readonly commitLog: CommitLog;
  /** This subtask's index (the xids' owner). */
  readonly subtaskIndex: number;
  /** The checkpoint restored from, or `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
  /** The sink, subtask, job and attempt, for logs and errors. */
  readonly where: string;
  /** An autocommit connection of the writer's own, for fence checks (closed with the writer). */
  readonly control: SqlConnection;
  /** The sink's fence. */
  readonly fence: WriterFence;
  /** The fence generation this writer's attempt holds. */
  readonly generation: number;
  /** How long to wait for the writer's own xid to detach when fenced, in ms. */
  readonly detachTimeoutMs: number;
}

/** What {@linkcode rollBackLingering} is given. */
export interface LingeringRollbackOptions {
  /** An autocommit connection. */
  readonly connection: SqlConnection;
  /** The sink's xid prefix. */
  readonly prefix: string;
  /** The restoring writer's subtask index. */
  readonly subtaskIndex: number;
  /** The sink's parallelism. */
  readonly parallelism: number;
  /** The checkpoint restored from; `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
  /** How long to retry an xid still attached to a connection, in ms. */
  readonly detachTimeoutMs: number;
  /** For logs and errors. */
  readonly where: string;
}

/**
 * Lists the prepared xids on the server.
 * @param connection any connection.
 * @returns every prepared xid (any format).
 */
export async function recoverXids(connection: SqlConnection): Promise<Xid[]> {
  const rows = await connection.query("XA RECOVER") as Record<string, unknown>[];
  return rows.map(xidFromRecoverRow);
}

/**
 * A lingering xid could not be rolled back: it stayed attached to a live
 * connection for `detachTimeoutMs` (a zombie writer of an earlier attempt,
 * or another job sharing the prefix). A restart may fix it.
 */
export class LingeringXidAttachedError extends Error {
  /**
   * Builds the error.
   * @param message names the xid, the sink and how long it waited.
   */
  constructor(message: string) {
    super(message);
    this.name = "LingeringXidAttachedError";
  }
}

/**
 * Rolls back the writer's lingering prepared xids (see the module docs).
 * @param options who rolls back, and what was restored.
 * @returns the xids rolled back.
 * @throws {LingeringXidAttachedError} when one stays attached past `detachTimeoutMs`.
 */
export function rollBackLingering(options: LingeringRollbackOptions): Promise<Xid[]> {
  return recoverXids(options.connection).then((recovered) =>
    rollBackXids({
      ...options,
      xids: decideLingeringRollbacks({
        recovered,
        prefix: options.prefix,
        subtaskIndex: options.subtaskIndex,
        parallelism: options.parallelism,
        restoredCheckpointId: options.restoredCheckpointId,
      }),
    })
  );
}

/**
 * Rolls back prepared xids, retrying those still attached to a connection
 * (`ER_XAER_NOTA` while `XA RECOVER` lists them) every 50 ms until
 * `detachTimeoutMs`; an xid gone from `XA RECOVER` counts as resolved.
 * @param options the connection, the xids, the timeout and names for messages.
 * @returns the xids rolled back here.
 * @throws {LingeringXidAttachedError} when one stays attached past `detachTimeoutMs`.
 */
export async function rollBackXids(options: {
  readonly connection: SqlConnection;
  readonly xids: readonly Xid[];
  readonly detachTimeoutMs: number;
  readonly prefix: string;
  readonly where: string;
}): Promise<Xid[]> {
  const deadline = Date.now() + options.detachTimeoutMs;
  const done: Xid[] = [];
  let pending = options.xids;
  while (pending.length > 0) {
    const attached: Xid[] = [];
    for (const xid of pending) {
      try {
        await options.connection.query(`XA ROLLBACK ${xidSql(xid)}`);
        done.push(xid);
        log.info(`${options.where}: rolled back prepared xid ${describeXid(xid)}`);
      } catch (e) {
        if (sqlErrno(e) !== ER_XAER_NOTA) throw e;
        attached.push(xid);
      }
    }
    if (attached.length === 0) break;
    // NOTA: either resolved meanwhile (gone from XA RECOVER) or still attached to a connection.
    const listed = new Set(
      (await recoverXids(options.connection)).map((x) => `${x.formatId}/${x.gtrid}/${x.bqual}`),
    );
    pending = attached.filter((x) => listed.has(`${x.formatId}/${x.gtrid}/${x.bqual}`));
    if (pending.length === 0) break;
    if (Date.now() >= deadline) {
      throw new LingeringXidAttachedError(
        `${options.where}: prepared xid ${describeXid(pending[0]!)} (and ${
          pending.length - 1
        } more) is still attached to a live connection after ${options.detachTimeoutMs} ms: ` +
          `a writer of an earlier attempt is still running, or another job uses xid prefix "${options.prefix}"`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return done;
}

/**
 * A barrier came with a checkpoint id not above the last one the writer
 * passed (or the restored one). The lingering-xid rollback orders
 * transactions by checkpoint id, so the job fails without restarts instead
 * of rolling back a transaction a checkpoint names. Weir's coordinator
 * continues ids after the restored checkpoint, also on a resume of another
 * job's checkpoint, as Flink does.
 */
export class CheckpointOrderError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the sink, the subtask and both checkpoint ids.
   */
  constructor(message: string) {
    super(message);
    this.name = "CheckpointOrderError";
  }
}

/** The XA sink's writer (see the module docs). */
export class XaSinkWriter<T> implements SinkWriter<T, XaCommittable> {
  readonly #options: XaSinkWriterOptions<T>;
  readonly #batch: RowBatch<T> | ChangelogRowBatch<T>;
  readonly #writerId = newWriterId();
  #sequence = 0;
  /** The last checkpoint id whose barrier this writer passed (the next xid's base). */
  #base: number;
  #connection: SqlConnection | undefined;
  #xid: Xid | undefined;
  #records = 0;
  #closed = false;

  /** @param options see {@linkcode XaSinkWriterOptions}. */
  constructor(options: XaSinkWriterOptions<T>) {
    this.#options = options;
    this.#batch = options.changelog === undefined
      ? new RowBatch(options.statement, options.parameters, options.where)
      : new ChangelogRowBatch(
        options.statement,
        options.parameters,
        options.changelog,
        options.where,
      );
    this.#base = options.restoredCheckpointId ?? 0;
  }

  /** The open transaction's xid, if one is open (tests kill its connection). */
  get currentXid(): Xid | undefined {
    return this.#xid;
  }

  /** The open transaction's connection id on the server, if one is open. */
  get currentConnectionId(): number | undefined {
    return this.#connection?.threadId ?? undefined;
  }

  /** Buffers the record; a full batch is sent inside the transaction (started if need be). */
  write(value: T, _context: SinkContext): void | Promise<void> {
    this.#batch.add(value);
    if (this.#batch.rows >= this.#options.batchSize) return this.#send();
  }

  /** Sends the buffered rows into the transaction. */
  flush(_endOfInput: boolean): Promise<void> {
    return this.#send();
  }

  async #send(): Promise<void> {
    if (this.#batch.rows === 0) return;
    if (this.#closed) throw new Error(`${this.#options.where}: the writer is closed`);
    if (this.#connection === undefined) await this.#begin();
    this.#records += await this.#batch.send(this.#connection!);
  }

  async #begin(): Promise<void> {
    const xid = formatXid({
      prefix: this.#options.prefix,
      owner: this.#options.subtaskIndex,
      base: this.#base,
      writerId: this.#writerId,
      sequence: ++this.#sequence,
    });
    const connection = await openConnection(this.#options.connection);
    try {
      await connection.query(`XA START ${xidSql(xid)}`);
    } catch (e) {
      releaseConnection(connection);
      throw e;
    }
    this.#connection = connection;
    this.#xid = xid;
    this.#records = 0;
    log.debug(`${this.#options.where}: XA START ${describeXid(xid)}`);
  }

  /**
   * Pre-commits the open transaction for checkpoint `checkpointId`: commit
   * log row, `XA END`, `XA PREPARE`, connection ended.
   * @returns the transaction's committable, or none when no transaction is open.
   */
  async prepareCommit(checkpointId: number): Promise<readonly XaCommittable[]> {
    if (!(checkpointId > this.#base)) {
      throw new CheckpointOrderError(
        `${this.#options.where}: checkpoint ids must increase after the restored checkpoint and ` +
          `every earlier barrier (the xids' base, see xid.ts): prepareCommit(${checkpointId}) came after ${this.#base}`,
      );
    }
    await this.#send();
    this.#base = checkpointId;
    const connection = this.#connection;
    const xid = this.#xid;
    if (connection === undefined || xid === undefined) return [];
    const records = this.#records;
    try {
      await this.#options.commitLog.insert(connection, { xid, checkpointId, records });
      await connection.query(`XA END ${xidSql(xid)}`);
      await connection.query(`XA PREPARE ${xidSql(xid)}`);
    } catch (e) {
      // Maybe prepared after all (a connection dropped by close() during the
      // PREPARE): a replaced writer must not leave it behind.
      await this.#checkFence(xid, checkpointId).catch((fenced) => {
        if (!(fenced instanceof FencedWriterError)) {
          log.warn(
            `${this.#options.where}: checking the fence after a failed prepare of ${
              describeXid(xid)
            } failed too: ${fenced}`,
          );
        }
      });
      throw e;
    }
    this.#connection = undefined;
    this.#xid = undefined;
    this.#records = 0;
    try {
      await connection.end();
    } catch {
      // The transaction is prepared; a connection that fails to end gracefully is gone anyway.
      releaseConnection(connection);
    }
    log.debug(
      `${this.#options.where}: XA PREPARE ${
        describeXid(xid)
      } for checkpoint ${checkpointId} (${records} records)`,
    );
    await this.#checkFence(xid, checkpointId);
    return [{ gtrid: xid.gtrid, bqual: xid.bqual, records }];
  }

  /** After a prepare: a newer attempt holding the subtask's fence means this writer is a zombie (see `fence.ts`). */
  async #checkFence(xid: Xid, checkpointId: number): Promise<void> {
    // The control connection is gone once close() ran (a replaced attempt is
    // closed while it finishes a barrier): check on a connection of its own.
    if (this.#closed) {
      const own = await openConnection(this.#options.connection);
      try {
        return await this.#checkFenceOn(own, xid, checkpointId);
      } finally {
        await own.end().catch(() => releaseConnection(own));
      }
    }
    return await this.#checkFenceOn(this.#options.control, xid, checkpointId);
  }

  async #checkFenceOn(control: SqlConnection, xid: Xid, checkpointId: number): Promise<void> {
    const { fence, generation } = this.#options;
    const current = await fence.generation(control);
    if (current === generation) return;
    await rollBackXids({
      connection: control,
      xids: [xid],
      detachTimeoutMs: this.#options.detachTimeoutMs,
      prefix: this.#options.prefix,
      where: this.#options.where,
    });
    throw new FencedWriterError(
      `${this.#options.where}: a newer attempt holds the fence of subtask ${fence.subtask} of ` +
        `xid prefix "${this.#options.prefix}" ` +
        `(fence generation ${current}, this writer's ${generation}): rolled back ${
          describeXid(xid)
        } prepared for checkpoint ${checkpointId}`,
    );
  }

  /**
   * Drops the connection: an open, unprepared transaction is rolled back by
   * the server (as on a crash); prepared ones stay. Never commits.
   */
  close(): void {
    this.#closed = true;
    this.#batch.clear();
    releaseConnection(this.#connection);
    releaseConnection(this.#options.control);
    this.#connection = undefined;
    this.#xid = undefined;
  }
}
