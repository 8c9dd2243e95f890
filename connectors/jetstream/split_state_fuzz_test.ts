/**
 * Fuzz tests of the JetStream source's checkpointed split state
 * (`split_state.ts`): whatever comes back from a checkpoint gives a
 * well-formed split or a {@linkcode JetStreamSplitStateError} naming the
 * source, the field and its current value; valid splits survive the
 * checkpoint codec (MessagePack) unchanged.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import {
  decodeJetStreamSplit,
  type JetStreamSplit,
  JetStreamSplitStateError,
} from "./split_state.ts";

const WHERE = "JetStreamSource 'fuzzed' of stream orders";
const FIELDS = ["splitId", "stream", "subject", "offset", "stopAt"];

/** Decodes `raw`: a value must be a valid split, an error must name where, what and the value. */
function checkDecodes(raw: unknown): JetStreamSplit | undefined {
  let split: JetStreamSplit;
  try {
    split = decodeJetStreamSplit(raw, WHERE);
  } catch (error) {
    assert.ok(
      error instanceof JetStreamSplitStateError,
      `not a JetStreamSplitStateError: ${error}`,
    );
    assert.ok(error instanceof SuppressRestartsError, "a damaged checkpoint ends the job once");
    assert.match(
      error.message,
      /^Cannot restore (a split|split "[^]*") of JetStreamSource 'fuzzed' of stream orders: [^]+: current value is [^]+$/,
    );
    return undefined;
  }
  assert.deepEqual(Object.keys(split).sort(), [...FIELDS].sort());
  assert.ok(typeof split.stream === "string" && split.stream !== "");
  assert.ok(split.subject === null || (typeof split.subject === "string" && split.subject !== ""));
  assert.equal(
    split.splitId,
    split.subject === null ? split.stream : `${split.stream}:${split.subject}`,
  );
  assert.ok(Number.isSafeInteger(split.offset) && split.offset >= 0);
  assert.ok(split.stopAt === null || (Number.isSafeInteger(split.stopAt) && split.stopAt >= 0));
  assert.deepEqual(decodeJetStreamSplit(split, WHERE), split, "a decoded split decodes to itself");
  return split;
}

const validSplit: fc.Arbitrary<JetStreamSplit> = fc.record({
  stream: fc.string({ minLength: 1, maxLength: 12 }),
  subject: fc.option(fc.string({ minLength: 1, maxLength: 16 }), { nil: null }),
  offset: fc.maxSafeNat(),
  stopAt: fc.option(fc.maxSafeNat(), { nil: null }),
}).map((s) => ({ splitId: s.subject === null ? s.stream : `${s.stream}:${s.subject}`, ...s }));

Deno.test("split state decoder fuzz: any value gives a split or a JetStreamSplitStateError naming the field and value", () => {
  fc.assert(
    fc.property(fc.anything({ withBigInt: true, withTypedArray: true, withMap: true }), (raw) => {
      checkDecodes(raw);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("split state decoder fuzz: a valid split with a field replaced, dropped or added gives a split or a clear error", () => {
  fc.assert(
    fc.property(
      validSplit,
      fc.constantFrom(...FIELDS, "extra"),
      fc.constantFrom("replace", "drop"),
      fc.oneof(
        fc.anything(),
        fc.integer(),
        fc.double(),
        fc.string(),
        fc.constant(null),
        fc.constant(undefined),
      ),
      (split, field, damage, value) => {
        const raw: Record<string, unknown> = { ...split };
        if (damage === "drop") delete raw[field];
        else raw[field] = value;
        const decoded = checkDecodes(raw);
        if (field === "extra" && damage === "replace") {
          assert.equal(decoded, undefined, "an unknown field is refused");
        }
        if (damage === "drop" && field !== "extra") {
          assert.equal(decoded, undefined, `a split without '${field}' is refused`);
        }
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("split state fuzz: damaged checkpoint bytes give a codec error, a split or a JetStreamSplitStateError", () => {
  fc.assert(
    fc.property(validSplit, fc.nat(), fc.integer({ min: 0, max: 255 }), (split, at, byte) => {
      const bytes = encode({ split, watermark: null });
      const damaged = bytes.slice();
      damaged[at % damaged.byteLength] = byte;
      let item: unknown;
      try {
        item = decode(damaged);
      } catch (error) {
        assert.ok(error instanceof Error, `the codec throws an Error: ${error}`);
        return;
      }
      const raw = typeof item === "object" && item !== null && "split" in item
        ? (item as { split: unknown }).split
        : item;
      checkDecodes(raw);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("split state fuzz: every valid split survives the checkpoint codec unchanged", () => {
  fc.assert(
    fc.property(validSplit, (split) => {
      assert.deepEqual(decodeJetStreamSplit(decode(encode(split)), WHERE), split);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("a damaged split names the split, the field and its current value", () => {
  assert.throws(
    () =>
      decodeJetStreamSplit(
        { splitId: "orders:eu", stream: "orders", subject: "eu", offset: 1.5, stopAt: null },
        WHERE,
      ),
    {
      name: "JetStreamSplitStateError",
      message:
        `Cannot restore split "orders:eu" of ${WHERE}: 'offset' must be an integer >= 0: current value is 1.5`,
    },
  );
  assert.throws(
    () =>
      decodeJetStreamSplit(
        { splitId: "orders:us", stream: "orders", subject: "eu", offset: 1, stopAt: null },
        WHERE,
      ),
    {
      message:
        `Cannot restore split "orders:us" of ${WHERE}: 'splitId' must be "orders:eu" (from 'stream' and 'subject'): current value is "orders:us"`,
    },
  );
  assert.throws(() => decodeJetStreamSplit([1], WHERE), {
    message: `Cannot restore a split of ${WHERE}: a split must be an object: current value is [1]`,
  });
});
