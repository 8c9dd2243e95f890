import assert from "node:assert/strict";
import { CodecError, decodeRecords, encodeRecords } from "./record_codec.ts";

/** The layout byte of a block, by name (format in record_codec.ts). */
function layoutOf(bytes: Uint8Array): string {
  return ["msgpack", "scalars", "tuples", "objects", "nested"][bytes[1]!] ?? `unknown ${bytes[1]}`;
}

function roundtrip(
  values: readonly unknown[],
  timestamps?: readonly (number | null)[],
): { layout: string; values: unknown[]; timestamps: (number | null)[] | undefined } {
  const bytes = encodeRecords(values, timestamps);
  const decoded = decodeRecords(bytes);
  return { layout: layoutOf(bytes), values: decoded.values, timestamps: decoded.timestamps };
}

/** Asserts a columnar roundtrip that is deep-equal, with `-0` and `NaN` kept (Object.is). */
function assertColumnar(values: readonly unknown[], layout: string): unknown[] {
  const result = roundtrip(values);
  assert.equal(result.layout, layout);
  assert.deepStrictEqual(result.values, values);
  return result.values;
}

class Point {
  x = 1;
  y = 2;
}

class Tuple extends Array<number> {}

Deno.test("encodeRecords() writes numbers as one Float64 column, keeping -0 and NaN", () => {
  const values = [0, -0, 1.5, -1e300, Number.NaN, Infinity, -Infinity, Number.MIN_VALUE, 2 ** 53];
  const decoded = assertColumnar(values, "scalars");
  assert.ok(Object.is(decoded[1], -0), "-0 became 0");
  assert.ok(Number.isNaN(decoded[4]));
});

Deno.test("encodeRecords() roundtrips strings of every kind", () => {
  const values = [
    "",
    "sensor_1",
    "",
    "ü€ mixed 𝄞 surrogate pairs 😀👍🏽 and 👨‍👩‍👧",
    "\uFEFFstarts with a byte order mark",
    "quotes \" ' and \\ and\nnewlines\r\n\t and \u2028",
    "x".repeat(70_000),
    "",
  ];
  assertColumnar(values, "scalars");
  assertColumnar(["😀"], "scalars");
  assertColumnar(["", "", ""], "scalars");
});

Deno.test("encodeRecords() roundtrips booleans", () => {
  assertColumnar([true, false, false, true], "scalars");
});

Deno.test("encodeRecords() writes same-shaped plain objects column by column", async (t) => {
  await t.step("number, string and boolean fields", () => {
    const values = Array.from({ length: 100 }, (_, i) => ({
      id: `sensor_${i % 7}😀`,
      ts: 1_547_718_199 + i,
      temp: i === 3 ? -0 : 35.8 + i / 10,
      hot: i % 3 === 0,
    }));
    const decoded = assertColumnar(values, "objects");
    assert.ok(Object.is((decoded[3] as { temp: number }).temp, -0));
    for (const record of decoded) assert.equal(Object.getPrototypeOf(record), Object.prototype);
  });
  await t.step("property order is preserved, also for integer-like keys", () => {
    const values = [{ b: 1, a: "x", 2: true, 1: 0 }, { b: 2, a: "y", 2: false, 1: 1 }];
    const decoded = assertColumnar(values, "objects");
    for (const record of decoded) {
      assert.deepEqual(Object.keys(record as object), ["1", "2", "b", "a"]);
    }
    const reordered = roundtrip([{ z: 1, y: 2, x: 3 }]).values[0] as object;
    assert.deepEqual(Object.keys(reordered), ["z", "y", "x"]);
  });
  await t.step("a key named __proto__ stays an own property", () => {
    const values = [JSON.parse('{"a": 1, "__proto__": 2}'), JSON.parse('{"a": 3, "__proto__": 4}')];
    const decoded = roundtrip(values);
    assert.equal(decoded.layout, "objects");
    for (const [i, record] of decoded.values.entries()) {
      assert.equal(Object.getPrototypeOf(record), Object.prototype);
      assert.deepEqual(Object.keys(record as object), ["a", "__proto__"]);
      assert.equal(Object.getOwnPropertyDescriptor(record, "__proto__")?.value, 2 + 2 * i);
    }
  });
  await t.step("keys with quotes, backslashes, newlines, unicode and 'constructor'", () => {
    const key = 'a "quoted"\\ key\nwith newline \u2028 and 𝄞';
    const values = [
      { [key]: 1, "": "empty key", "constructor": true, "${x}": 2, "`": 3 },
      { [key]: 4, "": "", "constructor": false, "${x}": 5, "`": 6 },
    ];
    assertColumnar(values, "objects");
  });
  await t.step("objects with a null prototype decode as plain objects", () => {
    const values = [1, 2].map((i) => Object.assign(Object.create(null), { i, s: `${i}` }));
    const decoded = roundtrip(values);
    assert.equal(decoded.layout, "objects");
    assert.deepEqual(decoded.values, [{ i: 1, s: "1" }, { i: 2, s: "2" }]);
    assert.equal(Object.getPrototypeOf(decoded.values[0]), Object.prototype);
  });
});

