/**
 * The check of a restored split of a source that cannot be replayed (a
 * socket, a core NATS subject): its state is only `{ splitId, <count> }`,
 * an id with a fixed prefix and how many records the split emitted so far
 * (informational). Shared by the socket source and the core NATS source;
 * Flink's sources of this kind (`SocketTextStreamFunction`) keep no split
 * state at all, so this is Weir's own shape.
 *
 * The check is pure: no I/O. A split read back from a checkpoint passed
 * through MessagePack, so it may be anything a corrupt or foreign
 * checkpoint holds; a wrong one fails the job once
 * ({@linkcode SuppressRestartsError}): a restart would read the same
 * checkpoint again.
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";

/** `value` for an error message: JSON when possible (else `String(value)`), at most 100 characters then `…`. */
export function previewValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/** What a counting split looks like, for {@linkcode checkCountingSplit}. */
export interface CountingSplitShape<F extends string> {
  /** The split's kind in messages, e.g. `"socket source split"`. */
  readonly kind: string;
  /** How every `splitId` of this kind starts, e.g. `"socket-"`. */
  readonly prefix: string;
  /** The count field's name, e.g. `"linesEmitted"`. */
  readonly countField: F;
}

/**
 * Checks a restored counting split (see the module docs).
 *
 * @param raw the restored split.
 * @param where names the source, for the message.
 * @param shape the split's kind, id prefix and count field.
 * @returns the split, as `{ splitId, [countField] }` (other fields dropped).
 * @throws {SuppressRestartsError} `Invalid <kind> in the checkpoint of
 *   <where>: …` naming the field that is wrong and its current value.
 */
export function checkCountingSplit<F extends string>(
  raw: unknown,
  where: string,
  shape: CountingSplitShape<F>,
): { readonly splitId: string } & { readonly [K in F]: number } {
  const fail = (problem: string) =>
    new SuppressRestartsError(`Invalid ${shape.kind} in the checkpoint of ${where}: ${problem}`);
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw fail(
      `expected an object { splitId, ${shape.countField} }: current value is ${previewValue(raw)}`,
    );
  }
  const { splitId, [shape.countField]: count } = raw as Record<string, unknown>;
  if (typeof splitId !== "string" || !splitId.startsWith(shape.prefix)) {
    throw fail(
      `field 'splitId' must be a string starting with ${
        JSON.stringify(shape.prefix)
      }: current value is ${previewValue(splitId)}`,
    );
  }
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0) {
    throw fail(
      `field '${shape.countField}' must be a non-negative integer: current value is ${
        previewValue(count)
      }`,
    );
  }
  return { splitId, [shape.countField]: count } as
    & { readonly splitId: string }
    & { readonly [K in F]: number };
}
