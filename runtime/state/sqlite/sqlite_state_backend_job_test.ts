/**
 * The SQLite keyed state backend in a running job: `setStateBackend("sqlite",
 * …)` reaches the keyed operators through the task configuration and
 * `createKeyedStateBackend`; checkpoints written by it restore after
 * induced failures with exactly-once output; each subtask's database is
 * deleted when the job ends.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../../../mod.ts";
import { CollectingSink } from "../../../testing.ts";
import { keyedSumJob, twoFailureSplits } from "../../../tests/_sink_job_kit.ts";
import { expectedSums, type SumRecord, withTempDir } from "../../../tests/_job_kit.ts";
import { SINK_JOB_SPLITS } from "../../../tests/_sink_job_kit.ts";

Deno.test("a keyed running sum on the SQLite state backend restores its checkpoints through two failures, exactly once, and leaves no database behind", async () => {
  await withTempDir(async (checkpoints) => {
    await withTempDir(async (local) => {
      const sink = new CollectingSink<SumRecord>();
      const result = await keyedSumJob({
        checkpoints,
        lists: twoFailureSplits(2, 4),
        restartStrategy: RestartStrategies.fixedDelay(3, 0),
        sink,
        sinkUid: "out",
        // A cache of 2 entries: every record of 4 keys over 2 subtasks goes through SQLite.
        install: (env) =>
          env.setStateBackend("sqlite", { localDirectory: `${local}/state`, cacheEntries: 2 }),
      }).execute("sqlite-state-backend");
      assert.equal(result.restarts, 2, result.summary);
      const byKey = new Map<string, SumRecord[]>();
      for (const r of sink.committed()) {
        let list = byKey.get(r.key);
        if (list === undefined) byKey.set(r.key, list = []);
        list.push(r);
      }
      const expected = expectedSums(SINK_JOB_SPLITS);
      assert.deepEqual(
        [...byKey.keys()].sort(),
        [...expected.keys()].sort(),
      );
      for (const [key, sums] of expected) {
        assert.deepEqual(byKey.get(key), sums, `sums of key ${key}`);
      }
      // Only the SQLite backend makes `state`, and each subtask's database in it is gone.
      assert.deepEqual([...Deno.readDirSync(`${local}/state`)].map((e) => e.name), []);
    });
  });
});

Deno.test("setStateBackend refuses an unknown backend, an unknown option and a heap option, naming them", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  assert.throws(
    () => env.setStateBackend("rocksdb" as "heap"),
    /setStateBackend: unknown state backend \(known: heap, sqlite\): current value is "rocksdb"/,
  );
  assert.throws(
    () => env.setStateBackend("sqlite", { cacheSize: 5 } as never),
    /setStateBackend options: unknown option 'cacheSize'/,
  );
  assert.throws(
    () => env.setStateBackend("heap", { cacheEntries: 5 }),
    /option 'cacheEntries' applies to the "sqlite" state backend only/,
  );
  assert.throws(() => env.setStateBackend("sqlite", { cacheEntries: "5" as never }), TypeError);
  env.setStateBackend("sqlite", { cacheEntries: 5 }).setStateBackend("heap");
});
