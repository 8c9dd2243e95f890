/**
 * The file sink under SIGKILL: a child process runs a job writing CSV part
 * files (`file_sink_kill_job.ts`) and is killed with SIGKILL once part
 * files have become finished, with in-progress and pending files on disk;
 * a second process resumes the job from its latest completed checkpoint
 * and runs it to the end. The finished files must hold exactly the
 * failure-free output, and no hidden part file may be left.
 *
 * @module
 */

import assert from "node:assert/strict";
import { listTree, withTempDir } from "./_job_kit.ts";
import {
  assertSameSumsPerKey,
  KILL_JOB_SPLITS,
  killAndResume,
  readFinishedCsv,
} from "./_sink_job_kit.ts";

const JOB = new URL("./file_sink_kill_job.ts", import.meta.url).pathname;

Deno.test("a job writing CSV part files, SIGKILLed mid-run and resumed, finishes exactly the failure-free records", async () => {
  await withTempDir(async (checkpoints) => {
    await withTempDir(async (out) => {
      await killAndResume({
        job: JOB,
        args: [out, checkpoints],
        checkpoints,
        // Kill once part files have finished and the writers are in the middle of new ones.
        killWhen: async () => {
          const files = await listTree(out).catch(() => []);
          return files.filter((f) => f.startsWith("part-")).length >= 4 &&
            files.some((f) => f.includes(".inprogress."));
        },
        awaiting: "4 finished part files and an in-progress one in the first run",
        afterKill: async () => {
          const before = await listTree(out);
          assert.ok(
            before.some((f) => f.startsWith(".")),
            `hidden files at the kill: ${before.join(", ")}`,
          );
        },
      });

      const { records, hidden } = await readFinishedCsv(out);
      assert.deepEqual(hidden, [], "hidden part files left behind");
      assertSameSumsPerKey(records, KILL_JOB_SPLITS);
    });
  });
});
