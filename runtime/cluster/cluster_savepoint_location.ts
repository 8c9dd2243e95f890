/**
 * Where a cluster keeps and finds savepoints (Flink's
 * `state.savepoints.dir`, fixed here): in its checkpoint bucket, the only
 * storage every worker's slot threads read, so that a savepoint can be
 * restored on any worker. The coordinator uses these two functions to
 * place a triggered savepoint and to check the savepoint a submission
 * restores.
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import {
  OBJECT_STORE_SAVEPOINT_SCHEME,
  parseSavepointPath,
  readSavepointMetadata,
} from "../checkpoint/savepoint_storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { SubmitRequest } from "./cluster_protocol.ts";
import { checkRestorable, ResumeError } from "./local_executor.ts";

/**
 * The storage of a savepoint directory: the checkpoint bucket.
 *
 * @param storage the cluster's checkpoint storage (its bucket `bucket`).
 * @param bucket the checkpoint bucket's name.
 * @param directory the directory a savepoint request names, if any.
 * @returns `storage`.
 * @throws {RangeError} for any directory other than `nats-object-store://<bucket>`.
 */
export function clusterSavepointStorage(
  storage: CheckpointStorage,
  bucket: string,
  directory: string | undefined,
): CheckpointStorage {
  const location = `${OBJECT_STORE_SAVEPOINT_SCHEME}${bucket}`;
  if (directory === undefined || directory.replace(/\/+$/, "") === location) return storage;
  throw new RangeError(
    `a cluster stores savepoints in its checkpoint bucket, which every worker reads: ` +
      `give no directory, or ${location}`,
  );
}

/**
 * Finds and checks the savepoint a submission restores: it must be in the
 * checkpoint bucket, readable, and restorable into the submitted graph.
 *
 * @param storage the cluster's checkpoint storage (its bucket `bucket`).
 * @param bucket the checkpoint bucket's name.
 * @param request a submission whose `resume.savepointPath` is set.
 * @returns the restore point (the savepoint's id as its job id, and its checkpoint id).
 * @throws {ResumeError} naming the path when it is malformed, elsewhere or unreadable;
 *   whatever `checkRestorable` throws when the graph does not fit.
 */
export async function resolveClusterSavepoint(
  storage: CheckpointStorage,
  bucket: string,
  request: SubmitRequest,
): Promise<RestorePoint> {
  const path = request.resume!.savepointPath!;
  let where;
  try {
    where = parseSavepointPath(path);
  } catch (error) {
    throw new ResumeError(`Cannot restore savepoint: ${(error as Error).message}`);
  }
  if (where.kind !== "object-store" || where.bucket !== bucket) {
    throw new ResumeError(
      `Cannot restore savepoint ${path} on this cluster: it restores savepoints in its ` +
        `checkpoint bucket (${OBJECT_STORE_SAVEPOINT_SCHEME}${bucket}/…), which every worker reads`,
    );
  }
  let meta;
  try {
    meta = await readSavepointMetadata(storage, where.savepointId);
  } catch (error) {
    throw new ResumeError(`Cannot restore savepoint ${path}: ${(error as Error).message}`);
  }
  checkRestorable(meta, request.graph, {
    what: `savepoint ${path}`,
    allowNonRestoredState: request.resume?.allowNonRestoredState ?? false,
  });
  return { jobId: where.savepointId, checkpointId: meta.checkpointId };
}
