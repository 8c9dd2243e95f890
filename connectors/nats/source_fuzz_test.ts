import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { checkNatsSplit } from "./source.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { decode, encode } from "../../runtime/actor/codec.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";

Deno.test("checkNatsSplit fuzz: any restored value gives a valid split or an error naming what is wrong", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.anything(),
        fc.record({ splitId: fc.anything(), emitted: fc.anything() }),
        fc.record({
          splitId: fc.string().map((s) => `nats-${s}`),
          emitted: fc.oneof(fc.integer(), fc.double(), fc.constant(-1)),
        }),
      ),
      (raw) => {
        let split;
        try {
          split = checkNatsSplit(raw, "NatsSource 'test'");
        } catch (error) {
          assert.ok(error instanceof SuppressRestartsError, String(error));
          assert.match(
            error.message,
            /^Invalid core NATS split in the checkpoint of NatsSource 'test': (expected an object|field '(splitId|emitted)' must be .*: current value is )/,
          );
          return;
        }
        assert.ok(split.splitId.startsWith("nats-"));
        assert.ok(Number.isSafeInteger(split.emitted) && split.emitted >= 0);
        assert.equal(split.splitId, (raw as { splitId: string }).splitId);
        assert.equal(split.emitted, (raw as { emitted: number }).emitted);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("checkNatsSplit fuzz: a split survives the checkpoint codec unchanged", () => {
  fc.assert(
    fc.property(
      fc.string().map((s) => `nats-${s}`),
      fc.nat({ max: Number.MAX_SAFE_INTEGER }),
      (splitId, emitted) => {
        const restored = decode(encode({ splitId, emitted }));
        assert.deepEqual(checkNatsSplit(restored, "NatsSource 'test'"), { splitId, emitted });
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
