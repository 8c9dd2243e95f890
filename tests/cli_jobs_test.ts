/**
 * The `weir` job commands end to end, each `weir` call a `deno run -A
 * cli.ts …` process, on a NATS server of the test's own (a cluster's
 * subjects are per server) with a coordinator and two workers:
 *
 * - `weir run --detached -p 2` returns once the job is submitted, printing
 *   its id and the commands to follow it; `weir list --json` shows it
 *   RUNNING at parallelism 2; `weir cancel` prints the `weir resume`
 *   command; that command, run as printed, resumes the job from its latest
 *   retained checkpoint (at parallelism 2 again, from the coordinator's
 *   record); a second `weir cancel` ends the attached client with exit code
 *   1 and the resume command of the second job. The committed output of the
 *   two runs (the exactly-once audit: keyed state checks each key's `seq`
 *   goes 1, 2, 3, …) is every record exactly once, with no violation: the
 *   keyed state came back. A savepoint of the second run, resumed with
 *   `weir resume SAVEPOINT job.ts --detached`, commits nothing again;
 * - Ctrl-C (SIGINT) of `deno run job.ts --nats URL` cancels the job on the
 *   cluster, prints its resume command and exits with code 130;
 * - local mode: Ctrl-C prints the job id's resume command with the job
 *   module and its arguments, and that command (run as printed) resumes with
 *   the state kept;
 * - every command's `--help` exits 0 with its usage and exit codes; bad
 *   usage exits 2 with a message naming what was wrong.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, REPO_ROOT, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";
import { auditInput, auditPassed } from "../examples/exactly_once_audit.ts";
import { auditCommittedOutput, formatAuditReport } from "../examples/audit_check.ts";
import { ensureStream, publishAll } from "../examples/_jetstream.ts";
import { COMMANDS } from "../cli.ts";

const CLI = join(REPO_ROOT, "cli.ts");
/** The commands of `cli/jobs.ts`, `cli/servers.ts` and `cli/read.ts`. */
const JOB_COMMANDS = [
  "coordinator",
  "worker",
  "run",
  "resume",
  "list",
  "cancel",
  "savepoint",
  "stop",
  "read",
];
const JOB = "tests/jobs/cli_jobs_job.ts";
const KEYS = 8;
const PER_KEY = 60;
/** How long a job may take to reach a point the test waits for, in ms. */
const STEP_TIMEOUT_MS = 120_000;

interface Streams {
  readonly source: string;
  readonly sink: string;
  readonly txnBucket: string;
}

/** Unique, empty source and sink streams. */
async function streams(nats: string, tag: string): Promise<Streams> {
  const id = crypto.randomUUID().slice(0, 8);
  const s = {
    source: `cli-${tag}-in-${id}`,
    sink: `cli-${tag}-out-${id}`,
    txnBucket: `cli-${tag}-txn-${id}`,
  };
  await ensureStream({ servers: nats }, s.source);
  await ensureStream({ servers: nats }, s.sink);
  return s;
}

/** Publishes `seq` `from..to` of every key. */
async function publish(nats: string, s: Streams, from: number, to: number): Promise<void> {
  const all = [...auditInput(s.source, { keys: KEYS, perKey: PER_KEY })];
  await publishAll({ servers: nats }, all.slice((from - 1) * KEYS, to * KEYS));
}

/** The job's own arguments. */
function jobArgs(nats: string, s: Streams): string[] {
  return [
    "--jetstream",
    nats,
    "--source-stream",
    s.source,
    "--sink-stream",
    s.sink,
    "--txn-bucket",
    s.txnBucket,
  ];
}

/** `weir <args>` as a process (`deno run -A cli.ts <args>`), WEIR_NATS_URL unset. */
function weir(...args: string[]): Proc {
  return new Proc(`weir ${args[0]}`, ["run", "-A", CLI, ...args], { WEIR_NATS_URL: "" });
}

/** Runs `weir <args>` to its end. */
async function weirDone(...args: string[]): Promise<{ code: number; output: string }> {
  const p = weir(...args);
  const status = await p.endWithin(STEP_TIMEOUT_MS);
  return { code: status.code, output: p.output };
}

