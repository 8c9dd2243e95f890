/**
 * Internal: how {@linkcode SqliteKeyedStateBackend} writes a key, a
 * namespace and a map state's user key into the TEXT columns of its rows,
 * and reads them back. Not part of the public API.
 *
 * ## Encodings
 *
 * | column | JS value                           | text                               |
 * | ------ | ---------------------------------- | ---------------------------------- |
 * | `k`    | a key's identity (`stateKeyOf`)    | `s<string>`, `n<number>`, `b<bigint>`, `t`, `f` |
 * | `ns`   | a namespace (string)               | the namespace                      |
 * | `uk`   | a map state's user key             | as `k`; `""` for other kinds       |
 *
 * The tag keeps `1`, `"1"`, `1n` and `true` apart, as `Map` keys are. SQLite
 * cuts TEXT at U+0000 when it compares and returns it, so every text is
 * escaped: U+0001 becomes U+0001 U+0002 and U+0000 becomes U+0001 U+0001.
 * The escape is a bijection and keeps distinct strings distinct.
 *
 * @module
 */

import { type Key, keyOfStateKey, type StateKey } from "../key_group.ts";

// deno-lint-ignore no-control-regex -- the escape is about exactly these characters
const ESCAPE_CHARS = /[\u0000\u0001]/;
// deno-lint-ignore no-control-regex -- see above
const ESCAPED = /\u0001[\u0001\u0002]/g;

/** `s` with U+0000 and U+0001 escaped (see the module docs); allocates only when one occurs. */
export function escapeText(s: string): string {
  if (!ESCAPE_CHARS.test(s)) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out += c === 0 ? "\u0001\u0001" : c === 1 ? "\u0001\u0002" : s[i];
  }
  return out;
}

/** The inverse of {@linkcode escapeText}. */
export function unescapeText(s: string): string {
  if (s.indexOf("\u0001") < 0) return s;
  return s.replace(ESCAPED, (m) => m === "\u0001\u0001" ? "\u0000" : "\u0001");
}

/**
 * The text of a key identity (or a map user key) for the `k`/`uk` columns.
 * @throws {TypeError} naming `what` for a value that is not a string,
 *   number, boolean or bigint.
 */
export function primitiveText(value: unknown, what: string): string {
  switch (typeof value) {
    case "string":
      return "s" + escapeText(value);
    case "number":
      return "n" + String(value === 0 ? 0 : value);
    case "bigint":
      return "b" + String(value);
    case "boolean":
      return value ? "t" : "f";
  }
  throw new TypeError(
    `${what} must be a string, number, boolean or bigint in the SQLite keyed state backend: current value is ${
      describe(value)
    }`,
  );
}

/**
 * The value whose {@linkcode primitiveText} is `text`.
 * @throws {Error} for a text no key was written as (a corrupt database).
 */
export function primitiveOfText(text: string): string | number | bigint | boolean {
  const tag = text.charCodeAt(0);
  const rest = text.slice(1);
  switch (tag) {
    case 0x73: // s
      return unescapeText(rest);
    case 0x6e: // n
      return Number(rest);
    case 0x62: // b
      return BigInt(rest);
    case 0x74: // t
      return true;
    case 0x66: // f
      return false;
  }
  throw new Error(
    `Corrupt SQLite keyed state: a key column holds an untagged text, current value is ${
      JSON.stringify(text)
    }`,
  );
}

/** The key (original form) of a `k` column's text. */
export function keyOfText(text: string): Key {
  return keyOfStateKey(primitiveOfText(text) as StateKey);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return Object.prototype.toString.call(value);
  return `${String(value)} (${typeof value})`;
}