Deno.test("encodeRecords() writes fixed-length arrays of primitives as tuples", () => {
  const values = [["a", 1, true], ["😀", -0, false], ["", Number.NaN, true]];
  const decoded = assertColumnar(values, "tuples");
  assert.ok(Array.isArray(decoded[0]));
  assert.ok(Object.is((decoded[1] as unknown[])[1], -0));
});

Deno.test("encodeRecords() writes objects with one nested tuple (table rows) column by column", async (t) => {
  await t.step("rows of mixed fields, with timestamps", () => {
    const rows = [
      { kind: "INSERT", fields: [1, "héllo 𝄞", true, -0, ""] },
      {
        kind: "UPDATE_BEFORE",
        fields: [2 ** 53, "x", false, Number.NaN, "a longer string than 13"],
      },
      { kind: "DELETE", fields: [-1.5, "", true, Infinity, "z"] },
    ];
    const bytes = encodeRecords(rows, [5, null, 7]);
    assert.equal(layoutOf(bytes), "nested");
    const decoded = decodeRecords(bytes);
    assert.deepStrictEqual(decoded.values, rows);
    assert.deepStrictEqual(decoded.timestamps, [5, null, 7]);
    const first = decoded.values[0] as { fields: unknown[] };
    assert.ok(Object.is(first.fields[3], -0), "-0 became 0");
    assert.ok(
      Array.isArray(first.fields) && Object.getPrototypeOf(first.fields) === Array.prototype,
    );
  });
  await t.step("the tuple's key anywhere, with odd key names", () => {
    assertColumnar([{ f: [1, 2], k: "a" }, { f: [3, 4], k: "b" }], "nested");
    assertColumnar([{ a: 1, ["__proto__"]: [2], 'q"\n': "x" }], "nested");
    assertColumnar([{ only: ["a", "b", "c"] }], "nested");
  });
  await t.step("255 tuple elements and a key: 256 fields", () => {
    assertColumnar([{ k: "+I", f: Array.from({ length: 255 }, (_, i) => i) }], "nested");
  });
  await t.step("a second shape with another tuple length", () => {
    assertColumnar([{ k: "+I", f: [1, 2, 3] }], "nested");
    assertColumnar([{ k: "+I", f: [1] }], "nested");
  });
});

