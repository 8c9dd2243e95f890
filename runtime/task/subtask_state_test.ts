import assert from "node:assert/strict";
import { splitSubtaskSnapshot, watermarkFloor } from "./subtask_state.ts";
import { WATERMARK_FLOORS_KEY } from "../time/watermark.ts";

Deno.test("operators' watermarks go to the operator file under the reserved key, and do not make them stateful", () => {
  const parts = splitSubtaskSnapshot({
    map: { watermark: 1_400 },
    counts: {
      watermark: 1_300,
      operator: { offsets: { mode: "split", items: [7] } },
    },
    fresh: {},
  });
  assert.deepEqual(parts.operatorPart, {
    counts: { offsets: { mode: "split", items: [7] } },
    [WATERMARK_FLOORS_KEY]: { map: 1_400, counts: 1_300 },
  });
  assert.deepEqual(parts.stateUids, ["counts"], "a watermark alone is no state");
  assert.equal(parts.keyedPart, undefined);
  assert.equal(splitSubtaskSnapshot({ fresh: {} }).operatorPart, undefined);
});

Deno.test("an operator with the reserved uid is refused, naming it", () => {
  assert.throws(
    () => splitSubtaskSnapshot({ [WATERMARK_FLOORS_KEY]: {} }),
    /The uid 'weir.watermarks' is reserved for watermark floors/,
  );
});

Deno.test("the watermark floor is the subtask's own at the same parallelism, the minimum over the old subtasks on a rescale", () => {
  assert.equal(watermarkFloor([500, 300, 400], 3, 0), 500);
  assert.equal(watermarkFloor([500, 300, 400], 3, 2), 400);
  assert.equal(watermarkFloor([500, 300, 400], 2, 0), 300);
  assert.equal(watermarkFloor([500, 300, 400], 4, 3), 300);
  assert.equal(
    watermarkFloor([500, Number.NEGATIVE_INFINITY], 1, 0),
    undefined,
    "an old subtask without a watermark leaves no floor",
  );
  assert.equal(watermarkFloor([Number.NEGATIVE_INFINITY, 300], 2, 0), undefined);
  assert.equal(watermarkFloor([Number.NEGATIVE_INFINITY, 300], 2, 1), 300);
});
