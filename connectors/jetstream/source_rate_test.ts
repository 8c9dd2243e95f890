/**
 * The JetStream source's rate limit (`recordsPerSecond`), driven by a
 * `ManualClock` through the reader context: no real sleeps.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { SourceReader } from "../../runtime/api/source.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { JetStreamSource, type JetStreamSplit } from "./source.ts";
import { CONNECTION, publishJson, withJetStream } from "./_test_kit.ts";
import { waitUntil } from "../../tests/_wait.ts";

/** The output each reader always polls into (a reader keeps the split outputs it created). */
const outputs = new WeakMap<object, RecordingReaderOutput<number>>();

/** Polls until the reader has nothing it may emit now; returns what it emitted in these polls. */
async function drainNow(r: SourceReader<number, JetStreamSplit>): Promise<number[]> {
  let out = outputs.get(r);
  if (out === undefined) outputs.set(r, out = new RecordingReaderOutput<number>());
  const before = out.records.length;
  for (;;) {
    const status = await r.pollNext(out);
    if (status !== "MORE_AVAILABLE") return out.records.slice(before);
  }
}

/** Whether `promise` settles before the event loop has run a few more turns. */
async function settlesSoon(promise: Promise<void>): Promise<boolean> {
  let settled = false;
  promise.then(() => settled = true);
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  return settled;
}

Deno.test("recordsPerSecond limits each reader to its share of the rate, on the reader's clock", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, Array.from({ length: 40 }, (_, i) => i + 1));
    // 200 records/s over 2 subtasks: 100/s for this reader, a bucket of at most 10 records.
    const source = new JetStreamSource<number>({
      connection: CONNECTION,
      stream: t.stream,
      txnBucket: t.bucket,
      bounded: true,
      recordsPerSecond: 200,
    });
    const clock = new ManualClock(1_000);
    const reader = source.createReader({
      subtaskIndex: 0,
      parallelism: 2,
      attempt: 0,
      operatorName: "rated",
      currentProcessingTime: () => clock.now(),
      clock,
    });
    await reader.start?.();
    try {
      reader.addSplits(await source.enumerateSplits({ parallelism: 1 }));
      // Wait until the feed has records buffered (real I/O), without advancing the clock.
      await waitUntil(() => settlesSoon(reader.isAvailable!()), {
        timeoutMs: 30_000,
        missing: () => "the reader never had records available",
      });
      const seen = await drainNow(reader);
      assert.deepEqual(seen, [1], "one token at start");
      const waiting = reader.isAvailable!();
      assert.equal(await settlesSoon(waiting), false, "waits for the next token");

      clock.advance(10); // 1 record per 10 ms
      assert.equal(await settlesSoon(waiting), true);
      seen.push(...await drainNow(reader));
      assert.deepEqual(seen, [1, 2]);

      clock.advance(50);
      seen.push(...await drainNow(reader));
      assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);

      clock.advance(10_000); // a long pause refills at most 100 ms worth: 10 records
      seen.push(...await drainNow(reader));
      assert.equal(seen.length, 17);

      for (let i = 0; i < 30 && seen.length < 40; i++) {
        clock.advance(100);
        seen.push(...await drainNow(reader));
      }
      assert.deepEqual(seen, Array.from({ length: 40 }, (_, i) => i + 1));
    } finally {
      await reader.close?.();
    }
  });
});

Deno.test("recordsPerSecond must be a positive finite number", () => {
  for (const recordsPerSecond of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(
      () => new JetStreamSource({ connection: CONNECTION, stream: "s", recordsPerSecond }),
      /'recordsPerSecond' must be a positive number: current value is/,
    );
  }
});
