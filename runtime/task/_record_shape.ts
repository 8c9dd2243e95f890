/**
 * The columnar shapes of the record codec (`./record_codec.ts`): which
 * records share a shape (scalars, tuples, plain objects, and the nested
 * objects of `./_row_layout.ts`), the bounded cache of shapes, and the
 * extract/build functions generated once per shape, so that every decoded
 * record of a shape has the same hidden class. The block format, the column
 * I/O and the scratch buffer stay in `./record_codec.ts`, whose module docs
 * list the shapes and the format. Private to the record codec (hence the
 * `_`).
 *
 * Invariant: a shape's `types`, `keys` and `keysJson` never change once
 * cached; only its generated functions are filled in, once each.
 *
 * @module
 */

import {
  LAYOUT_NESTED,
  rowExtractLines,
  rowFieldAccess,
  rowKeyList,
  rowRecordLiteral,
  type RowTuple,
} from "./_row_layout.ts";

/** Layout byte of scalars: every record a number, a string or a boolean. */
export const LAYOUT_SCALAR = 1;
/** Layout byte of tuples: arrays of one fixed length of scalars. */
export const LAYOUT_TUPLE = 2;
/** Layout byte of plain objects with one key list, every field a scalar. */
export const LAYOUT_OBJECT = 3;
/** The layout bytes written column by column (every layout but MessagePack's `0`). */
export type ColumnarLayout =
  | typeof LAYOUT_SCALAR
  | typeof LAYOUT_TUPLE
  | typeof LAYOUT_OBJECT
  | typeof LAYOUT_NESTED;
/** Type byte of a number column (`n` × f64). */
export const TYPE_NUMBER = 1;
/** Type byte of a string column (`n` × u32 UTF-16 lengths, text at the block's end). */
export const TYPE_STRING = 2;
/** Type byte of a boolean column (`n` × u8, `0`/`1`). */
export const TYPE_BOOLEAN = 3;
/** `typeof`'s name of each type byte (index 0 unused), for generated checks and messages. */
export const TYPE_NAMES = ["", "number", "string", "boolean"] as const;
/** Most fields of a columnar shape (object keys or tuple length). */
export const MAX_FIELDS = 256;
/** Most shapes whose generated functions are kept. */
const CACHE_LIMIT = 256;

/**
 * A generated column extractor: writes field `j` of each of the first `n`
 * records into its column (`offsets[j]` indexes the view of its type;
 * strings are collected in `strings`, column after column). Returns false
 * at the first record that does not have the shape.
 */
export type Extract = (
  values: readonly unknown[],
  n: number,
  f64: Float64Array,
  u8: Uint8Array,
  u32: Uint32Array,
  strings: string[],
  offsets: Int32Array,
) => boolean;

/**
 * A generated record builder: the `n` records of a block, read from its
 * columns (`offsets[j]` as for {@linkcode Extract}; `offsets[f + j]` where
 * string column `j` starts in `text`).
 */
export type Build = (
  n: number,
  f64: Float64Array,
  u8: Uint8Array,
  u32: Uint32Array,
  offsets: Int32Array,
  text: string,
) => unknown[];

/** A columnar shape; `extract`/`build` are generated on first use. */
export interface Shape {
  readonly layout: ColumnarLayout;
  /** One `TYPE_*` per field. */
  readonly types: readonly number[];
  /** Object keys (empty for scalars and tuples; for nested objects the top-level keys). */
  readonly keys: readonly string[];
  /**
   * `JSON.stringify(keys)` for objects; for nested objects the same with
   * the tuple's key written `[key, length]`; `""` otherwise.
   */
  readonly keysJson: string;
  /** Nested objects: which key holds the tuple, and the tuple's length. */
  readonly nested: RowTuple | undefined;
  /** The column extractor, once generated ({@linkcode compileExtract}). */
  extract: Extract | undefined;
  /** The record builder, once generated ({@linkcode compileBuild}). */
  build: Build | undefined;
}

/** Shapes by signature, oldest first (bounded; evicts the oldest). */
const shapes = new Map<string, Shape>();

function signatureOf(layout: number, types: readonly number[], keysJson: string): string {
  return `${layout}:${types.join("")}:${keysJson}`;
}

/**
 * The cached shape of this layout, types and key list, or `undefined` when
 * none is cached (the decoder then validates the key list and calls
 * {@linkcode shapeFor}).
 */
