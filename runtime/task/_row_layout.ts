/**
 * Layout 4 of the record codec (`./record_codec.ts`), "nested objects": the
 * column-by-column layout of table rows. A plain object whose one key holds a
 * fixed-length tuple of scalars (a table `Row`, `{ kind, fields: [...] }`,
 * the record of every SQL exchange) is flattened into one field per
 * top-level scalar key plus one field per tuple element, in key order.
 *
 * This file holds the layout's pieces that do not touch the codec's shape
 * cache: the tuple's place in the key list (`[key, length]`), the flattened
 * field order, the generated-code fragments the codec's extract/build
 * functions splice in, and the decoder's validation of the key list. Shape
 * detection, caching and code generation live in `./_record_shape.ts`, the
 * column I/O in `./record_codec.ts`, shared with the other layouts. Private
 * to the record codec (hence the `_`).
 *
 * @module
 */

/** Layout byte of nested objects (header byte 1 of a record codec block). */
export const LAYOUT_NESTED = 4;

/** Which top-level key holds the tuple (its index in the key list), and the tuple's length (>= 1). */
export interface RowTuple {
  readonly key: number;
  readonly length: number;
}

/**
 * The key list of a nested shape as written to the block: the UTF-8 source of
 * `JSON.stringify(keys)` with the tuple's key written `[key, length]`, e.g.
 * `["kind",["fields",3]]`.
 */
export function rowKeyList(keys: readonly string[], nested: RowTuple): string {
  const listed: (string | [string, number])[] = keys.slice();
  listed[nested.key] = [keys[nested.key]!, nested.length];
  return JSON.stringify(listed);
}

/** Per flattened field of a nested shape: its top-level key and its tuple index (-1: the key's own value). */
function nestedFields(keys: readonly string[], nested: RowTuple): { key: number; index: number }[] {
  const fields: { key: number; index: number }[] = [];
  for (let k = 0; k < keys.length; k++) {
    if (k === nested.key) {
      for (let i = 0; i < nested.length; i++) fields.push({ key: k, index: i });
    } else {
      fields.push({ key: k, index: -1 });
    }
  }
  return fields;
}

/**
 * The expression reading flattened field `j` of record `r` in generated code;
 * tuple elements read `t`, which {@linkcode rowExtractLines} binds.
 */
export function rowFieldAccess(keys: readonly string[], nested: RowTuple, j: number): string {
  const { key, index } = nestedFields(keys, nested)[j]!;
  return index < 0 ? `r[${JSON.stringify(keys[key])}]` : `t[${index}]`;
}

/**
 * Generated-code lines, run after the record's keys were checked, that bind
 * `t` to the record's tuple and return `false` unless it is a plain array
 * (constructor `arrayCtor`) of the shape's length.
 */
export function rowExtractLines(keys: readonly string[], nested: RowTuple): string[] {
  return [
    `const t = r[${JSON.stringify(keys[nested.key])}];`,
    `if (!Array.isArray(t) || t.constructor !== arrayCtor || t.length !== ${nested.length}) return false;`,
  ];
}

/** The object literal of a nested shape's record, from its flattened fields' expressions. */
export function rowRecordLiteral(
  keys: readonly string[],
  nested: RowTuple,
  parts: readonly string[],
): string {
  const entries: string[] = [];
  let j = 0;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const name = key === "__proto__" ? `["__proto__"]` : JSON.stringify(key);
    if (k === nested.key) {
      entries.push(`${name}: [${parts.slice(j, j + nested.length).join(", ")}]`);
      j += nested.length;
    } else {
      entries.push(`${name}: ${parts[j++]}`);
    }
  }
  return `{ ${entries.join(", ")} }`;
}

/**
 * Reads the key list of a nested block: a JSON array of distinct keys,
 * exactly one written `[key, length]` (the tuple, length >= 1), the
 * scalar keys plus the tuple's length adding up to `fieldCount`.
 * Calls `fail` (which throws the codec's `CodecError`) when it is not.
 */
export function parseRowKeyList(
  fieldCount: number,
  keysJson: string,
  fail: (what: string) => never,
): { keys: string[]; nested: RowTuple } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(keysJson);
  } catch {
    fail("its key list is not JSON");
  }
  const bad = (): never =>
    fail(
      `its key list is not an array of distinct keys with one [key, length] adding up to ${fieldCount} fields`,
    );
  if (!Array.isArray(parsed) || parsed.length === 0) bad();
  const keys: string[] = [];
  let nested: { key: number; length: number } | undefined;
  let fields = 0;
  (parsed as unknown[]).forEach((entry, k) => {
    if (typeof entry === "string") {
      keys.push(entry);
      fields++;
    } else if (
      nested === undefined && Array.isArray(entry) && entry.length === 2 &&
      typeof entry[0] === "string" && Number.isInteger(entry[1]) && entry[1] >= 1
    ) {
      keys.push(entry[0]);
      nested = { key: k, length: entry[1] };
      fields += entry[1];
    } else {
      bad();
    }
  });
  if (nested === undefined || fields !== fieldCount || new Set(keys).size !== keys.length) {
    bad();
  }
  return { keys, nested: nested! };
}
