/**
 * Incremental checkpoints in a running job: `enableCheckpointing(…,
 * { incrementalCheckpoints: true })` reaches the keyed operators through the
 * task configuration and `createKeyedStateBackend`, which wraps the heap or
 * SQLite backend in a `ChangelogKeyedStateBackend`; its checkpoints (shared
 * changelog segments and materializations) restore after induced failures
 * with exactly-once output.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../../../mod.ts";
import { CollectingSink } from "../../../testing.ts";
import { keyedSumJob, SINK_JOB_SPLITS, twoFailureSplits } from "../../../tests/_sink_job_kit.ts";
import { expectedSums, type SumRecord, withTempDir } from "../../../tests/_job_kit.ts";

/** Names of every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

for (const backend of ["heap", "sqlite"] as const) {
  Deno.test(`a keyed running sum with incremental checkpoints on the ${backend} backend restores through two failures, exactly once, from changelog segments and materializations`, async () => {
    await withTempDir(async (checkpoints) => {
      await withTempDir(async (local) => {
        const sink = new CollectingSink<SumRecord>();
        const result = await keyedSumJob({
          checkpoints,
          lists: twoFailureSplits(2, 4),
          restartStrategy: RestartStrategies.fixedDelay(3, 0),
          sink,
          sinkUid: "out",
          install: (env) => {
            if (backend === "sqlite") {
              env.setStateBackend("sqlite", { localDirectory: local, cacheEntries: 2 });
            }
            env.enableCheckpointing(20, {
              directory: checkpoints,
              incrementalCheckpoints: true,
              materializationIntervalMs: 60,
              retainOnFinish: true,
            });
          },
        }).execute(`changelog-${backend}`);
        assert.equal(result.restarts, 2, result.summary);
        const byKey = new Map<string, SumRecord[]>();
        for (const r of sink.committed()) {
          let list = byKey.get(r.key);
          if (list === undefined) byKey.set(r.key, list = []);
          list.push(r);
        }
        const expected = expectedSums(SINK_JOB_SPLITS);
        assert.deepEqual([...byKey.keys()].sort(), [...expected.keys()].sort());
        for (const [key, sums] of expected) {
          assert.deepEqual(byKey.get(key), sums, `sums of key ${key}`);
        }
        const shared = filesUnder(checkpoints).filter((p) => p.includes("/shared/"));
        assert.ok(
          shared.some((p) => p.includes("changelog-")),
          `no changelog segment among ${JSON.stringify(shared)}`,
        );
      });
    });
  });
}

Deno.test("enableCheckpointing refuses a non-boolean incrementalCheckpoints and a negative materialization interval", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  assert.throws(
    () => env.enableCheckpointing(100, { incrementalCheckpoints: "yes" as never }),
    /'incrementalCheckpoints' must be a boolean: current value is "yes"/,
  );
  assert.throws(
    () => env.enableCheckpointing(100, { materializationIntervalMs: -1 }),
    /materializationIntervalMs must be a number ≥ 0 \(ms\) or Infinity: current value is -1/,
  );
  env.enableCheckpointing(100, {
    incrementalCheckpoints: true,
    materializationIntervalMs: Infinity,
  });
});
