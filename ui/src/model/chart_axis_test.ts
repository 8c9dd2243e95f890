import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { distinctLabels, drawablePoints, hasLine, trimLeadingGaps } from "./chart_axis.ts";
import { emptySeries, pushSample } from "./ring.ts";

Deno.test("drawablePoints counts samples with a value on some line", () => {
  assertEquals(drawablePoints(emptySeries(2)), 0);
  assertEquals(
    drawablePoints({
      capacity: 5,
      times: [1, 2, 3, 4],
      lines: [[1, null, null, 4], [null, null, 3, null]],
    }),
    3,
  );
});

Deno.test("hasLine needs two points: an empty or single-sample series waits for data", () => {
  let s = emptySeries(2);
  assertEquals(hasLine(s), false);
  s = pushSample(s, 1_000, [5, 5]);
  assertEquals(hasLine(s), false);
  s = pushSample(s, 2_000, [null, null]);
  assertEquals(hasLine(s), false);
  s = pushSample(s, 3_000, [null, 7]);
  assertEquals(hasLine(s), true);
});

Deno.test("distinctLabels blanks a label equal to the one before it", () => {
  assertEquals(distinctLabels([]), []);
  assertEquals(distinctLabels(["03:26:38", "03:26:38", "03:26:38", "03:26:39"]), [
    "03:26:38",
    "",
    "",
    "03:26:39",
  ]);
  assertEquals(distinctLabels(["a", "b", "a"]), ["a", "b", "a"]);
  const input = ["x", "x"];
  distinctLabels(input);
  assertEquals(input, ["x", "x"], "the input is not changed");
});

Deno.test("trimLeadingGaps drops the samples before the first value, keeps later gaps", () => {
  const s = {
    capacity: 9,
    times: [1, 2, 3, 4, 5],
    lines: [[null, null, 3, null, 5], [null, null, null, 4, null]],
  };
  assertEquals(trimLeadingGaps(s), {
    capacity: 9,
    times: [3, 4, 5],
    lines: [[3, null, 5], [null, 4, null]],
  });
  const full = { capacity: 3, times: [1, 2], lines: [[1, 2]] };
  assertEquals(trimLeadingGaps(full) === full, true, "nothing to drop answers the series itself");
  assertEquals(trimLeadingGaps({ capacity: 3, times: [1, 2], lines: [[null, null]] }).times, []);
});
