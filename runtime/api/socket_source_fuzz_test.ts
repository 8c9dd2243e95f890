import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { checkSocketSplit, LineSplitter } from "./socket_source.ts";
import { SuppressRestartsError } from "../failure.ts";
import { fuzzRuns } from "../../tests/_fuzz.ts";

/** What a whole text cut at `delimiter` gives: the lines, then a non-empty tail. */
function reference(text: string, delimiter: string): string[] {
  const parts = text.split(delimiter);
  const tail = parts.pop()!;
  const lines = tail === "" ? parts : [...parts, tail];
  return delimiter === "\n" ? lines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l)) : lines;
}

Deno.test("LineSplitter fuzz: any text cut into any chunks gives the lines of the whole text", () => {
  const alphabet = fc.constantFrom("a", "b", "\n", "\r", "|", ";", "é", "✓", "😀");
  fc.assert(
    fc.property(
      fc.array(alphabet, { maxLength: 200 }).map((cs) => cs.join("")),
      fc.constantFrom("\n", "\r\n", "||", ";", "|;|"),
      fc.array(fc.nat(), { maxLength: 20 }),
      (text, delimiter, cuts) => {
        const splitter = new LineSplitter(delimiter);
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const got: string[] = [];
        let from = 0;
        for (const p of [...points, text.length]) {
          got.push(...splitter.push(text.slice(from, p)));
          from = p;
        }
        const last = splitter.end();
        if (last !== undefined) got.push(last);
        assert.deepEqual(got, reference(text, delimiter));
      },
    ),
    { numRuns: fuzzRuns() },
  );
});

Deno.test("checkSocketSplit fuzz: any restored value gives a valid split or an error naming what is wrong", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.anything(),
        fc.record({ splitId: fc.anything(), linesEmitted: fc.anything() }),
        fc.record({
          splitId: fc.string().map((s) => `socket-${s}`),
          linesEmitted: fc.oneof(fc.integer(), fc.double(), fc.constant(-1)),
        }),
      ),
      (raw) => {
        let split;
        try {
          split = checkSocketSplit(raw, "socket source test");
        } catch (error) {
          assert.ok(error instanceof SuppressRestartsError, String(error));
          assert.match(
            error.message,
            /^Invalid socket source split in the checkpoint of socket source test: (expected an object|field '(splitId|linesEmitted)' must be .*: current value is )/,
          );
          return;
        }
        assert.ok(split.splitId.startsWith("socket-"));
        assert.ok(Number.isSafeInteger(split.linesEmitted) && split.linesEmitted >= 0);
        assert.deepEqual(split, {
          splitId: (raw as { splitId: string }).splitId,
          linesEmitted: (raw as { linesEmitted: number }).linesEmitted,
        });
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
