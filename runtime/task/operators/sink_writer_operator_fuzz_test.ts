/**
 * Fuzz tests of the sink operator's restore: any operator state read back
 * from a checkpoint (pending committables, writer state, through the
 * MessagePack codec) restores into pending committables sorted by
 * checkpoint, or fails with a SinkStateError naming the entry and the value.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { decode, encode } from "../../actor/codec.ts";
import type { SinkV2 } from "../../api/sink_v2.ts";
import { SinkStateError } from "../../api/sink_v2.ts";
import type { OperatorStateSnapshot } from "../../state/operator_state.ts";
import { fuzzRuns } from "../../../tests/_fuzz.ts";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import { operatorRestore } from "./_snapshot_kit.ts";
import {
  PENDING_COMMITTABLES_STATE,
  SinkWriterOperator,
  WRITER_STATE,
} from "./sink_writer_operator.ts";

/** A sink whose committables are strings and whose writer state is integers. */
const sink: SinkV2<unknown, string, number> = {
  kind: "v2",
  deliveryGuarantee: "exactly-once",
  createWriter: () => ({ write() {}, flush() {}, close() {} }),
  createCommitter: () => ({ commit() {}, close() {} }),
  checkCommittable(raw) {
    if (typeof raw !== "string") {
      throw new SinkStateError(
        "fuzz committable",
        `it must be a string: current value is ${typeof raw}`,
      );
    }
    return raw;
  },
  checkWriterState(raw) {
    if (!Number.isInteger(raw)) {
      throw new Error(`the state must be an integer: current value is ${String(raw)}`);
    }
    return raw as number;
  },
};

async function restore(operatorState: unknown): Promise<void> {
  let op: SinkWriterOperator | undefined;
  try {
    const h = await OperatorTestHarness.open(
      (env) => {
        op = new SinkWriterOperator({
          uid: "fuzz",
          name: "fuzz",
          sink: sink as SinkV2<unknown, unknown, unknown>,
          env,
        });
        return op;
      },
      {
        restore: operatorRestore(operatorState as OperatorStateSnapshot, { checkpointId: 9 }),
      },
    );
    const pending = h.operator.pendingCommittables();
    for (let i = 1; i < pending.length; i++) {
      assert.ok(pending[i - 1]!.checkpointId <= pending[i]!.checkpointId, "sorted by checkpoint");
    }
    for (const p of pending) assert.equal(typeof p.committable, "string");
    await h.close();
  } catch (error) {
    await op?.close();
    if (error instanceof SinkStateError) {
      assert.match(error.message, /^Invalid \S.* in checkpoint: \S/);
      return;
    }
    // The operator-state store's own checks (an entry without items, an unknown mode) name the state.
    assert.ok(error instanceof Error, `not an Error: ${error}`);
    assert.match(error.message, /^Operator state '.*' /, `unexpected error: ${error.message}`);
  }
}

const committableEntry = fc.oneof(
  fc.record({
    checkpointId: fc.oneof(fc.nat({ max: 50 }), fc.constantFrom(-1, 1.5, NaN, "3")),
    committable: fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.constant(null)),
  }),
  fc.anything(),
);
const writerItem = fc.oneof(fc.integer(), fc.anything());

Deno.test("SinkWriterOperator restore fuzz: any checkpointed operator state restores or names what is wrong", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.record({
          [PENDING_COMMITTABLES_STATE]: fc.record({
            mode: fc.constantFrom("split", "split", "union", "other"),
            items: fc.array(committableEntry, { maxLength: 6 }),
          }),
          [WRITER_STATE]: fc.record({
            mode: fc.constant("split"),
            items: fc.array(writerItem, { maxLength: 3 }),
          }),
        }, { requiredKeys: [] }),
        fc.dictionary(fc.string({ maxLength: 5 }), fc.anything(), { maxKeys: 2 }),
      ),
      async (state) => {
        await restore(decode(encode(state)));
      },
    ),
    { numRuns: fuzzRuns() },
  );
});
