/**
 * What a key of keyed state is ({@linkcode Key}: a primitive or a tuple of
 * primitives), its identity as a `Map` key ({@linkcode stateKeyOf} and its
 * inverse {@linkcode keyOfStateKey}), and the errors naming a value that is
 * not a key. Key groups, which the key's hash assigns, are `key_group.ts`
 * (which re-exports these names).
 *
 * ## Invariants
 *
 * - Keys equal under `SameValueZero` (so `0` and `-0`, and `NaN` and `NaN`)
 *   have the same {@linkcode stateKeyOf}; `keyOfStateKey(stateKeyOf(k))`
 *   is `k` (with `-0` as `0`).
 *
 * @module
 */

/** A primitive key, or one element of a composite key. */
export type KeyPart = string | number | boolean | bigint;

/**
 * A key of keyed state: a primitive, or a tuple of primitives for a
 * composite key (`["user-1", 2024]`). Tuples are compared by content.
 */
export type Key = KeyPart | readonly KeyPart[];

/** A key's identity as a `Map` key; see {@linkcode stateKeyOf}. */
export type StateKey = KeyPart;

/**
 * The error for a value that is not a {@linkcode Key}, naming it.
 * @param key the value given as a key.
 * @returns a `TypeError` to throw.
 */
export function unsupportedKey(key: unknown): TypeError {
  return new TypeError(
    `A key must be a string, number, boolean, bigint or an array of those: current value is ${
      describe(key)
    }`,
  );
}

/**
 * A `Map`-usable primitive identity for a key, equal (by `SameValueZero`)
 * for equal keys and different for different keys:
 *
 * - numbers (with `-0` as `0`), booleans and bigints are themselves;
 * - a string is itself, unless it starts with U+0000, in which case it is
 *   prefixed with one more U+0000 (so it cannot collide with a tuple);
 * - a tuple is a string starting with U+0000 `(`: each element as
 *   `s<length>:<string>`, `n<String(x)>;`, `b<String(x)>;`, `t` or `f`.
 *   (`String(-0)` is `"0"`, so `[-0]` and `[0]` are one key, as in hashing.)
 *
 * {@linkcode keyOfStateKey} inverts it. Allocates only for tuples and for
 * strings starting with U+0000.
 *
 * @param key the key.
 * @returns the key's identity.
 * @throws {TypeError} for a key of an unsupported type.
 */
export function stateKeyOf(key: Key): StateKey {
  switch (typeof key) {
    case "string":
      return key.charCodeAt(0) === 0 ? "\u0000" + key : key;
    case "number":
      return key === 0 ? 0 : key; // -0 -> 0
    case "boolean":
    case "bigint":
      return key;
  }
  if (typeof key === "object" && key !== null && Array.isArray(key)) {
    let out = "\u0000(";
    for (let i = 0; i < key.length; i++) {
      const part: unknown = key[i];
      switch (typeof part) {
        case "string":
          out += "s" + part.length + ":" + part;
          break;
        case "number":
          out += "n" + String(part) + ";";
          break;
        case "bigint":
          out += "b" + String(part) + ";";
          break;
        case "boolean":
          out += part ? "t" : "f";
          break;
        default:
          throw unsupportedKeyPart(i, part);
      }
    }
    return out;
  }
  throw unsupportedKey(key);
}

/**
 * The error for element `index` of a composite key that is not a
 * {@linkcode KeyPart}, naming it.
 * @param index the element's index in the key.
 * @param part the element.
 * @returns a `TypeError` to throw.
 */
export function unsupportedKeyPart(index: number, part: unknown): TypeError {
  return new TypeError(
    `A composite key's elements must be strings, numbers, booleans or bigints: element ${index} is ${
      describe(part)
    }`,
  );
}

/**
 * The key whose {@linkcode stateKeyOf} is `stateKey` (its inverse). A number
 * key `-0` comes back as `0`.
 *
 * @param stateKey a value returned by {@linkcode stateKeyOf}.
 * @returns the key.
 * @throws {Error} when `stateKey` is a malformed tuple encoding.
 */
export function keyOfStateKey(stateKey: StateKey): Key {
  if (typeof stateKey !== "string" || stateKey.charCodeAt(0) !== 0) return stateKey;
  if (stateKey.charCodeAt(1) === 0) return stateKey.slice(1);
  const parts: KeyPart[] = [];
  let i = 2;
  const n = stateKey.length;
  while (i < n) {
    const tag = stateKey[i];
    if (tag === "t" || tag === "f") {
      parts.push(tag === "t");
      i++;
    } else if (tag === "s") {
      const colon = stateKey.indexOf(":", i);
      const len = Number(stateKey.slice(i + 1, colon));
      if (colon < 0 || !Number.isInteger(len)) break;
      parts.push(stateKey.slice(colon + 1, colon + 1 + len));
      i = colon + 1 + len;
    } else if (tag === "n" || tag === "b") {
      const semi = stateKey.indexOf(";", i);
      if (semi < 0) break;
      const text = stateKey.slice(i + 1, semi);
      parts.push(tag === "n" ? Number(text) : BigInt(text));
      i = semi + 1;
    } else {
      break;
    }
  }
  if (i !== n || stateKey[1] !== "(") {
    throw new Error(
      `Cannot decode a composite state key: current value is ${JSON.stringify(stateKey)}`,
    );
  }
  return parts;
}

function describe(value: unknown): string {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return `an object (${Object.prototype.toString.call(value)})`;
  }
  try {
    return String(JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
