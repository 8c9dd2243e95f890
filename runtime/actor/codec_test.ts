import assert from "node:assert/strict";
import { CodecError, decode, encode } from "./codec.ts";

function roundtrip<T>(value: T): unknown {
  return decode(encode(value));
}

Deno.test("codec roundtrips numbers", async (t) => {
  for (
    const n of [
      0,
      1,
      -1,
      127,
      128,
      -33,
      255,
      65_536,
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 32,
      2 ** 53,
      1e300,
    ]
  ) {
    await t.step(`integer ${n}`, () => assert.equal(roundtrip(n), n));
  }
  for (const n of [35.8, -0.1, Number.MIN_VALUE, Number.MAX_VALUE, Math.PI]) {
    await t.step(`float ${n}`, () => assert.equal(roundtrip(n), n));
  }
  await t.step("NaN", () => assert.ok(Number.isNaN(roundtrip(Number.NaN))));
  await t.step("Infinity and -Infinity", () => {
    assert.equal(roundtrip(Infinity), Infinity);
    assert.equal(roundtrip(-Infinity), -Infinity);
  });
  await t.step("-0 decodes as 0", () => assert.ok(Object.is(roundtrip(-0), 0)));
});

Deno.test("codec roundtrips strings, booleans, null and undefined", async (t) => {
  for (const v of ["", "sensor_1", "ü€𝄞 mixed", "x".repeat(70_000), true, false, null, undefined]) {
    await t.step(`${typeof v} ${String(v).slice(0, 12)}`, () => assert.equal(roundtrip(v), v));
  }
  await t.step("undefined as an array element and a property value", () => {
    const value = { a: undefined, list: [undefined, 1, undefined], nested: { b: undefined } };
    const decoded = roundtrip(value) as typeof value;
    assert.deepStrictEqual(decoded, value);
    assert.ok(Object.hasOwn(decoded, "a"), "the undefined property was dropped");
    assert.equal(decoded.list.length, 3);
  });
  await t.step("array holes decode as undefined", () => {
    // deno-lint-ignore no-sparse-arrays
    assert.deepStrictEqual(roundtrip([1, , 3]), [1, undefined, 3]);
  });
});

Deno.test("codec roundtrips nested arrays and plain objects", () => {
  const value = {
    empty: {},
    none: [],
    matrix: [[1, 2], [3, [4, [5]]]],
    deep: { a: { b: { c: { d: ["e", { f: null }] } } } },
    "key with spaces": 1,
    "1": "numeric-looking key",
  };
  const decoded = roundtrip(value);
  assert.deepStrictEqual(decoded, value);
  assert.equal(Object.getPrototypeOf(decoded), Object.prototype);
});

Deno.test("codec roundtrips Map with keys of any primitive type", () => {
  const map = new Map<unknown, unknown>([
    [1, "number"],
    ["1", "string"],
    [1.5, "float"],
    [true, "boolean"],
    [null, "null"],
    [undefined, "undefined"],
    [10n, "bigint"],
    ["nested", new Map([["inner", [1, 2]]])],
  ]);
  const decoded = roundtrip(map);
  assert.ok(decoded instanceof Map);
  assert.deepStrictEqual(decoded, map);
  assert.equal(decoded.get(1), "number");
  assert.equal(decoded.get("1"), "string");
  assert.equal(decoded.get(10n), "bigint");
});

Deno.test("codec roundtrips Set, Date and bigint", async (t) => {
  await t.step("Set", () => {
    const set = new Set<unknown>([1, "1", null, [2]]);
    const decoded = roundtrip(set);
    assert.ok(decoded instanceof Set);
    assert.deepStrictEqual(decoded, set);
  });
  await t.step("Date with milliseconds", () => {
    for (const ms of [0, 5, 1_547_718_199_123, -86_400_001]) {
      const decoded = roundtrip(new Date(ms));
      assert.ok(decoded instanceof Date);
      assert.equal(decoded.getTime(), ms);
    }
  });
  await t.step("invalid Date stays invalid", () => {
    const decoded = roundtrip(new Date(Number.NaN));
    assert.ok(decoded instanceof Date && Number.isNaN(decoded.getTime()));
  });
  await t.step("bigint of any size", () => {
    for (
      const n of [
        0n,
        1n,
        -1n,
        2n ** 63n - 1n,
        -(2n ** 63n),
        2n ** 63n,
        2n ** 64n - 1n,
        2n ** 64n,
        -(2n ** 200n),
        3n ** 900n,
      ]
    ) {
      const decoded = roundtrip(n);
      assert.equal(typeof decoded, "bigint", `${n} decoded as ${typeof decoded}`);
      assert.equal(decoded, n);
    }
  });
});