Deno.test("encodeRecords() falls back to MessagePack for anything else", async (t) => {
  // [name, records, what MessagePack decodes them as (default: the records)]
  const cases: [string, unknown[], unknown[]?][] = [
    ["mixed numbers and strings", [1, "a", 2]],
    ["mixed numbers and booleans", [true, 1]],
    ["a later record with an extra key", [{ a: 1 }, { a: 2 }, { a: 3, b: 4 }]],
    ["a later record with a missing key", [{ a: 1, b: 2 }, { a: 3 }]],
    ["a later record with its keys in another order", [{ a: 1, b: 2 }, { b: 3, a: 4 }]],
    ["a field whose type changes", [{ a: 1 }, { a: "1" }]],
    ["a nested object", [{ a: { b: 1 } }]],
    ["a nested array holding an object", [{ a: [{ b: 1 }] }]],
    ["two nested arrays", [{ a: [1], b: [2] }]],
    ["a nested empty array", [{ a: [] }]],
    ["a nested array with a null", [{ k: "+I", f: [1, "a"] }, { k: "+I", f: [null, "b"] }]],
    ["nested arrays of different lengths", [{ k: "+I", f: [1, 2] }, { k: "+I", f: [1] }]],
    ["a nested array whose element type changes", [{ k: "+I", f: [1] }, { k: "+I", f: ["1"] }]],
    ["a nested array in another key", [{ k: "+I", f: [1] }, { k: [1], f: "+I" }]],
    ["a nested Array subclass", [{ f: [1, 2] }, { f: Tuple.from([1, 2]) }], [{ f: [1, 2] }, {
      f: [1, 2],
    }]],
    ["a nested array of more than 256 fields in all", [{
      k: "+I",
      f: Array.from({ length: 256 }, (_, i) => i),
    }]],
    ["a null value", [{ a: 1 }, { a: null }]],
    ["an undefined value", [{ a: 1 }, { a: undefined }]],
    ["null records", [null, null]],
    ["undefined records", [undefined]],
    ["a class instance", [new Point()], [{ x: 1, y: 2 }]],
    ["a class instance after plain objects", [{ x: 1, y: 2 }, new Point()], [{ x: 1, y: 2 }, {
      x: 1,
      y: 2,
    }]],
    ["bigint", [1n, 2n]],
    ["a Date", [new Date(0)]],
    ["a Map", [new Map([["a", 1]])]],
    ["an empty object", [{}, {}]],
    ["an empty array", [[], []]],
    ["tuples of different lengths", [[1, 2], [1, 2, 3]]],
    ["a tuple whose element type changes", [[1, "a"], ["a", 1]]],
    // deno-lint-ignore no-sparse-arrays
    ["a tuple with a hole", [[1, 2], [1, , 3]], [[1, 2], [1, undefined, 3]]],
    ["an object with an inherited enumerable key", [
      { a: 1 },
      Object.assign(Object.create({ b: 2 }), { a: 1 }),
    ], [{ a: 1 }, { a: 1 }]],
    ["an Array subclass", [[1, 2], Tuple.from([1, 2])], [[1, 2], [1, 2]]],
    ["a typed array", [new Float64Array(2)]],
    ["more than 256 fields", [
      Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, i])),
    ]],
  ];
  for (const [name, values, expected] of cases) {
    await t.step(name, () => {
      const result = roundtrip(values);
      assert.equal(result.layout, "msgpack");
      assert.deepStrictEqual(result.values, expected ?? values);
    });
  }
  await t.step("timestamps are kept in a fallback buffer", () => {
    const result = roundtrip([1, "a"], [5, null]);
    assert.deepStrictEqual(result.timestamps, [5, null]);
  });
});

Deno.test("encodeRecords() takes an object behind a prototype without 'constructor' as plain", () => {
  // The documented gap of the cheap prototype check: such an object (no own
  // `constructor` anywhere before Object.prototype, no enumerable inherited
  // keys) is encoded as a plain object, as MessagePack would.
  const proto = Object.create(Object.prototype, { hidden: { value: 1 } });
  const values = [{ a: 1 }, Object.assign(Object.create(proto), { a: 2 })];
  const result = roundtrip(values);
  assert.equal(result.layout, "objects");
  assert.deepStrictEqual(result.values, [{ a: 1 }, { a: 2 }]);
});

Deno.test("encodeRecords() handles empty, single and large buffers", async (t) => {
  await t.step("no records", () => {
    assert.deepStrictEqual(decodeRecords(encodeRecords([])), { values: [], timestamps: undefined });
    assert.deepStrictEqual(decodeRecords(encodeRecords([], [])), { values: [], timestamps: [] });
  });
  await t.step("one record", () => {
    assertColumnar([{ key: 1, value: 2 }], "objects");
  });
  await t.step("a block of several MiB, then a small one", () => {
    const big = Array.from({ length: 300_000 }, (_, i) => ({ s: `r${i}`, n: i }));
    assert.deepStrictEqual(decodeRecords(encodeRecords(big)).values, big);
    assertColumnar([{ s: "small", n: 1 }], "objects");
  });
  await t.step("10k records", () => {
    const values = Array.from({ length: 10_000 }, (_, i) => ({ key: `k${i % 97}`, value: i / 3 }));
    const timestamps = values.map((_, i) => (i % 5 === 0 ? null : 1_700_000_000_000 + i));
    const result = roundtrip(values, timestamps);
    assert.equal(result.layout, "objects");
    assert.deepStrictEqual(result.values, values);
    assert.deepStrictEqual(result.timestamps, timestamps);
  });
});

