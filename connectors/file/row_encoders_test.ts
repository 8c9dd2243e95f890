import assert from "node:assert/strict";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { csvEncoder, jsonLinesEncoder, lineEncoder, RecordEncodingError } from "./row_encoders.ts";

Deno.test("jsonLinesEncoder refuses values JSON cannot encode, naming the record", () => {
  const encoder = jsonLinesEncoder<unknown>();
  assert.equal(encoder.encode({ text: "a\nb" }), '{"text":"a\\nb"}\n');
  assert.throws(
    () => encoder.encode(undefined),
    (e: unknown) =>
      e instanceof RecordEncodingError && e instanceof SuppressRestartsError &&
      e.message ===
        "JSON lines format: a record must be JSON-encodable: current value is undefined",
  );
  assert.throws(
    () => encoder.encode({ n: 1n }),
    /^RecordEncodingError: JSON lines format: cannot encode record \[object Object\]: .*BigInt/,
  );
});

Deno.test("csvEncoder writes its header once per part file and refuses a record of another width", () => {
  const encoder = csvEncoder<readonly (string | number)[]>({
    header: ["id", "name"],
    toFields: (r) => r,
    lineEnding: "\n",
  });
  assert.equal(encoder.header, "id,name\n");
  assert.equal(encoder.extension, "csv");
  assert.equal(encoder.encode([1, "a b"]), "1,a b\n");
  assert.throws(
    () => encoder.encode([1]),
    /CSV format: a record must have 2 fields \(id, name\): current record 1 has 1/,
  );
  assert.throws(() => csvEncoder({ header: [], toFields: () => [] }), RangeError);
  assert.equal(csvEncoder<string[]>({ toFields: (r) => r }).header, undefined);
});

Deno.test("lineEncoder refuses a line with a line end", () => {
  const encoder = lineEncoder<string>((s) => s.toUpperCase(), "log");
  assert.equal(encoder.extension, "log");
  assert.equal(encoder.encode("ok"), "OK\n");
  assert.throws(() => encoder.encode("a\rb"), RecordEncodingError);
});
