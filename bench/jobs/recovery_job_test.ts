/**
 * Unit tests of the recovery benchmark job's source: build records at full
 * speed, then a rate-limited trickle, resumable from its snapshot.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { RecordingReaderOutput } from "../../connectors/testing/reader_output.ts";
import { BuildThenTrickleSource, type TrickleSplit } from "./recovery_job.ts";

function reader(source: BuildThenTrickleSource, clock: ManualClock, subtaskIndex = 0) {
  return source.createReader({
    subtaskIndex,
    parallelism: 2,
    attempt: 0,
    operatorName: "numbers",
    currentProcessingTime: () => clock.now(),
    clock,
  });
}

function drain(r: ReturnType<typeof reader>): number[] {
  const output = new RecordingReaderOutput<number>();
  while (r.pollNext(output) === "MORE_AVAILABLE");
  return output.records;
}

Deno.test("BuildThenTrickleSource emits the build records at once, then the trickle at its rate", async () => {
  const clock = new ManualClock(1_000);
  // 100 records/s over 2 subtasks: 50/s each, at most 5 (100 ms worth) at a time.
  const source = new BuildThenTrickleSource(1000, 100, 64);
  const splits = source.enumerateSplits({ parallelism: 2 });
  assert.deepEqual(splits.map((s) => [s.next, s.step]), [[0, 2], [1, 2]]);
  const r = reader(source, clock);
  r.addSplits([splits[0]!]);
  const built = drain(r);
  assert.deepEqual(built, Array.from({ length: 500 }, (_, i) => 2 * i));
  let available = false;
  const wait = r.isAvailable!().then(() => available = true);
  await Promise.resolve();
  assert.equal(available, false);
  clock.advance(40); // 2 records' worth
  await wait;
  assert.deepEqual(drain(r), [1000, 1002]);
  clock.advance(1000); // capped at 100 ms worth
  assert.deepEqual(drain(r), [1004, 1006, 1008, 1010, 1012]);
  const snapshot: TrickleSplit[] = r.snapshotState(1);
  assert.deepEqual(snapshot, [{ splitId: "build-trickle-0", next: 1014, step: 2 }]);

  // A restored reader resumes after the last record emitted, at the trickle rate.
  const restored = reader(source, clock);
  restored.addSplits(snapshot);
  assert.deepEqual(drain(restored), []);
  clock.advance(20);
  assert.deepEqual(drain(restored), [1014]);
});

Deno.test("BuildThenTrickleSource refuses a rate that is not positive and a negative build count", () => {
  assert.throws(() => new BuildThenTrickleSource(10, 0), /'recordsPerSecond' must be a positive/);
  assert.throws(() => new BuildThenTrickleSource(-1, 10), /'buildRecords' must be a non-negative/);
});