Deno.test("encodeRecords() carries timestamps only when given", () => {
  const timestamps = [0, -0, null, 1_700_000_000_000, -5.5];
  const result = roundtrip([1, 2, 3, 4, 5], timestamps);
  assert.deepStrictEqual(result.timestamps, timestamps);
  assert.ok(Object.is(result.timestamps?.[1], -0));
  assert.equal(roundtrip([1, 2]).timestamps, undefined);
  assert.deepStrictEqual(roundtrip([1], [Number.NaN]).timestamps, [null]);
});

Deno.test("encodeRecords() rejects timestamps of another length", () => {
  assert.throws(
    () => encodeRecords([1, 2], [1]),
    (error: unknown) =>
      error instanceof CodecError && /2 records with 1 timestamps/.test(error.message),
  );
});

Deno.test("encodeRecords() returns bytes that own their buffer", () => {
  const bytes = encodeRecords([{ a: 1 }]);
  assert.equal(bytes.byteOffset, 0);
  assert.equal(bytes.buffer.byteLength, bytes.byteLength);
  const again = encodeRecords([{ a: 2 }]);
  assert.deepStrictEqual(decodeRecords(bytes).values, [{ a: 1 }], "a later encode changed it");
  assert.deepStrictEqual(decodeRecords(again).values, [{ a: 2 }]);
});

Deno.test("encodeRecords() stays correct when a getter encodes too", () => {
  const record = {
    a: 1,
    get b(): number {
      encodeRecords([{ x: "inner" }, { x: "inner2" }]);
      return 2;
    },
  };
  assert.deepStrictEqual(roundtrip([record, { a: 3, b: 4 }]).values, [{ a: 1, b: 2 }, {
    a: 3,
    b: 4,
  }]);
});

Deno.test("encodeRecords() roundtrips more shapes than its cache holds", () => {
  for (let i = 0; i < 300; i++) {
    const values = [{ [`field_${i}`]: i, s: "x" }];
    assert.deepStrictEqual(decodeRecords(encodeRecords(values)).values, values);
  }
  // Shapes evicted long ago still decode.
  assertColumnar([{ field_0: 0, s: "x" }], "objects");
});

Deno.test("decodeRecords() decodes a block at an unaligned offset", () => {
  const values = [{ a: 1.5, s: "é" }, { a: -0, s: "" }];
  const bytes = encodeRecords(values, [1, null]);
  const shifted = new Uint8Array(bytes.byteLength + 3);
  shifted.set(bytes, 3);
  const decoded = decodeRecords(shifted.subarray(3));
  assert.deepStrictEqual(decoded.values, values);
  assert.deepStrictEqual(decoded.timestamps, [1, null]);
});

Deno.test("decodeRecords() does not alias its input", () => {
  const bytes = encodeRecords([["a", 1]]);
  const decoded = decodeRecords(bytes);
  bytes.fill(0);
  assert.deepStrictEqual(decoded.values, [["a", 1]]);
});

/** Asserts that decoding `bytes` throws a CodecError whose message names its length and matches `what`. */
function assertMalformed(bytes: Uint8Array, what: RegExp): void {
  assert.throws(
    () => decodeRecords(bytes),
    (error: unknown) => {
      assert.ok(error instanceof CodecError, `not a CodecError: ${error}`);
      assert.match(error.message, new RegExp(`of ${bytes.byteLength} bytes`));
      assert.match(error.message, what);
      return true;
    },
  );
}

function patched(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const copy = bytes.slice();
  copy[at] = value;
  return copy;
}

function patchedU32(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const copy = bytes.slice();
  new DataView(copy.buffer).setUint32(at, value, true);
  return copy;
}

