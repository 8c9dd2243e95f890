/**
 * Fuzz tests of the file sink's checkpointed shapes
 * (`checkFileSinkCommittable`, `checkFileSinkWriterState`, the sink's
 * `checkCommittable` / `checkWriterState`) and of its part file name
 * parser: any decoded value gives a value or a {@linkcode SinkStateError}
 * naming the field; what the writer makes passes unchanged.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { fuzzRuns } from "../../tests/_fuzz.ts";
import { SinkStateError } from "../../runtime/api/sink_v2.ts";
import { bucketIdProblem } from "./bucket_assigner.ts";
import {
  checkFileSinkCommittable,
  checkFileSinkWriterState,
  finalPartName,
  inProgressPartName,
  partFileNameParser,
  pendingPartName,
} from "./file_sink_state.ts";

const anyValue = fc.oneof(
  fc.integer({ min: -3, max: 5 }),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constantFrom("", "a/.p.pending", ".p.pending", "p", "a/p", "../p", "/p", "a//p"),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.bigInt({ min: -5n, max: 5n }),
);

function checkGives(what: string, check: (raw: unknown) => unknown, raw: unknown): unknown {
  try {
    return check(raw);
  } catch (error) {
    assert.ok(error instanceof SinkStateError, `not a SinkStateError: ${error}`);
    assert.match(error.message, new RegExp(`^Invalid ${what} in checkpoint: \\S`));
    return undefined;
  }
}

Deno.test("file sink committable fuzz: any decoded value gives a committable or a SinkStateError naming the field", () => {
  const nearlyValid = fc.record(
    { pendingPath: anyValue, finalPath: anyValue, sizeBytes: anyValue, extra: anyValue },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(fc.anything(), nearlyValid), (raw) => {
      const value = checkGives("file sink committable", checkFileSinkCommittable, raw);
      if (value === undefined) return;
      const c = value as { pendingPath: string; finalPath: string; sizeBytes: number };
      // A value: a safe relative final path and its pending twin in the same directory.
      const slash = c.finalPath.lastIndexOf("/");
      const dir = slash < 0 ? "" : c.finalPath.slice(0, slash);
      const name = c.finalPath.slice(slash + 1);
      assert.equal(bucketIdProblem(dir), undefined);
      assert.ok(name.length > 0 && !name.startsWith("."));
      assert.equal(c.pendingPath, (dir === "" ? "" : dir + "/") + pendingPartName(name));
      assert.ok(Number.isSafeInteger(c.sizeBytes) && c.sizeBytes >= 0);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("file sink writer state fuzz: any decoded value gives a state or a SinkStateError naming the field", () => {
  const nearlyValid = fc.record(
    { subtask: anyValue, nextCounter: anyValue, extra: anyValue },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(fc.anything(), nearlyValid), (raw) => {
      const value = checkGives("file sink writer state", checkFileSinkWriterState, raw);
      if (value === undefined) return;
      const s = value as { subtask: number; nextCounter: number };
      assert.ok(Number.isSafeInteger(s.subtask) && s.subtask >= 0);
      assert.ok(Number.isSafeInteger(s.nextCounter) && s.nextCounter >= 0);
    }),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("file sink state fuzz: committables and states as the writer makes them pass unchanged, and names parse back", () => {
  const segment = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,6}$/);
  fc.assert(
    fc.property(
      fc.array(segment, { maxLength: 3 }),
      fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,10}$/),
      fc.stringMatching(/^(\.[a-z]{1,4})?$/),
      fc.nat({ max: 999 }),
      fc.nat({ max: 2 ** 40 }),
      fc.nat(),
      (segments, prefix, suffix, subtask, counter, sizeBytes) => {
        const naming = { prefix, suffix };
        const dir = segments.join("/");
        const finalName = finalPartName(naming, subtask, counter);
        const at = (name: string) => (dir === "" ? name : `${dir}/${name}`);
        const committable = {
          pendingPath: at(pendingPartName(finalName)),
          finalPath: at(finalName),
          sizeBytes,
        };
        assert.deepEqual(checkFileSinkCommittable(structuredClone(committable)), committable);
        const state = { subtask, nextCounter: counter };
        assert.deepEqual(checkFileSinkWriterState(structuredClone(state)), state);
        const parse = partFileNameParser(naming);
        const expected = { subtask, counter, finalName };
        assert.deepEqual(parse(finalName), { kind: "finished", ...expected });
        assert.deepEqual(parse(pendingPartName(finalName)), { kind: "pending", ...expected });
        assert.deepEqual(parse(inProgressPartName(finalName, "0a1b2c3d")), {
          kind: "in-progress",
          ...expected,
        });
        assert.equal(parse(finalName + ".tmp"), undefined);
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