/** The `weir resume …` line `output` printed for `jobId`, as `cli.ts` arguments. */
function printedResume(output: string, jobId: string): string[] {
  const match = new RegExp(`weir resume ${jobId}( [^\\n]*)?$`, "m").exec(output);
  assert.ok(match, `no 'weir resume ${jobId}' command printed:\n${output}`);
  const words = match[0].trim().split(/ +/);
  assert.ok(
    words.every((w) => !/^['"<]/.test(w)),
    `the test runs the printed command unquoted: ${match[0]}`,
  );
  return words.slice(1);
}

/** Waits until `count` audit records are committed to the sink stream. */
async function waitCommitted(nats: string, s: Streams, count: number): Promise<void> {
  let seen = 0;
  await waitUntil(async () => {
    const report = await auditCommittedOutput({
      connection: { servers: nats },
      stream: s.sink,
      txnBucket: s.txnBucket,
      keys: KEYS,
      perKey: PER_KEY,
    });
    seen = report.records;
    return seen >= count;
  }, {
    timeoutMs: STEP_TIMEOUT_MS,
    pollMs: 300,
    missing: () => `${seen} of ${count} records committed to ${s.sink}`,
  });
}

/** Asserts the committed output is every record once, in order, with no violation. */
async function assertExactlyOnce(nats: string, s: Streams): Promise<void> {
  const report = await auditCommittedOutput({
    connection: { servers: nats },
    stream: s.sink,
    txnBucket: s.txnBucket,
    keys: KEYS,
    perKey: PER_KEY,
  });
  assert.ok(auditPassed(report), `committed output: ${formatAuditReport(report)}`);
  assert.equal(report.records, KEYS * PER_KEY);
}

interface ListedJob {
  readonly jobId: string;
  readonly status: string;
  readonly parallelism?: number;
  readonly defaultParallelism?: number;
}

/** The job `jobId` as `weir list --json` shows it. */
async function listed(nats: string, jobId: string): Promise<ListedJob | undefined> {
  const { code, output } = await weirDone("list", "--json", "--nats", nats);
  assert.equal(code, 0, output);
  const overview = JSON.parse(output.trim().split("\n").at(-1)!) as { jobs: ListedJob[] };
  return overview.jobs.find((j) => j.jobId === jobId);
}

/** Checkpoints job `jobId` completed, as `weir info --json` shows them (0 when it cannot say). */
async function checkpointsCompleted(nats: string, jobId: string): Promise<number> {
  const { code, output } = await weirDone("info", jobId, "--json", "--nats", nats);
  if (code !== 0) return 0;
  const info = JSON.parse(output.trim().split("\n").at(-1)!) as {
    checkpoints: { counts: { completed: number } };
  };
  return info.checkpoints.counts.completed;
}

/** Waits until `weir list` shows job `jobId` in `status`. */
async function waitStatus(nats: string, jobId: string, status: string): Promise<void> {
  let last: string | undefined;
  await waitUntil(async () => (last = (await listed(nats, jobId))?.status) === status, {
    timeoutMs: STEP_TIMEOUT_MS,
    pollMs: 300,
    missing: () => `job ${jobId} is ${last ?? "not listed"}, not ${status}`,
  });
}

Deno.test({
  name:
    "weir run --detached -p 2, list, cancel and the printed weir resume keep the job's state: the committed output of both runs is exactly once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const server = await startNatsServer({ jetstream: true });
    const nats = server.url;
    const cluster = new TestCluster({ nats, workers: 2, slots: 2 });
    try {
      await cluster.start();

      await t.step("detached run at -p 2, cancel, resume as printed", async () => {
        const s = await streams(nats, "detached");
        let savepointPath: string | undefined;
        const half = PER_KEY / 2;
        await publish(nats, s, 1, half);

        const run = await weirDone(
          "run",
          JOB,
          "--detached",
          "-p",
          "2",
          "--nats",
          nats,
          "--",
          ...jobArgs(nats, s),
        );
        assert.equal(run.code, 0, `weir run --detached failed:\n${run.output}`);
        const jobId = /Job has been submitted with JobID (\S+)/.exec(run.output)?.[1];
        assert.ok(jobId, `no job id printed:\n${run.output}`);
        for (const follow of ["weir list", `weir info ${jobId}`, `weir cancel ${jobId}`]) {
          assert.ok(run.output.includes(`${follow} --nats ${nats}`), `${follow}:\n${run.output}`);
        }

        await waitStatus(nats, jobId, "RUNNING");
        const job = await listed(nats, jobId);
        assert.equal(job?.parallelism, 2, `weir list: ${JSON.stringify(job)}`);
        assert.equal(job?.defaultParallelism, 2);
        await waitCommitted(nats, s, KEYS * half);

        const cancel = await weirDone("cancel", jobId, "--nats", nats);
        assert.equal(cancel.code, 0, cancel.output);
        const resumeArgs = printedResume(cancel.output, jobId);
        assert.deepEqual(resumeArgs, ["resume", jobId, "--nats", nats]);
        await waitStatus(nats, jobId, "CANCELED");

        await publish(nats, s, half + 1, PER_KEY);
        const resumed = new Proc("weir resume", ["run", "-A", CLI, ...resumeArgs], {
          WEIR_NATS_URL: "",
        });
        try {
          await resumed.waitFor(/submitted job (\S+)/, STEP_TIMEOUT_MS);
          const secondId = /submitted job (\S+)/.exec(resumed.output)![1]!;
          assert.notEqual(secondId, jobId);
          await waitStatus(nats, secondId, "RUNNING");
          const second = await listed(nats, secondId);
          assert.equal(second?.parallelism, 2, "the resumed job keeps -p 2 from the record");
          await waitCommitted(nats, s, KEYS * PER_KEY);
          const savepoint = await weirDone("savepoint", secondId, "--nats", nats);
          assert.equal(savepoint.code, 0, savepoint.output);
          savepointPath = savepoint.output.split("\n").find((l) =>
            l.startsWith("nats-object-store://")
          );
          assert.ok(savepointPath, `no savepoint path printed:\n${savepoint.output}`);

          const cancel2 = await weirDone("cancel", secondId, "--nats", nats);
          assert.equal(cancel2.code, 0, cancel2.output);
          const status = await resumed.endWithin(STEP_TIMEOUT_MS);
          assert.equal(
            status.code,
            1,
            `the attached client of a cancelled job:\n${resumed.output}`,
          );
          assert.deepEqual(printedResume(resumed.output, secondId), [
            "resume",
            secondId,
            "--nats",
            nats,
          ]);
        } finally {
          await resumed.kill();
        }
        await assertExactlyOnce(nats, s);

        // weir resume SAVEPOINT job.ts: a third run from the savepoint, which holds the
        // source's positions past the whole input: nothing is committed again.
        const third = await weirDone(
          "resume",
          savepointPath!,
          JOB,
          "--detached",
          "--nats",
          nats,
          "--",
          ...jobArgs(nats, s),
        );
        assert.equal(third.code, 0, `weir resume SAVEPOINT --detached:\n${third.output}`);
        const thirdId = /Job has been submitted with JobID (\S+)/.exec(third.output)?.[1];
        assert.ok(thirdId, `no job id printed:\n${third.output}`);
        await waitStatus(nats, thirdId, "RUNNING");
        assert.equal((await listed(nats, thirdId))?.parallelism, 1, "no -p: parallelism 1");
        // A checkpoint of the third run completes (its sink committed an empty
        // transaction or none): give it time to replay anything it would.
        await waitUntil(async () => await checkpointsCompleted(nats, thirdId) >= 3, {
          timeoutMs: STEP_TIMEOUT_MS,
          pollMs: 300,
          missing: () => `job ${thirdId} completed fewer than 3 checkpoints`,
        });
        const cancel3 = await weirDone("cancel", thirdId, "--nats", nats);
        assert.equal(cancel3.code, 0, cancel3.output);
        await assertExactlyOnce(nats, s);
      });

      await t.step(
        "Ctrl-C of deno run job.ts --nats cancels the job and prints its resume command",
        async () => {
          const s = await streams(nats, "sigint");
          const client = new Proc("job client", [
            "run",
            "-A",
            JOB,
            ...jobArgs(nats, s),
            "--nats",
            nats,
          ], { WEIR_NATS_URL: "" });
          try {
            await client.waitFor(/submitted job (\S+)/, STEP_TIMEOUT_MS);
            const jobId = /submitted job (\S+)/.exec(client.output)![1]!;
            await waitStatus(nats, jobId, "RUNNING");
            const refused = await weirDone("resume", jobId, "--nats", nats);
            assert.equal(refused.code, 1, refused.output);
            assert.match(refused.output, /is still RUNNING/);
            client.child.kill("SIGINT");
            const status = await client.endWithin(STEP_TIMEOUT_MS);
            assert.equal(status.code, 130, client.output);
            assert.match(client.output, /Ctrl-C: cancelling job/);
            assert.deepEqual(printedResume(client.output, jobId), [
              "resume",
              jobId,
              "--nats",
              nats,
            ]);
            assert.equal((await listed(nats, jobId))?.status, "CANCELED");
          } finally {
            await client.kill();
          }
        },
      );
    } catch (error) {
      console.error(cluster.logs());
      throw error;
    } finally {
      await cluster.stop();
      await server.stop();
    }
  },
});

Deno.test({
  name:
    "local mode: Ctrl-C prints the weir resume command with the job module and its arguments, which resumes with the state kept",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = await startNatsServer({ jetstream: true });
    const nats = server.url;
    const checkpoints = await Deno.makeTempDir({ prefix: "weir-cli-jobs-" });
    try {
      const s = await streams(nats, "local");
      const half = PER_KEY / 2;
      await publish(nats, s, 1, half);
      const args = [...jobArgs(nats, s), "--checkpoint-dir", checkpoints];
      const first = new Proc("local job", ["run", "-A", JOB, ...args], { WEIR_NATS_URL: "" });
      let jobId: string;
      try {
        await first.waitFor(/running job (\S+) .* locally/, STEP_TIMEOUT_MS);
        jobId = /running job (\S+) /.exec(first.output)![1]!;
        await waitCommitted(nats, s, KEYS * half);
        first.child.kill("SIGINT");
        const status = await first.endWithin(STEP_TIMEOUT_MS);
        assert.equal(status.code, 130, first.output);
      } finally {
        await first.kill();
      }
      const resumeArgs = printedResume(first.output, jobId);
      assert.deepEqual(resumeArgs, ["resume", jobId, JOB, "--", ...args]);

      await publish(nats, s, half + 1, PER_KEY);
      const resumed = new Proc("weir resume (local)", ["run", "-A", CLI, ...resumeArgs], {
        WEIR_NATS_URL: "",
      });
      try {
        await resumed.waitFor(/running job (\S+) .* locally/, STEP_TIMEOUT_MS);
        await waitCommitted(nats, s, KEYS * PER_KEY);
      } finally {
        await resumed.kill("SIGTERM"); // passed on to the job process
      }
      await assertExactlyOnce(nats, s);
    } finally {
      await Deno.remove(checkpoints, { recursive: true });
      await server.stop();
    }
  },
});

