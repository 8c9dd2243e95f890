/**
 * What a job left in its checkpoint bucket after it ended, checked against
 * retention's contract (Flink's `CompletedCheckpointStore` shutdown and
 * `SharedStateRegistry`): with `retainOnFinish: false` nothing of the job
 * is left; with `retainOnFinish: true` only the retained checkpoints'
 * objects (`<jobId>/chk-<id>/…`) and the shared blobs
 * (`<jobId>/shared/…`) their metadata refers to, and every blob a retained
 * checkpoint refers to is there.
 *
 * Objects are listed with the Object Store's own `list()` (deleted objects
 * left out), so the count is what a user of the bucket sees.
 *
 * @module
 */

import { connect, objApi } from "../runtime/actor/nats_deps.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";

/** The objects of one job in a checkpoint bucket, sorted out. */
export interface CheckpointLeftovers {
  /** Every object name of the bucket (all jobs). */
  readonly objects: readonly string[];
  /** Job ids that own at least one object. */
  readonly jobs: readonly string[];
  /** Completed checkpoints still stored, per job (their `_metadata` readable). */
  readonly retained: Readonly<Record<string, readonly number[]>>;
  /** Shared blobs (`shared/<name>`, relative to the job) no retained checkpoint refers to. */
  readonly unreferencedShared: readonly string[];
  /** Blobs (`chk-…` or `shared/…`) a retained checkpoint refers to but the bucket lacks. */
  readonly missing: readonly string[];
  /** Objects under `chk-<id>/` of a checkpoint that is not a retained completed one. */
  readonly strayCheckpointObjects: readonly string[];
}

/** Every string under a `path` key anywhere in `value` (the handles of a metadata). */
function handlePaths(value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) {
    for (const v of value) handlePaths(v, into);
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      // An inline handle's bytes are in the metadata: no object of its own.
      if (k === "path" && typeof v === "string") {
        if (!("inline" in value) || (value as { inline?: unknown }).inline === undefined) {
          into.add(v);
        }
      } else handlePaths(v, into);
    }
  }
  return into;
}

/**
 * Lists `bucket` on the NATS server at `servers` and checks it against the
 * retained checkpoints' metadata (see the module docs).
 * @throws {Error} when the bucket cannot be opened or a metadata not read.
 */
export async function auditCheckpointLeftovers(
  servers: string,
  bucket: string,
): Promise<CheckpointLeftovers> {
  const nc = await connect({ servers });
  try {
    let objects: string[] = [];
    try {
      const store = await new objApi.Objm(nc).open(bucket);
      objects = (await store.list()).filter((o) => !o.deleted).map((o) => o.name).sort();
    } catch (error) {
      if (!/not found|no stream/i.test(String(error))) throw error;
    }
    const jobs = [...new Set(objects.map((o) => o.split("/")[0]!))].sort();
    const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
    const retained: Record<string, number[]> = {};
    const unreferencedShared: string[] = [];
    const missing: string[] = [];
    const strayCheckpointObjects: string[] = [];
    for (const job of jobs) {
      const completed = (await storage.listCompleted(job)).map(Number);
      retained[job] = completed;
      const referenced = new Set<string>();
      for (const id of completed) {
        handlePaths(await storage.readMetadata(job, id), referenced);
      }
      const have = new Set(
        objects.filter((o) => o.startsWith(`${job}/`)).map((o) => o.slice(job.length + 1)),
      );
      for (const name of have) {
        if (name.startsWith("shared/")) {
          if (!referenced.has(name)) unreferencedShared.push(`${job}/${name}`);
        } else {
          const chk = /^chk-(\d+)\//.exec(name)?.[1];
          if (chk === undefined || !completed.includes(Number(chk))) {
            strayCheckpointObjects.push(`${job}/${name}`);
          }
        }
      }
      for (const path of referenced) {
        if (!have.has(path)) missing.push(`${job}/${path}`);
      }
    }
    return { objects, jobs, retained, unreferencedShared, missing, strayCheckpointObjects };
  } finally {
    await nc.close();
  }
}

/** One line: `LEFTOVERS objects=… jobs=… retained=… unreferenced_shared=… missing=… stray=…`. */
export function leftoversLine(l: CheckpointLeftovers): string {
  const retained = Object.entries(l.retained).map(([j, ids]) => `${j}:[${ids.join(",")}]`);
  return `LEFTOVERS objects=${l.objects.length} jobs=${l.jobs.length} ` +
    `retained=${retained.join(";") || "-"} unreferenced_shared=${l.unreferencedShared.length} ` +
    `missing=${l.missing.length} stray=${l.strayCheckpointObjects.length}`;
}