export function cachedShape(
  layout: ColumnarLayout,
  types: readonly number[],
  keysJson: string,
): Shape | undefined {
  return shapes.get(signatureOf(layout, types, keysJson));
}

/**
 * The one shape of this layout, types and key list, from the cache or newly
 * cached (at most 256 are kept; the oldest is evicted), so that encoder and
 * decoder share its generated functions.
 */
export function shapeFor(
  layout: ColumnarLayout,
  types: readonly number[],
  keys: readonly string[],
  keysJson: string,
  nested?: RowTuple,
): Shape {
  const signature = signatureOf(layout, types, keysJson);
  let shape = shapes.get(signature);
  if (shape === undefined) {
    if (shapes.size >= CACHE_LIMIT) shapes.delete(shapes.keys().next().value!);
    shape = { layout, types, keys, keysJson, nested, extract: undefined, build: undefined };
    shapes.set(signature, shape);
  }
  return shape;
}

function typeOf(value: unknown): number {
  switch (typeof value) {
    case "number":
      return TYPE_NUMBER;
    case "string":
      return TYPE_STRING;
    case "boolean":
      return TYPE_BOOLEAN;
    default:
      return 0;
  }
}

/** The columnar shape of `first`, or `undefined` when it has none (the module docs list the shapes). */
export function detectShape(first: unknown): Shape | undefined {
  const scalar = typeOf(first);
  if (scalar !== 0) return shapeFor(LAYOUT_SCALAR, [scalar], [], "");
  if (typeof first !== "object" || first === null) return undefined;
  const proto = Object.getPrototypeOf(first);
  if (Array.isArray(first)) {
    if (proto !== Array.prototype || first.length === 0 || first.length > MAX_FIELDS) {
      return undefined;
    }
    const types: number[] = [];
    for (let i = 0; i < first.length; i++) {
      const type = typeOf(first[i]);
      if (type === 0) return undefined;
      types.push(type);
    }
    return shapeFor(LAYOUT_TUPLE, types, [], "");
  }
  if (proto !== Object.prototype && proto !== null) return undefined;
  const keys = Object.keys(first);
  if (keys.length === 0 || keys.length > MAX_FIELDS) return undefined;
  const types: number[] = [];
  let nested: { key: number; length: number } | undefined;
  for (let k = 0; k < keys.length; k++) {
    const value = (first as Record<string, unknown>)[keys[k]!];
    const type = typeOf(value);
    if (type !== 0) {
      types.push(type);
      continue;
    }
    // One key may hold a tuple of scalars (a table Row's `fields`).
    if (
      nested !== undefined || !Array.isArray(value) ||
      Object.getPrototypeOf(value) !== Array.prototype || value.length === 0
    ) {
      return undefined;
    }
    nested = { key: k, length: value.length };
    for (const element of value) {
      const elementType = typeOf(element);
      if (elementType === 0) return undefined;
      types.push(elementType);
    }
  }
  if (types.length > MAX_FIELDS) return undefined;
  if (nested === undefined) return shapeFor(LAYOUT_OBJECT, types, keys, JSON.stringify(keys));
  return shapeFor(LAYOUT_NESTED, types, keys, rowKeyList(keys, nested), nested);
}

/** The expression reading field `j` of record `r` in generated code. */
function fieldAccess(shape: Shape, j: number): string {
  if (shape.layout === LAYOUT_SCALAR) return "r";
  if (shape.layout === LAYOUT_TUPLE) return `r[${j}]`;
  if (shape.layout === LAYOUT_NESTED) return rowFieldAccess(shape.keys, shape.nested!, j);
  return `r[${JSON.stringify(shape.keys[j])}]`;
}

/**
 * Generates the column extractor of `shape`: checks that every record has
 * the shape and writes its fields into the columns; returns false at the
 * first record that does not match.
 */
