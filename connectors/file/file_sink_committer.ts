/**
 * The file sink's committer (Flink's `FileCommitter`): a committable's
 * pending file is renamed to its finished name. Idempotent, and it never
 * hides loss.
 *
 * ## Decision per committable ({@linkcode decideFileCommit}, pure)
 *
 * | pending file | finished file | outcome |
 * |---|---|---|
 * | present, size as committed | absent | rename, then fsync the directory |
 * | present, other size | absent | fail without restarts: the pending file changed |
 * | present | present | fail without restarts: the rename would overwrite a file |
 * | absent | present, size as committed | already committed (a replay) |
 * | absent | present, other size | fail without restarts: another file has the name |
 * | absent | absent | fail without restarts: the part file is lost |
 *
 * An I/O error while looking or renaming (a full disk, a missing mount)
 * is retried (`retryLater`), then fails the attempt; the restore commits
 * again.
 *
 * @module
 */

import type { CommitRequest, Committer } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { logger } from "../../runtime/log.ts";
import type { FileSinkCommittable } from "./file_sink_state.ts";

const log = logger("file-sink");

/** What is on disk for one committable: each file's size, or `undefined` when absent. */
export interface FileCommitFacts {
  /** Size in bytes of the pending file, or `undefined`. */
  readonly pendingSize: number | undefined;
  /** Size in bytes of the finished file, or `undefined`. */
  readonly finalSize: number | undefined;
}

/** What to do with one committable (see the module docs' table). */
export type FileCommitDecision =
  | { readonly kind: "rename" }
  | { readonly kind: "already-committed" }
  | { readonly kind: "fail"; readonly reason: string };

/**
 * Decides a committable's commit from what is on disk (pure).
 * @param committable the committable.
 * @param facts the sizes of its pending and finished files.
 * @returns the decision; a `fail` carries the reason, naming files and sizes.
 */
export function decideFileCommit(
  committable: FileSinkCommittable,
  facts: FileCommitFacts,
): FileCommitDecision {
  const { pendingPath, finalPath, sizeBytes } = committable;
  const { pendingSize, finalSize } = facts;
  if (pendingSize !== undefined) {
    if (finalSize !== undefined) {
      return {
        kind: "fail",
        reason: `both the pending file '${pendingPath}' and the finished file '${finalPath}' ` +
          `exist (${finalSize} bytes); renaming would overwrite a file this sink did not finish`,
      };
    }
    if (pendingSize !== sizeBytes) {
      return {
        kind: "fail",
        reason:
          `the pending file '${pendingPath}' must have ${sizeBytes} bytes, as pre-committed: ` +
          `current size is ${pendingSize}`,
      };
    }
    return { kind: "rename" };
  }
  if (finalSize === undefined) {
    return {
      kind: "fail",
      reason: `neither the pending file '${pendingPath}' nor the finished file '${finalPath}' ` +
        `exists: the ${sizeBytes} bytes pre-committed there are lost`,
    };
  }
  if (finalSize !== sizeBytes) {
    return {
      kind: "fail",
      reason: `the finished file '${finalPath}' must have ${sizeBytes} bytes, as pre-committed: ` +
        `current size is ${finalSize} (another file has its name)`,
    };
  }
  return { kind: "already-committed" };
}

/** A committable that cannot be committed; the job fails without restarts. */
export class FileCommitError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the sink subtask, the checkpoint and the reason.
   */
  constructor(message: string) {
    super(message);
    this.name = "FileCommitError";
  }
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await Deno.stat(path)).size;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? (slash === 0 ? "/" : ".") : path.slice(0, slash);
}

/** Renames pending part files to finished; see the module docs. */
export class FileSinkCommitter implements Committer<FileSinkCommittable> {
  readonly #basePath: string;
  readonly #where: string;

  /**
   * Builds the committer.
   * @param basePath the output directory.
   * @param where names the sink subtask in errors and logs.
   */
  constructor(basePath: string, where: string) {
    this.#basePath = basePath;
    this.#where = where;
  }

  /** Commits each request, in order (see the module docs). */
  async commit(requests: readonly CommitRequest<FileSinkCommittable>[]): Promise<void> {
    const dirsToSync = new Set<string>();
    for (const request of requests) {
      const committable = request.committable;
      const pending = `${this.#basePath}/${committable.pendingPath}`;
      const final = `${this.#basePath}/${committable.finalPath}`;
      try {
        const facts = { pendingSize: await sizeOf(pending), finalSize: await sizeOf(final) };
        const decision = decideFileCommit(committable, facts);
        switch (decision.kind) {
          case "rename":
            await Deno.rename(pending, final);
            dirsToSync.add(parentOf(final));
            break;
          case "already-committed":
            request.signalAlreadyCommitted();
            break;
          case "fail":
            request.signalFailedWithKnownReason(
              new FileCommitError(
                `${this.#where}: cannot commit the part file of checkpoint ${request.checkpointId}: ${decision.reason}`,
              ),
            );
            break;
        }
      } catch (error) {
        log.warn(
          `${this.#where}: committing '${committable.pendingPath}' of checkpoint ${request.checkpointId} ` +
            `failed, will retry: ${error instanceof Error ? error.message : error}`,
        );
        request.retryLater();
      }
    }
    for (const dir of dirsToSync) {
      const handle = await Deno.open(dir, { read: true });
      try {
        await handle.sync();
      } finally {
        handle.close();
      }
    }
  }

  /** Nothing to release. */
  close(): void {}
}
