/**
 * The file sink end to end: a keyed running-sum job (two source splits, a
 * keyed operator and a CSV file sink at parallelism 2, part files rolled
 * on size as well as at every checkpoint) fails twice on scripted
 * `TestSource.fail` markers — once on each attempt, each after a completed
 * checkpoint — and restores. The records of the finished part files must be
 * exactly the failure-free output (same multiset, each key's sums in
 * order), and no hidden in-progress or pending file may be left.
 *
 * @module
 */

import assert from "node:assert/strict";
import { FileSink } from "../connectors/file/file_sink.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { csvEncoder } from "../connectors/file/row_encoders.ts";
import { listTree, type SumRecord, withTempDir } from "./_job_kit.ts";
import {
  assertSameSumsPerKey,
  readFinishedCsv,
  runWithTwoFailures,
  SINK_JOB_SPLITS,
} from "./_sink_job_kit.ts";

Deno.test("a job writing CSV part files commits each record exactly once across two induced failures", async () => {
  await withTempDir(async (checkpoints) => {
    await withTempDir(async (out) => {
      await runWithTwoFailures({
        checkpoints,
        sink: new FileSink<SumRecord>({
          path: out,
          encoder: csvEncoder({
            header: ["key", "seq", "sum"],
            toFields: (r) => [r.key, r.seq, r.sum],
          }),
          rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 2048 }),
        }),
        sinkUid: "csv-out",
        jobName: "file sink exactly-once",
      });

      const { records, hidden } = await readFinishedCsv(out);
      assert.deepEqual(hidden, [], "hidden part files left behind");
      assertSameSumsPerKey(records, SINK_JOB_SPLITS);
      const parts = (await listTree(out)).filter((p) => !p.startsWith("."));
      assert.ok(
        parts.every((p) => /^part-csv-out-[01]-\d+\.csv$/.test(p)),
        `part file names: ${parts.join(", ")}`,
      );
      // Both subtasks wrote several part files (rolled on size and at checkpoints).
      for (const subtask of [0, 1]) {
        const own = parts.filter((p) => p.startsWith(`part-csv-out-${subtask}-`));
        assert.ok(own.length >= 2, `subtask ${subtask} finished ${own.length} part files`);
      }
    });
  });
});
