/**
 * Checks an options object at run time against the keys and value kinds its
 * interface declares ({@linkcode checkOptions}; pure). Under `deno run` a
 * job's source is not type-checked, so `enableCheckpointing(500, {
 * intervalMs: 5 })` (no such option) or `new JetStreamSource({ bounded:
 * "yes" })` (a string where a boolean belongs) would otherwise be ignored or
 * misread silently. Flink's `ConfigOption` validation (`Configuration`
 * refusing a value of the wrong type, `FactoryUtil.validateFactoryOptions`
 * listing unsupported options with the supported ones) is the model.
 *
 * The shape's type has one entry per key of the options interface, so the
 * type checker keeps the list of known options in step with the interface.
 *
 * A leaf module: no imports.
 *
 * @example
 * ```ts
 * import { checkOptions } from "./options_check.ts";
 *
 * interface Opts { readonly timeoutMs?: number; readonly bounded?: boolean }
 * const shape = { timeoutMs: "number", bounded: "boolean" } as const;
 * checkOptions<Opts>("enableCheckpointing", { timeoutMs: 5 }, shape); // passes
 * try {
 *   checkOptions<Opts>("enableCheckpointing", { intervalMs: 5 }, shape);
 * } catch (e) {
 *   console.assert(
 *     (e as Error).message ===
 *       "enableCheckpointing options: unknown option 'intervalMs' (known: timeoutMs, bounded)",
 *   );
 * }
 * ```
 *
 * @module
 */

/**
 * What kind of value an option takes, as `typeof` sees it: `"object"` is any
 * non-null object (arrays included), `"any"` is not checked (unions of
 * several kinds, class instances checked elsewhere).
 */
export type OptionKind = "boolean" | "string" | "number" | "function" | "object" | "any";

/** One {@linkcode OptionKind} per key of the options type `T`, every key listed. */
export type OptionsShape<T> = { readonly [K in keyof Required<T>]-?: OptionKind };

/**
 * Checks that `options` is an object (or `undefined`: no options), that each
 * of its own keys is one of `shape`'s, and that each value that is not
 * `undefined` has the kind `shape` gives its key. Performs no I/O.
 *
 * @param where what takes the options, for the message, e.g.
 *   `"enableCheckpointing"` or `"JetStreamSource"`.
 * @param options the options object as the caller passed it.
 * @param shape the known keys and the kind of value of each.
 * @throws {TypeError} when `options` is neither an object nor `undefined`
 *   (`<where> options must be an object: current value is 5`), or an option
 *   has the wrong kind (`<where> options: 'bounded' must be a boolean:
 *   current value is "yes"`).
 * @throws {RangeError} when a key is unknown (`<where> options: unknown
 *   option 'intervalMs' (known: timeoutMs, …)`; several unknown keys are
 *   named together).
 */
export function checkOptions<T>(where: string, options: unknown, shape: OptionsShape<T>): void {
  if (options === undefined) return;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`${where} options must be an object: current value is ${show(options)}`);
  }
  const known = Object.keys(shape) as (keyof typeof shape & string)[];
  const record = options as Record<string, unknown>;
  const unknown = Object.keys(record).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length > 0) {
    const names = unknown.map((k) => `'${k}'`).join(", ");
    throw new RangeError(
      `${where} options: unknown option${unknown.length > 1 ? "s" : ""} ${names} ` +
        `(known: ${known.join(", ")})`,
    );
  }
  for (const key of known) {
    const kind = shape[key];
    const value = record[key];
    if (value === undefined || kind === "any" || kindOf(value) === kind) continue;
    throw new TypeError(
      `${where} options: '${key}' must be ${ARTICLE[kind]} ${kind}: current value is ${
        show(value)
      }`,
    );
  }
}

const ARTICLE: Readonly<Record<OptionKind, string>> = {
  boolean: "a",
  string: "a",
  number: "a",
  function: "a",
  object: "an",
  any: "",
};

function kindOf(value: unknown): string {
  return value === null ? "null" : typeof value;
}

/** A short, readable form of a value for a message. */
function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return `a function`;
  if (Array.isArray(value)) return `an array`;
  if (typeof value === "object" && value !== null) return `an object`;
  return String(value);
}

/**
 * `value` when it is a positive integer (1, 2, …), for settings such as a
 * parallelism, an interval in ms or a count. Pure.
 *
 * @param name the setting, for the message, e.g. `"parallelism"`.
 * @param value the value as the caller passed it.
 * @returns `value`.
 * @throws {RangeError} otherwise (`<name> must be a positive integer:
 *   current value is 0`).
 */
export function checkPositiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer: current value is ${value}`);
  }
  return value;
}
