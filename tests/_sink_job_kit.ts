/**
 * The shared shape of the end-to-end sink job tests (MariaDB XA and upsert,
 * PostgreSQL prepared and upsert, write-ahead log, file sink, and the
 * SIGKILL jobs): a `TestSource` of keyed records (with scripted
 * `TestSource.fail` markers or pauses) at parallelism 2, a keyed running sum
 * ({@linkcode SequenceCheck}) and the sink under test, checkpoints every
 * 20 ms; the expected output is computed without the engine
 * ({@linkcode expectedSums}) and compared exactly.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  RestartStrategies,
  type RestartStrategyConfig,
  type Sink,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { parseCsv } from "../connectors/file/csv.ts";
import { waitUntil } from "./_wait.ts";
import {
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  type SumRecord,
} from "./_job_kit.ts";

/** The input of the failing sink jobs: 2 splits of 2 keys × 400 records, a checkpoint awaited every 150. */
export const SINK_JOB_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 400,
  awaitCheckpointEvery: 150,
};

/** The input of the SIGKILL jobs: 2 splits of 2 keys × 1500 records, no awaited checkpoints. */
export const KILL_JOB_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 1500,
  awaitCheckpointEvery: 1_000_000,
};

/**
 * Inserts a fail marker for `attempt` into `items` 20 records after the
 * `nth` (1-based) awaitCheckpoint marker, so the failure comes after a
 * completed checkpoint with records of the next interval written.
 * @throws {AssertionError} when `items` has fewer than `nth` markers.
 */
export function failAfterCheckpoint(
  items: TestItem<KeyedRecord>[],
  nth: number,
  attempt: number,
): TestItem<KeyedRecord>[] {
  let seen = 0;
  const at = items.findIndex((item) =>
    item instanceof Object && "spec" in item && item.spec.kind === "await-checkpoint" &&
    ++seen === nth
  );
  assert.ok(at >= 0, `split has ${seen} awaitCheckpoint markers, wanted ${nth}`);
  return [
    ...items.slice(0, at + 21),
    TestSource.fail(`induced failure on attempt ${attempt}`, { attempt }),
    ...items.slice(at + 21),
  ];
}

/**
 * The two splits of {@linkcode SINK_JOB_SPLITS}, split 0 failing on attempt 0
 * after its `nth0`-th awaited checkpoint and split 1 on attempt 1 after its
 * `nth1`-th: two restarts in all.
 */
export function twoFailureSplits(nth0: number, nth1: number): TestItem<KeyedRecord>[][] {
  const [split0, split1] = keyedSplits(SINK_JOB_SPLITS);
  return [failAfterCheckpoint(split0!, nth0, 0), failAfterCheckpoint(split1!, nth1, 1)];
}

/** The splits of `options` with a 20 ms pause after every 50 items (a kill job lasts about two seconds). */
export function pacedSplits(options: KeyedSplitsOptions): TestItem<KeyedRecord>[][] {
  return keyedSplits(options).map((items) => {
    const paced: TestItem<KeyedRecord>[] = [];
    items.forEach((item, i) => {
      paced.push(item);
      if ((i + 1) % 50 === 0) paced.push(TestSource.pause(20));
    });
    return paced;
  });
}

/** Options of {@linkcode keyedSumJob}. */
export interface KeyedSumJobOptions {
  /** The checkpoint directory. */
  readonly checkpoints: string;
  /** The source's splits, one per subtask. */
  readonly lists: TestItem<KeyedRecord>[][];
  /** The job's restart strategy. */
  readonly restartStrategy: RestartStrategyConfig;
  /** The sink under test. */
  readonly sink: Sink<SumRecord>;
  /** The sink's uid (a sink's identity in its state and names). */
  readonly sinkUid: string;
  /** Records per source batch; 8 when omitted. */
  readonly batchSize?: number;
  /** Installs fault hooks on the environment before the job is built, if given. */
  readonly install?: (env: StreamExecutionEnvironment) => void;
}

/**
 * The keyed running-sum job into `sink`: parallelism 2, checkpoints every
 * 20 ms into `checkpoints`, `TestSource.perSubtask(lists)` → keyBy key →
 * {@linkcode SequenceCheck} → sink. Returns the environment, to execute
 * (or resume) by the caller.
 */
