/**
 * How `object_store_storage.ts` names objects in its bucket: the Object
 * Store key of an object name, the object name of a metadata-subject token,
 * and which objects belong to a job (`<jobId>/chk-<id>/<name>` and
 * `<jobId>/shared/<name>`).
 *
 * @module
 */

import { objApi } from "../actor/nats_deps.ts";
import type { CheckpointId } from "./types.ts";
import { CHECKPOINT_DIR, isValidName, METADATA, SHARED_DIR } from "./storage_rules.ts";

/** One object of a job, found by listing. */
export interface JobObject {
  /** The checkpoint it belongs to; `null` for a shared object. */
  readonly checkpointId: CheckpointId | null;
  /** The name within the checkpoint (`_metadata` or a state name) or the shared namespace. */
  readonly name: string;
  /** `<jobId>/chk-<id>/<name>` or `<jobId>/shared/<name>`. */
  readonly objectName: string;
}

/**
 * The object of a job that `objectName` names, or `undefined` when it names
 * no object of `jobId` (another job's, or not a checkpoint's nor a shared one).
 */
export function jobObjectOf(jobId: string, objectName: string | undefined): JobObject | undefined {
  const jobPrefix = `${jobId}/`;
  if (objectName === undefined || !objectName.startsWith(jobPrefix)) return undefined;
  const segments = objectName.slice(jobPrefix.length).split("/");
  const name = segments[1] ?? "";
  if (segments.length !== 2) return undefined;
  if (segments[0] === SHARED_DIR) {
    return isValidName(name) ? { checkpointId: null, name, objectName } : undefined;
  }
  const match = CHECKPOINT_DIR.exec(segments[0] ?? "");
  if (match === null || (name !== METADATA && !isValidName(name))) return undefined;
  return { checkpointId: Number(match[1]), name, objectName };
}

/**
 * The name handed to the Object Store client: the UTF-8 bytes of `objectName`
 * as a binary string, because the client base64-encodes names with `btoa`,
 * which takes Latin-1 only. Identical to `objectName` when it is ASCII.
 */
export function storeKey(objectName: string): string {
  return String.fromCharCode(...new TextEncoder().encode(objectName));
}

/** The object name of a metadata-subject token, or `undefined` if it is not one. */
export function nameOfToken(token: string): string | undefined {
  try {
    const bytes = objApi.Base64UrlPaddedCodec.decode(token, true) as Uint8Array;
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
