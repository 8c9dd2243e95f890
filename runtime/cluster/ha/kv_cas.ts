/**
 * Compare-and-set on one NATS KV key, the only write the high-availability
 * services make (the lease in `leader_election_service.ts`, job records in
 * `job_store.ts`): a write names the revision it expects the key to be at
 * (`"absent"`: no value, or a delete marker), and loses when the key moved
 * on. Expected outcomes are a union, not exceptions; connection trouble
 * throws.
 *
 * @module
 */

import { jetstreamApi, kvApi, type NatsConnection } from "../../actor/nats_deps.ts";

/** What a compare-and-set write did. */
export type CasOutcome =
  | { readonly kind: "written"; readonly revision: number }
  | { readonly kind: "conflict" };

/** A key's value as read, with its revision. */
export interface KvValue {
  /** The key's revision (its message's stream sequence). */
  readonly revision: number;
  /** The bytes stored. */
  readonly data: Uint8Array;
}

/**
 * Opens KV bucket `bucket`, creating it (history 1) when it does not exist.
 * @throws {Error} naming the bucket when it can be neither created nor opened.
 */
export async function openBucket(nc: NatsConnection, bucket: string): Promise<kvApi.KV> {
  const kvm = new kvApi.Kvm(nc);
  try {
    return await kvm.create(bucket, { history: 1 });
  } catch (createError) {
    try {
      const kv = await kvm.open(bucket);
      await kv.status();
      return kv;
    } catch {
      throw new Error(
        `Cannot create or open KV bucket ${bucket}: ${
          createError instanceof Error ? createError.message : createError
        }`,
        { cause: createError },
      );
    }
  }
}

/**
 * Reads `key`: its value and revision, or undefined when it has none (never
 * written, deleted or purged).
 * @throws {Error} when NATS cannot be reached (from the client).
 */
export async function readKey(kv: kvApi.KV, key: string): Promise<KvValue | undefined> {
  const entry = await kv.get(key);
  if (entry === null || entry.operation !== "PUT") return undefined;
  return { revision: entry.revision, data: entry.value };
}

/**
 * Writes `data` to `key` if the key is at `expected` (`"absent"`: it has no
 * value).
 * @returns `written` with the new revision, or `conflict` when the key moved on.
 * @throws {Error} when NATS cannot be reached (from the client).
 */
export async function casWrite(
  kv: kvApi.KV,
  key: string,
  data: Uint8Array,
  expected: number | "absent",
): Promise<CasOutcome> {
  try {
    const revision = expected === "absent"
      ? await kv.create(key, data)
      : await kv.update(key, data, expected);
    return { kind: "written", revision };
  } catch (error) {
    if (isWrongLastSequence(error) || isWrongLastSequence((error as Error)?.cause)) {
      return { kind: "conflict" };
    }
    throw error;
  }
}

function isWrongLastSequence(error: unknown): boolean {
  return error instanceof jetstreamApi.JetStreamApiError &&
    (error.code === jetstreamApi.JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === jetstreamApi.JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}