Deno.test({
  name:
    "weir --help and every command's --help exit 0 with the usage (the job commands' also with the exit codes)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const top = await weirDone("--help");
    assert.equal(top.code, 0, top.output);
    for (const name of Object.keys(COMMANDS)) {
      assert.ok(top.output.includes(`  ${name}`), `weir --help lists ${name}:\n${top.output}`);
      const { code, output } = await weirDone(name, "--help");
      assert.equal(code, 0, `weir ${name} --help:\n${output}`);
      assert.match(output, new RegExp(`usage: weir ${name}`), output);
      if (JOB_COMMANDS.includes(name)) {
        assert.match(output, /exit code/i, `weir ${name} --help names the exit codes:\n${output}`);
      }
    }
  },
});

Deno.test({
  name: "weir: bad usage exits 2 with a message naming what was wrong",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cases: [string[], RegExp][] = [
      [[], /usage: weir <command>/],
      [["frobnicate"], /unknown command "frobnicate"/],
      [["run"], /weir run needs a job module/],
      [
        ["run", JOB, "-p", "0"],
        /-p\/--parallelism must be a positive integer: current value is "0"/,
      ],
      [["run", JOB, "--detached"], /--detached needs a cluster/],
      [["run", JOB, "extra"], /put job arguments after '--'/],
      [["run", JOB, "--restore-mode", "CLAIM"], /need -s SAVEPOINT/],
      [["list", "--bogus"], /weir list: Unknown option '--bogus'/],
      [["list"], /weir list needs --nats URL/],
      [["cancel", "--nats", "nats://127.0.0.1:1"], /weir cancel needs a job id/],
      [["resume"], /weir resume needs a job id or a savepoint path/],
      [["resume", "some-job-1a2b3c4d"], /needs the job module in local mode/],
      [["resume", "no/such/savepoint-x-1"], /needs the job module/],
      [
        ["worker", "--slots", "two", "--nats", "nats://127.0.0.1:1"],
        /--slots must be a positive integer/,
      ],
    ];
    for (const [args, message] of cases) {
      const { code, output } = await weirDone(...args);
      assert.equal(code, 2, `weir ${args.join(" ")}:\n${output}`);
      assert.match(output, message, `weir ${args.join(" ")}`);
    }
  },
});