Deno.test("decodeRecords() rejects malformed blocks with a CodecError", async (t) => {
  const objects = encodeRecords([{ s: "héllo", n: 1, b: true }, { s: "x", n: 2, b: false }], [
    1,
    2,
  ]);
  const strings = encodeRecords(["abc", "dé"]);
  const fallback = encodeRecords([1, "a"]);
  await t.step("empty and shorter than the header", () => {
    assertMalformed(new Uint8Array(0), /shorter than the 16-byte header/);
    assertMalformed(objects.subarray(0, 15), /shorter than the 16-byte header/);
  });
  await t.step("another version", () => assertMalformed(patched(objects, 0, 2), /version 2/));
  await t.step("an unknown layout", () => assertMalformed(patched(objects, 1, 9), /layout 9/));
  await t.step("unknown flags", () => assertMalformed(patched(objects, 2, 4), /flags 4/));
  await t.step("an unknown field type", () => {
    assertMalformed(patched(objects, 16, 7), /field 0 has unknown type 7/);
  });
  await t.step("a field count that does not fit", () => {
    assertMalformed(patchedU32(objects, 8, 1_000_000), /field count 1000000/);
    assertMalformed(patchedU32(strings, 8, 2), /field count 2/);
  });
  await t.step("a record count too large for the columns", () => {
    assertMalformed(patchedU32(objects, 4, 0xffffffff), /need|past/);
    assertMalformed(patchedU32(strings, 4, 1_000), /past/);
    assertMalformed(patchedU32(strings, 4, 0x33000002), /past/);
  });
  await t.step("a key list that is not a JSON array of distinct strings", () => {
    const keysAt = 16 + 3;
    assertMalformed(patched(objects, keysAt, "{".charCodeAt(0)), /key list is not JSON/);
    const duplicate = encodeRecords([{ aa: 1, ab: 2 }]);
    // ["aa","ab"] -> ["aa","aa"]
    const at = duplicate.indexOf("b".charCodeAt(0), 16);
    assertMalformed(patched(duplicate, at, "a".charCodeAt(0)), /2 distinct strings/);
    assertMalformed(patched(objects, keysAt + 1, 0xff), /not valid UTF-8/);
  });
  await t.step("a nested key list without its [key, length] or with the wrong length", () => {
    const nested = encodeRecords([{ k: "a", f: [1, 2] }]);
    const text = new TextDecoder("latin1").decode(nested); // one character per byte
    // ["k",["f",2]] -> ["k",["f",3]]: three fields listed, two written
    assertMalformed(
      patched(nested, text.indexOf("2]]"), "3".charCodeAt(0)),
      /adding up to 3 fields/,
    );
    // ["k",["f",2]] -> ["k",["f",0]]: an empty tuple
    assertMalformed(patched(nested, text.indexOf("2]]"), "0".charCodeAt(0)), /one \[key, length\]/);
    // ["k",["k",2]]: duplicate keys
    assertMalformed(patched(nested, text.indexOf('"f"') + 1, "k".charCodeAt(0)), /distinct keys/);
    // objects' layout byte on a nested key list: not an array of strings
    assertMalformed(patched(nested, 1, 3), /distinct strings/);
    assertMalformed(patched(objects, 1, 4), /one \[key, length\]/);
  });
  await t.step("truncated at every length", () => {
    for (
      const block of [objects, strings, fallback, encodeRecords([{ k: "é", f: [1, "ü", true] }])]
    ) {
      for (let end = 0; end < block.byteLength; end++) {
        assert.throws(() => decodeRecords(block.subarray(0, end)), CodecError, `prefix ${end}`);
      }
    }
  });
  await t.step("trailing bytes", () => {
    const numbers = encodeRecords([1, 2]);
    const longer = new Uint8Array(numbers.byteLength + 8);
    longer.set(numbers);
    assertMalformed(longer, /8 bytes follow the last column/);
  });
  await t.step("string lengths that do not add up", () => {
    // The first length (u32 at offset 24) of ["abc", "dé"]: 3 -> 4.
    assertMalformed(patchedU32(strings, 24, 4), /UTF-16 units/);
  });
  await t.step("strings that are not UTF-8", () => {
    assertMalformed(patched(strings, strings.byteLength - 1, 0xff), /not valid UTF-8/);
  });
  await t.step("a boolean byte other than 0 or 1", () => {
    const booleans = encodeRecords([true, false]);
    assertMalformed(patched(booleans, 24, 2), /non-boolean byte/);
  });
  await t.step("a MessagePack part that is malformed or of another length", () => {
    assertMalformed(patchedU32(fallback, 4, 3), /not an array of 3 records/);
    // The array header 0x92 (2 elements) -> 0x93 (3 elements): truncated.
    assertMalformed(patched(fallback, 16, 0x93), /MessagePack records are malformed/);
  });
  await t.step("random corruption throws only CodecError", () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const block of [objects, strings, fallback, encodeRecords([[1, "a", true]], [7])]) {
      for (let round = 0; round < 500; round++) {
        const copy = block.slice();
        const flips = 1 + Math.floor(random() * 3);
        for (let k = 0; k < flips; k++) {
          copy[Math.floor(random() * copy.byteLength)] = Math.floor(random() * 256);
        }
        try {
          decodeRecords(copy);
        } catch (error) {
          assert.ok(error instanceof CodecError, `round ${round}: ${error}`);
        }
      }
    }
  });
});