Deno.test("codec roundtrips Uint8Array without aliasing the input", () => {
  const bytes = new Uint8Array(5_000).map((_, i) => i * 7);
  const encoded = encode({ bytes, small: new Uint8Array([1, 2, 3]), empty: new Uint8Array() });
  const decoded = decode(encoded) as { bytes: Uint8Array; small: Uint8Array; empty: Uint8Array };
  assert.equal(decoded.bytes.constructor, Uint8Array);
  assert.deepStrictEqual(decoded.bytes, bytes);
  assert.deepStrictEqual(decoded.small, new Uint8Array([1, 2, 3]));
  assert.deepStrictEqual(decoded.empty, new Uint8Array());
  encoded.fill(0);
  assert.deepStrictEqual(decoded.bytes, bytes, "the decoded bytes alias the message");
});

Deno.test("codec roundtrips a subarray view as just its bytes", () => {
  const whole = new Uint8Array([9, 8, 7, 6]);
  assert.deepStrictEqual(roundtrip(whole.subarray(1, 3)), new Uint8Array([8, 7]));
});

Deno.test("codec roundtrips other typed arrays", () => {
  const value = [
    new Float64Array([1.5, -0.25]),
    new Int32Array([-1, 2]),
    new Uint16Array([65_535]),
  ];
  assert.deepStrictEqual(roundtrip(value), value);
});

Deno.test("codec decodes each message on its own, in any order", () => {
  const first = encode([{ id: "a", ts: 1 }, { id: "b", ts: 2 }]);
  const second = encode([{ x: 1, y: 2 }, { id: "c", ts: 3 }]);
  const third = encode({ nested: [{ id: "d", ts: 4 }, { x: 5, y: 6 }] });
  // A replayed or reordered message decodes the same as when fresh.
  assert.deepStrictEqual(decode(third), { nested: [{ id: "d", ts: 4 }, { x: 5, y: 6 }] });
  assert.deepStrictEqual(decode(second), [{ x: 1, y: 2 }, { id: "c", ts: 3 }]);
  assert.deepStrictEqual(decode(first), [{ id: "a", ts: 1 }, { id: "b", ts: 2 }]);
  assert.deepStrictEqual(decode(first), [{ id: "a", ts: 1 }, { id: "b", ts: 2 }]);
});

Deno.test("codec roundtrips a message with many distinct object shapes", () => {
  const value = Array.from({ length: 300 }, (_, i) => ({ [`k${i}`]: i, [`v${i % 50}`]: [i] }));
  assert.deepStrictEqual(roundtrip(value), value);
});

Deno.test("codec roundtrips a batch of 1000 same-shaped records", () => {
  const batch = Array.from({ length: 1_000 }, (_, i) => ({
    id: `sensor_${i % 100}`,
    ts: 1_547_718_199 + i,
    temp: 35.8 + (i % 7) / 10,
  }));
  const bytes = encode(batch);
  assert.deepStrictEqual(decode(bytes), batch);
  assert.ok(bytes.byteLength < 30_000, `a batch took ${bytes.byteLength} bytes`);
});

Deno.test("encode() returns a plain Uint8Array that owns its buffer", () => {
  for (const value of [1, "x", { a: 1 }, new Uint8Array(100_000)]) {
    const bytes = encode(value);
    assert.equal(bytes.constructor, Uint8Array);
    assert.equal(bytes.byteOffset, 0);
    assert.equal(bytes.buffer.byteLength, bytes.byteLength);
  }
  const a = encode({ a: 1 });
  const copy = a.slice();
  encode({ b: 2 });
  assert.deepStrictEqual(a, copy, "a later encode() changed an earlier result");
});

Deno.test("encode() throws CodecError for a symbol", () => {
  assert.throws(
    () => encode({ s: Symbol("nope") }),
    (error: unknown) => {
      assert.ok(error instanceof CodecError);
      assert.equal(error.name, "CodecError");
      assert.match(error.message, /Cannot encode a value of type Object/);
      assert.ok(error.cause instanceof Error);
      return true;
    },
  );
});

Deno.test("decode() throws CodecError naming the byte length", async (t) => {
  const cases: [string, number[]][] = [
    ["empty input", []],
    ["a truncated array", [0x92, 0x01]],
    ["a truncated string", [0xa5, 0x61]],
    ["trailing bytes", [0x01, 0x02]],
    ["a truncated extension", [0xc7, 0xff, 0x01, 0x00]],
  ];
  for (const [name, bytes] of cases) {
    await t.step(name, () => {
      assert.throws(() => decode(new Uint8Array(bytes)), (error: unknown) => {
        assert.ok(error instanceof CodecError);
        assert.match(error.message, new RegExp(`of ${bytes.length} bytes: `));
        assert.notEqual(error.cause, undefined);
        return true;
      });
    });
  }
  await t.step("a message cut in half", () => {
    const whole = encode([{ id: "sensor_1", ts: 1, temp: 2.5 }, {
      id: "sensor_2",
      ts: 2,
      temp: 3,
    }]);
    const half = whole.subarray(0, whole.byteLength >> 1);
    assert.throws(() => decode(half), new RegExp(`of ${half.byteLength} bytes`));
  });
});