export function keyedSumJob(options: KeyedSumJobOptions): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(20, { directory: options.checkpoints })
    .setRestartStrategy(options.restartStrategy);
  options.install?.(env);
  env.fromSource(
    TestSource.perSubtask(options.lists, { batchSize: options.batchSize ?? 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums")
    .sinkTo(options.sink).uid(options.sinkUid);
  return env;
}

/** Options of {@linkcode runWithTwoFailures}. */
export interface TwoFailureRunOptions {
  /** The checkpoint directory. */
  readonly checkpoints: string;
  /** The sink under test. */
  readonly sink: Sink<SumRecord>;
  /** The sink's uid. */
  readonly sinkUid: string;
  /** The job's name. */
  readonly jobName: string;
  /** After which awaited checkpoint split 0 and split 1 fail; `[2, 4]` when omitted. */
  readonly failAfter?: readonly [number, number];
}

/**
 * Runs the keyed running-sum job into `sink` over
 * {@linkcode twoFailureSplits} with a fixed-delay restart strategy (3
 * attempts, no delay) and asserts that exactly the two induced failures
 * restarted it.
 * @throws {AssertionError} when the job restarted another number of times
 *   (its summary in the message); the job's own error when it fails.
 */
export async function runWithTwoFailures(options: TwoFailureRunOptions): Promise<void> {
  const [nth0, nth1] = options.failAfter ?? [2, 4];
  const result = await keyedSumJob({
    checkpoints: options.checkpoints,
    lists: twoFailureSplits(nth0, nth1),
    restartStrategy: RestartStrategies.fixedDelay(3, 0),
    sink: options.sink,
    sinkUid: options.sinkUid,
  }).execute(options.jobName);
  assert.equal(result.restarts, 2, result.summary);
}

/**
 * The fault pair of the "crash between pre-commit and commit" job tests,
 * as an `install` hook for {@linkcode keyedSumJob}: on attempt 0, sink
 * subtask 1 dies before the commit of a checkpoint ≥ 3 (its transaction
 * prepared, the checkpoint completed); then on attempt 1 the coordinator
 * fails before notifying a completed checkpoint, so that restores must
 * commit what completed checkpoints prepared. Two restarts in all. Each
 * fault is pushed onto `fired` as it fires (the test asserts both did).
 */
export function crashBeforeCommitThenLoseNotification(
  fired: string[],
): (env: StreamExecutionEnvironment) => void {
  return (env) =>
    env.setFaultInjector({
      // The sink subtask dies with its transaction prepared, before the completion commits it.
      task: (point, site) => {
        if (
          fired.length === 0 && point === "before-commit" && site.attempt === 0 &&
          site.checkpointId >= 3 && site.vertexName.includes("Sink") && site.subtask === 1
        ) {
          fired.push(`before-commit of checkpoint ${site.checkpointId}`);
          throw new Error(`induced failure before the commit of checkpoint ${site.checkpointId}`);
        }
      },
      // The checkpoint completes, its notification never arrives: the restore commits it.
      coordinator: (point, checkpointId, attempt) => {
        if (fired.length === 1 && point === "before-notify-complete" && attempt === 1) {
          fired.push(`before-notify-complete of checkpoint ${checkpointId}`);
          throw new Error(`induced failure before notifying checkpoint ${checkpointId}`);
        }
      },
    });
}

/** A row read back from a table of `(key, seq, sum)` as a {@linkcode SumRecord}. */
export function sumRecordOf(row: Readonly<Record<string, unknown>>): SumRecord {
  return { key: String(row.key), seq: Number(row.seq), sum: Number(row.sum) };
}

/** Every output record of a failure-free run of `splits`, ordered by key, then seq (an append table's rows). */
export function expectedRows(splits: KeyedSplitsOptions = SINK_JOB_SPLITS): SumRecord[] {
  return [...expectedSums(splits).values()].flat()
    .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq);
}

/** Each key's last output record of a failure-free run of `splits`, ordered by key (an upsert table's rows). */
export function expectedLatestRows(splits: KeyedSplitsOptions = SINK_JOB_SPLITS): SumRecord[] {
  return [...expectedSums(splits).values()].map((sums) => sums[sums.length - 1]!)
    .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/**
 * Asserts that `got` (rows ordered as {@linkcode expectedRows} orders them)
 * equals `expected` exactly: the same count, then record by record.
 */
export function assertSameRows(got: readonly SumRecord[], expected: readonly SumRecord[]): void {
  assert.equal(got.length, expected.length, "rows in the table");
  assert.deepEqual(got, expected);
}

/**
 * The records of the finished CSV part files under `dir` (header
 * `key,seq,sum`) and the hidden (in-progress or pending) files left there.
 * @throws {AssertionError} when a finished file lacks the header.
 * @throws {CsvParseError} naming the file when one is not valid CSV.
 */
export async function readFinishedCsv(
  dir: string,
): Promise<{ records: SumRecord[]; hidden: string[] }> {
  const records: SumRecord[] = [];
  const hidden: string[] = [];
  for (const path of await listTree(dir)) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (name.startsWith(".")) {
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

/**
 * Asserts that `records` (in any order across keys) are exactly a
 * failure-free run's output of `splits`: the same count, the same keys,
 * and each key's sums in seq order equal to {@linkcode expectedSums}.
 */
export function assertSameSumsPerKey(
  records: readonly SumRecord[],
  splits: KeyedSplitsOptions,
): void {
  const expected = expectedSums(splits);
  const byKey = new Map<string, SumRecord[]>();
  for (const r of records) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
  for (const list of byKey.values()) list.sort((a, b) => a.seq - b.seq);
  assert.equal(records.length, [...expected.values()].flat().length, "records in finished files");
  assert.deepEqual([...byKey.keys()].sort(), [...expected.keys()].sort());
  for (const [key, list] of expected) {
    assert.deepEqual(byKey.get(key), list, `records of key ${key}`);
  }
}

/** Options of {@linkcode killAndResume}. */
export interface KillAndResumeOptions {
  /** The path of the job's script (it prints `DONE restarts=<n> …` at the end). */
  readonly job: string;
  /** The script's arguments; the resumed run gets the job id to resume after them. */
  readonly args: readonly string[];
  /** The checkpoint directory the job writes (one job's checkpoints must be there at the kill). */
  readonly checkpoints: string;
  /** True once the first run has gone far enough to be killed. */
  readonly killWhen: () => Promise<boolean>;
  /** What `killWhen` waits for, for the timeout's message. */
  readonly awaiting: string;
  /** Checks made between the kill and the resume (what the kill left behind). */
  readonly afterKill?: () => Promise<void>;
}

/**
 * Runs `job` in a child process, SIGKILLs it once `killWhen` holds (60 s at
 * the most), then runs it again in a second process resuming the one job
 * found under `checkpoints`, to the end.
 * @throws {AssertionError} when the first run ends by itself, when there is
 *   not exactly one job's checkpoints, or when the resumed run fails or
 *   restarts (its stdout and stderr in the message).
 */
export async function killAndResume(options: KillAndResumeOptions): Promise<void> {
  const first = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", options.job, ...options.args],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(first.stderr).text();
  let killed = false;
  try {
    await waitUntil(options.killWhen, {
      timeoutMs: 60_000,
      missing: () => options.awaiting,
    });
    first.kill("SIGKILL");
    killed = true;
  } finally {
    if (!killed) first.kill("SIGKILL");
    const status = await first.status;
    assert.equal(status.signal, "SIGKILL", `the first run ended by itself: ${await stderr}`);
  }
  await options.afterKill?.();
  const jobs = [];
  for await (const entry of Deno.readDir(options.checkpoints)) jobs.push(entry.name);
  assert.equal(jobs.length, 1, `one job's checkpoints: ${jobs.join(", ")}`);

  const second = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", options.job, ...options.args, jobs[0]!],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(second.stdout);
  assert.ok(
    second.success && stdout.includes("DONE restarts=0"),
    `the resumed run failed: ${stdout}${new TextDecoder().decode(second.stderr)}`,
  );
}