export function compileExtract(shape: Shape): Extract {
  const { layout, types, keys } = shape;
  const f = types.length;
  const lines = [
    `"use strict";`,
    `return function extract(values, n, f64, u8, u32, strings, offsets) {`,
  ];
  let stringColumn = 0;
  for (let j = 0; j < f; j++) {
    lines.push(`const o${j} = offsets[${j}];`);
    if (types[j] === TYPE_STRING) lines.push(`const s${j} = ${stringColumn++} * n;`);
  }
  lines.push(`for (let i = 0; i < n; i++) {`, `const r = values[i];`);
  if (layout === LAYOUT_OBJECT || layout === LAYOUT_NESTED) {
    lines.push(`if (typeof r !== "object" || r === null) return false;`);
    if (keys.includes("constructor")) {
      lines.push(
        `const p = Object.getPrototypeOf(r);`,
        `if (p !== objectProto && p !== null) return false;`,
      );
    } else {
      // Object.getPrototypeOf costs ~30 ns a call here; reading
      // `constructor` is nearly free. It is `Object` for a prototype of
      // `Object.prototype` and `undefined` for `null` (then checked exactly);
      // a class instance has its class. It accepts wrongly only an object
      // whose prototype chain reaches Object.prototype through objects with
      // neither an own `constructor` nor enumerable properties (the key check
      // below sees enumerable inherited ones), which MessagePack too would
      // encode as a plain object.
      lines.push(
        `const c = r.constructor;`,
        `if (c !== objectCtor && (c !== undefined || Object.getPrototypeOf(r) !== null)) return false;`,
      );
    }
    lines.push(
      // for-in walks own enumerable string keys in property order (plus
      // enumerable inherited ones, which then make the check fail).
      `let k = 0;`,
      `for (const key in r) { if (key !== keys[k]) return false; k++; }`,
      `if (k !== ${keys.length}) return false;`,
    );
    if (layout === LAYOUT_NESTED) lines.push(...rowExtractLines(keys, shape.nested!));
  } else if (layout === LAYOUT_TUPLE) {
    lines.push(
      // `constructor` as for objects: `Array` unless a subclass (or a
      // prototype without an own `constructor`) is in between.
      `if (!Array.isArray(r) || r.constructor !== arrayCtor || r.length !== ${f}) return false;`,
    );
  }
  for (let j = 0; j < f; j++) {
    const type = types[j]!;
    lines.push(
      `const v${j} = ${fieldAccess(shape, j)};`,
      `if (typeof v${j} !== "${TYPE_NAMES[type]}") return false;`,
    );
    if (type === TYPE_NUMBER) lines.push(`f64[o${j} + i] = v${j};`);
    else if (type === TYPE_BOOLEAN) lines.push(`u8[o${j} + i] = v${j} ? 1 : 0;`);
    else lines.push(`u32[o${j} + i] = v${j}.length;`, `strings[s${j} + i] = v${j};`);
  }
  lines.push(`}`, `return true;`, `};`);
  return new Function("keys", "objectProto", "objectCtor", "arrayCtor", lines.join("\n"))(
    keys,
    Object.prototype,
    Object,
    Array,
  ) as Extract;
}

/**
 * Generates the record builder of `shape`: one object (or array) literal
 * per record, so all records of a shape share one hidden class. Keys are
 * written with `JSON.stringify` (any key is a safe literal); `__proto__` is a
 * computed key, which defines an own property instead of the prototype.
 */
export function compileBuild(shape: Shape): Build {
  const { layout, types, keys } = shape;
  const f = types.length;
  const lines = [`"use strict";`, `return function build(n, f64, u8, u32, offsets, text) {`];
  const parts: string[] = [];
  for (let j = 0; j < f; j++) {
    lines.push(`const o${j} = offsets[${j}];`);
    let expr: string;
    if (types[j] === TYPE_NUMBER) {
      expr = `f64[o${j} + i]`;
    } else if (types[j] === TYPE_BOOLEAN) {
      expr = `u8[o${j} + i] === 1`;
    } else {
      // String columns' start positions in `text` follow from offsets[f + j].
      lines.push(`let p${j} = offsets[${f + j}];`);
      expr = `text.slice(p${j}, p${j} += u32[o${j} + i])`;
    }
    if (layout === LAYOUT_OBJECT) {
      const key = keys[j]!;
      parts.push(
        key === "__proto__" ? `["__proto__"]: ${expr}` : `${JSON.stringify(key)}: ${expr}`,
      );
    } else {
      parts.push(expr);
    }
  }
  const record = layout === LAYOUT_OBJECT
    ? `{ ${parts.join(", ")} }`
    : layout === LAYOUT_NESTED
    ? rowRecordLiteral(shape.keys, shape.nested!, parts)
    : layout === LAYOUT_TUPLE
    ? `[${parts.join(", ")}]`
    : parts[0]!;
  lines.push(
    `const out = [];`,
    `for (let i = 0; i < n; i++) out.push(${record});`,
    `return out;`,
    `};`,
  );
  return new Function(lines.join("\n"))() as Build;
}
