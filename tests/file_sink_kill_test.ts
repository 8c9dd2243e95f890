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
import { parseCsv } from "../connectors/file/csv.ts";
import { expectedSums, listTree, type SumRecord, withTempDir } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";
import { KILL_JOB_SPLITS } from "./file_sink_kill_job.ts";

const JOB = new URL("./file_sink_kill_job.ts", import.meta.url).pathname;

/** Starts the job in a child process; its stderr is collected as it comes. */
function spawnJob(args: string[]): { child: Deno.ChildProcess; stderr: Promise<string> } {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", JOB, ...args],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  return { child, stderr: new Response(child.stderr).text() };
}

async function readFinished(dir: string): Promise<{ records: SumRecord[]; hidden: string[] }> {
  const records: SumRecord[] = [];
  const hidden: string[] = [];
  for (const path of await listTree(dir)) {
    if (path.startsWith(".")) {
      hidden.push(path);
      continue;
    }
    const [header, ...rows] = parseCsv(await Deno.readTextFile(`${dir}/${path}`), {
      where: `in ${path} `,
    });
    assert.deepEqual(header, ["key", "seq", "sum"], `${path} starts with its header`);
    for (const [key, seq, sum] of rows) {
      records.push({ key: key!, seq: Number(seq), sum: Number(sum) });
    }
  }
  return { records, hidden };
}

Deno.test("a job writing CSV part files, SIGKILLed mid-run and resumed, finishes exactly the failure-free records", async () => {
  await withTempDir(async (checkpoints) => {
    await withTempDir(async (out) => {
      const { child: first, stderr } = spawnJob([out, checkpoints]);
      let killed = false;
      try {
        // Kill once part files have finished and the writers are in the middle of new ones.
        await waitUntil(async () => {
          const files = await listTree(out).catch(() => []);
          return files.filter((f) => f.startsWith("part-")).length >= 4 &&
            files.some((f) => f.includes(".inprogress."));
        }, {
          timeoutMs: 60_000,
          missing: () => "4 finished part files and an in-progress one in the first run",
        });
        first.kill("SIGKILL");
        killed = true;
      } finally {
        if (!killed) first.kill("SIGKILL");
        const status = await first.status;
        assert.equal(status.signal, "SIGKILL", `the first run ended by itself: ${await stderr}`);
      }
      const before = await listTree(out);
      assert.ok(
        before.some((f) => f.startsWith(".")),
        `hidden files at the kill: ${before.join(", ")}`,
      );
      const jobs = [];
      for await (const entry of Deno.readDir(checkpoints)) jobs.push(entry.name);
      assert.equal(jobs.length, 1, `one job's checkpoints: ${jobs.join(", ")}`);

      const second = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", JOB, out, checkpoints, jobs[0]!],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(second.stdout);
      assert.ok(
        second.success && stdout.includes("DONE restarts=0"),
        `the resumed run failed: ${stdout}${new TextDecoder().decode(second.stderr)}`,
      );

      const { records, hidden } = await readFinished(out);
      assert.deepEqual(hidden, [], "hidden part files left behind");
      const byKey = new Map<string, SumRecord[]>();
      for (const r of records) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
      for (const list of byKey.values()) list.sort((a, b) => a.seq - b.seq);
      const expected = expectedSums(KILL_JOB_SPLITS);
      assert.deepEqual([...byKey.keys()].sort(), [...expected.keys()].sort());
      for (const [key, list] of expected) {
        assert.deepEqual(byKey.get(key), list, `records of key ${key}`);
      }
    });
  });
});
