import assert from "node:assert/strict";
import { checkOptions, type OptionsShape } from "./options_check.ts";

interface Opts {
  readonly timeoutMs?: number;
  readonly bounded?: boolean;
  readonly subject?: string;
  readonly deserializer?: (raw: Uint8Array) => unknown;
  readonly mode?: "a" | "b";
}
const SHAPE: OptionsShape<Opts> = {
  timeoutMs: "number",
  bounded: "boolean",
  subject: "string",
  deserializer: "function",
  mode: "any",
};

Deno.test("known options of the right kinds pass, and undefined values or no options at all are accepted", () => {
  checkOptions<Opts>("Thing", undefined, SHAPE);
  checkOptions<Opts>("Thing", {}, SHAPE);
  checkOptions<Opts>("Thing", {
    timeoutMs: 5,
    bounded: false,
    subject: "s",
    deserializer: (b: Uint8Array) => b,
    mode: "b",
  }, SHAPE);
  checkOptions<Opts>("Thing", { bounded: undefined }, SHAPE);
});

Deno.test("an unknown option is named with the known ones", () => {
  assert.throws(
    () => checkOptions<Opts>("enableCheckpointing", { intervalMs: 5 }, SHAPE),
    {
      name: "RangeError",
      message: "enableCheckpointing options: unknown option 'intervalMs' " +
        "(known: timeoutMs, bounded, subject, deserializer, mode)",
    },
  );
  assert.throws(
    () => checkOptions<Opts>("Thing", { a: 1, timeoutMs: 1, b: 2 }, SHAPE),
    { name: "RangeError", message: /unknown options 'a', 'b' \(known: timeoutMs/ },
  );
});

Deno.test("an option of the wrong kind is named with its current value", () => {
  assert.throws(() => checkOptions<Opts>("JetStreamSource", { bounded: "yes" }, SHAPE), {
    name: "TypeError",
    message: `JetStreamSource options: 'bounded' must be a boolean: current value is "yes"`,
  });
  assert.throws(() => checkOptions<Opts>("Thing", { timeoutMs: "5" }, SHAPE), {
    name: "TypeError",
    message: `Thing options: 'timeoutMs' must be a number: current value is "5"`,
  });
  assert.throws(() => checkOptions<Opts>("Thing", { deserializer: null }, SHAPE), {
    name: "TypeError",
    message: "Thing options: 'deserializer' must be a function: current value is null",
  });
});

Deno.test("options that are not an object are refused", () => {
  for (const [value, shown] of [[5, "5"], [null, "null"], [[1], "an array"], ["x", '"x"']]) {
    assert.throws(() => checkOptions<Opts>("Thing", value, SHAPE), {
      name: "TypeError",
      message: `Thing options must be an object: current value is ${shown}`,
    });
  }
});
