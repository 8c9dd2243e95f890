/**
 * Regression tests for the breaker's findings (one test per fix, see
 * `/tmp/breaker/repro_*.ts`):
 *
 * 1. a buffer that cannot be sent (a record over the transport's max
 *    payload, or one MessagePack cannot encode) fails the job, naming the
 *    edge, even when the buffer had to wait for credit; it never crashes the
 *    process or drops records silently;
 * 2. a source reader whose `isAvailable()` rejects with `undefined` fails
 *    the job instead of hanging it;
 * 3. an error whose message is larger than a transport message fails the
 *    job (its report is truncated) instead of hanging it;
 * 4. a run resumed after a failure for good begins no transaction id a
 *    killed run already used, so a two-phase-commit sink loses nothing;
 * 5. a checkpoint with a missing state file fails the restore without
 *    restarts, even under the default (unlimited) restart strategy;
 * 6. keys with lone UTF-16 surrogates are hashed as the consumer decodes
 *    them, so each record is counted under the key the consumer sees;
 * 7. `resumeFrom` with an unknown job or checkpoint fails at once with a
 *    `ResumeError` that lists the completed checkpoints.
 *
 * Tests of a hang run under a deadline, so a regression fails the test
 * instead of stalling the suite.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  RestartStrategies,
  ResumeError,
  type RuntimeContext,
  type SourceReader,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import type { Collector } from "../mod.ts";
import type { SinkInitContext } from "../runtime/api/sink.ts";
import { CollectingSink, type CollectingTxn, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  SplitCounter,
  splitKeys,
  type SumRecord,
} from "./_job_kit.ts";

/** A deadline passed before the promise under test settled. */
class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

/**
 * Awaits `promise`, or throws {@linkcode DeadlineExceeded} after `ms` ms.
 * @param what names the awaited operation in the error.
 */
async function withinDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DeadlineExceeded(`${what} did not settle within ${ms} ms`)),
      ms,
    );
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The error `promise` rejects with within `ms` ms; fails the test when it
 * resolves or does not settle in time.
 * @param what names the awaited operation in assertion messages.
 */
async function rejectionOf(promise: Promise<unknown>, ms: number, what: string): Promise<Error> {
  let value: unknown;
  try {
    value = await withinDeadline(promise, ms, what);
  } catch (error) {
    if (error instanceof DeadlineExceeded) throw error;
    assert.ok(error instanceof Error, `${what} rejected with a non-Error: ${String(error)}`);
    return error;
  }
  return assert.fail(`${what} resolved instead of rejecting: ${JSON.stringify(value)}`);
}

/**
 * Catches uncaught errors and unhandled rejections (and keeps them from
 * killing the test process) until `stop()`, so a test can assert that none
 * happened.
 */
function captureUncaught(): { readonly errors: string[]; stop(): void } {
  const errors: string[] = [];
  const onError = (event: ErrorEvent) => {
    event.preventDefault();
    errors.push(`uncaught: ${event.message}`);
  };
  const onRejection = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    errors.push(`unhandled rejection: ${String(event.reason)}`);
  };
  globalThis.addEventListener("error", onError);
  globalThis.addEventListener("unhandledrejection", onRejection);
  return {
    errors,
    stop() {
      globalThis.removeEventListener("error", onError);
      globalThis.removeEventListener("unhandledrejection", onRejection);
    },
  };
}

/** Spins for `ms` ms of real time: a consumer this slow keeps its producers waiting for credit. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* spin */ }
}

/**
 * Runs `body` with a fresh temporary directory, removed afterwards. Unlike
 * `withTempDir` of `_job_kit.ts`, removal retries for a while (a failed
 * job's cancelled subtasks may still be writing state files into it after
 * `execute()` settled) and never hides an error of `body`.
 */
async function inTempDir<R>(body: (dir: string) => Promise<R>): Promise<R> {
  const dir = await Deno.makeTempDir({ prefix: "weir-breaker-" });
  let result: R;
  try {
    result = await body(dir);
  } catch (error) {
    await removeDir(dir).catch(() => {}); // keep the test's own error
    throw error;
  }
  await removeDir(dir);
  return result;
}

/** Removes `dir` recursively, retrying up to 10 times 20 ms apart while files still appear in it. */
async function removeDir(dir: string): Promise<void> {
  for (let tries = 1;; tries++) {
    try {
      await Deno.remove(dir, { recursive: true });
      return;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      if (tries >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** The job directories under `dir`, each with its completed checkpoints (those with a `_metadata`), ascending. */
async function checkpointsIn(dir: string): Promise<Map<string, number[]>> {
  const byJob = new Map<string, number[]>();
  for (const path of await listTree(dir)) {
    const [job, chk, file] = path.split("/");
    if (job === undefined) continue;
    if (!byJob.has(job)) byJob.set(job, []);
    const match = /^chk-(\d+)$/.exec(chk ?? "");
    if (match && file === "_metadata") byJob.get(job)!.push(Number(match[1]));
  }
  for (const ids of byJob.values()) ids.sort((a, b) => a - b);
  return byJob;
}

/** The one job directory under `dir` and its completed checkpoints, asserting there is exactly one. */
async function onlyJob(dir: string): Promise<{ jobId: string; checkpoints: number[] }> {
  const jobs = [...await checkpointsIn(dir)];
  assert.equal(jobs.length, 1, `expected one job directory in ${dir}: ${JSON.stringify(jobs)}`);
  const [jobId, checkpoints] = jobs[0]!;
  return { jobId, checkpoints };
}

// ---------------------------------------------------------------------------
// 1. Buffers that cannot be sent

/** Record count of the unsendable-record jobs; the record at `UNSENDABLE_AT` is the bad one. */
const UNSENDABLE_COUNT = 400;
const UNSENDABLE_AT = 200;

/**
 * source -> map (turns record `UNSENDABLE_AT` into `bad()`) -> keyBy -> slow
 * map -> CollectingSink, with one record per buffer and 2 credits per
 * channel, so buffers queue for credit behind the slow keyed map.
 */
function unsendableJob(bad: () => unknown): {
  env: StreamExecutionEnvironment;
  sink: CollectingSink<number>;
} {
  // Local mode hands records over unencoded by default (object reuse); these
  // jobs test the encoding path, as a cluster's cross-thread edges take it.
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setRestartStrategy(RestartStrategies.noRestart())
    .setNetworkBuffers({ bufferSize: 1, credits: 2 })
    .disableObjectReuse();
  const sink = new CollectingSink<number>();
  const items = Array.from({ length: UNSENDABLE_COUNT }, (_, i) => i);
  env.fromSource(TestSource.of(items), WatermarkStrategy.noWatermarks(), "numbers").uid("numbers")
    .map((n: number): unknown => n === UNSENDABLE_AT ? bad() : n).uid("spoil")
    .keyBy(() => 1)
    .map((v: unknown): number => {
      busyWait(1);
      return typeof v === "number" ? v : -1;
    }).uid("slow")
    .sinkTo(sink).uid("out");
  return { env, sink };
}

/** The keyed edge of a job and the vertex id it feeds (as error messages name them). */
function keyedEdgeOf(env: StreamExecutionEnvironment): { index: number; to: string } {
  const graph = env.getJobGraph();
  const edge = graph.edges.find((e) => e.partitioner === "hash");
  assert.ok(edge, "the job has no keyed edge");
  return { index: edge.index, to: graph.vertices[edge.target]!.id };
}

Deno.test("a record larger than the transport's max payload on a keyed edge fails the job, naming the edge", async (t) => {
  await t.step(
    "a 2 MiB string waiting for credit fails execute() with RecordTooLargeError",
    async () => {
      const uncaught = captureUncaught();
      try {
        const { env, sink } = unsendableJob(() => "x".repeat(2 << 20));
        const edge = keyedEdgeOf(env);
        const error = await rejectionOf(env.execute("too-large"), 10_000, "execute()");
        assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
        assert.match(error.message, /RecordTooLargeError|exceeds the transport's max payload/);
        assert.ok(
          error.message.includes(`edge ${edge.index} (to ${edge.to})`),
          `the error does not name edge ${edge.index} (to ${edge.to}): ${
            error.message.slice(0, 500)
          }`,
        );
        assert.deepEqual(
          uncaught.errors,
          [],
          "errors escaped the job (they would kill the process)",
        );
        assert.ok(!sink.committed().includes(-1), "the oversized record reached the sink");
      } finally {
        uncaught.stop();
      }
    },
  );

  await t.step("a symbol fails the job with a clear error instead of being dropped", async () => {
    const uncaught = captureUncaught();
    try {
      const { env, sink } = unsendableJob(() => Symbol("unencodable"));
      const outcome = await withinDeadline(
        env.execute("unencodable").then(
          (result) => ({ ok: true as const, summary: result.summary }),
          (error: unknown) => ({ ok: false as const, error }),
        ),
        10_000,
        "execute()",
      );
      assert.deepEqual(uncaught.errors, [], "errors escaped the job (they would kill the process)");
      if (outcome.ok) {
        // Success is acceptable only if nothing went missing; it never is here.
        assert.equal(
          sink.committed().length,
          UNSENDABLE_COUNT,
          `the job reported success but committed ${sink.committed().length} of ` +
            `${UNSENDABLE_COUNT} records (${outcome.summary})`,
        );
        assert.fail(`the job succeeded with an unencodable record (${outcome.summary})`);
      }
      assert.ok(outcome.error instanceof JobFailedError, `not a JobFailedError: ${outcome.error}`);
      assert.match(
        outcome.error.message,
        /symbol/,
        "the error does not say what cannot be encoded",
      );
      assert.match(outcome.error.message, /numbers/, "the error does not name the subtask");
    } finally {
      uncaught.stop();
    }
  });
});

// ---------------------------------------------------------------------------
// 2. isAvailable() rejecting with undefined

Deno.test("a source reader whose isAvailable() rejects with undefined fails the job instead of hanging", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setRestartStrategy(RestartStrategies.noRestart());
  const sink = new CollectingSink<number>();
  env.fromSource(
    {
      boundedness: "bounded",
      enumerateSplits: () => [{ splitId: "only" }],
      createReader: (): SourceReader<number, { splitId: string }> => {
        let polls = 0;
        return {
          addSplits() {},
          pollNext(out) {
            out.collect(++polls);
            return polls < 3 ? "MORE_AVAILABLE" : "NOTHING_AVAILABLE";
          },
          isAvailable: () => Promise.reject(undefined),
          snapshotState: () => [{ splitId: "only" }],
        };
      },
    },
    WatermarkStrategy.noWatermarks(),
    "rejecting",
  ).uid("rejecting")
    .sinkTo(sink).uid("out");
  const error = await rejectionOf(env.execute("reject-undefined"), 5_000, "execute()");
  assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
  assert.match(error.message, /undefined/, "the error does not say what the reader rejected with");
  assert.match(error.message, /rejecting/, "the error does not name the source subtask");
});

// ---------------------------------------------------------------------------
// 3. An error message over 1 MiB

Deno.test("a user function throwing an error with a message over 1 MiB fails the job with the message truncated", async () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setRestartStrategy(RestartStrategies.noRestart());
  const sink = new CollectingSink<number>();
  const huge = 2 << 20; // characters: larger than the transport's 1 MiB max payload
  env.fromCollection([1, 2, 3]).uid("numbers")
    .map((n: number) => {
      if (n === 2) throw new Error(`bad record: ${"x".repeat(huge)}`);
      return n;
    }).uid("throwing")
    .sinkTo(sink).uid("out");
  const error = await rejectionOf(env.execute("huge-error"), 5_000, "execute()");
  assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
  assert.match(error.message, /bad record: x/, "the user's message is not reported");
  assert.ok(
    error.message.length < 256 * 1024,
    `the reported message was not truncated: ${error.message.length} characters`,
  );
  assert.match(error.message, /more characters/, "the message does not say it was truncated");
});

// ---------------------------------------------------------------------------
// 4. Transaction ids after a resume

/**
 * A CollectingSink that records the id of every transaction it begins (in
 * an array shared by all subtask copies and by every run).
 */
class IdRecordingSink<T> extends CollectingSink<T> {
  readonly begun: string[] = [];
  override beginTransaction(context: SinkInitContext): CollectingTxn<T> {
    const txn = super.beginTransaction(context);
    this.begun.push(txn.id);
    return txn;
  }
}

/**
 * What a killed process forgets: the sink's in-memory transaction counters
 * (its committed output is durable, as a real sink's would be). Without
 * this, the second run would continue the first run's counters in the
 * shared store and could never reuse an id, whatever the ids are made of.
 */
function forgetTransactionCounters(sink: CollectingSink<unknown>): void {
  const store = Reflect.get(sink, "store") as { counters?: unknown } | undefined;
  assert.ok(
    store?.counters instanceof Map,
    "CollectingSink keeps no transaction counters in `store.counters` any more: update this test",
  );
  store.counters.clear();
}

/** A split-counting identity map that throws at `failAt` (every attempt). */
class ThrowAt extends SplitCounter {
  readonly failAt: KeyedRecord;
  constructor(failAt: KeyedRecord) {
    super(undefined);
    this.failAt = failAt;
  }
  override onRecord(record: KeyedRecord): void {
    if (record.key === this.failAt.key && record.seq === this.failAt.seq) {
      throw new Error(`induced failure at ${record.key}#${record.seq}`);
    }
  }
}

const RESUME_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 150,
  awaitCheckpointEvery: 50,
};

/** The keyed job of `_job_kit.ts` at parallelism 2, with `identity` as its second operator. */
function keyedJob(
  dir: string,
  identity: SplitCounter,
  sink: CollectingSink<SumRecord>,
): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(5, { directory: dir })
    .setRestartStrategy(RestartStrategies.noRestart());
  env.fromSource(
    TestSource.perSubtask<KeyedRecord>(keyedSplits(RESUME_SPLITS), { batchSize: 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records").setParallelism(2)
    .map(identity).uid("identity").setParallelism(2)
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums").setParallelism(2)
    .sinkTo(sink).uid("committed").setParallelism(2);
  return env;
}

Deno.test("a job resumed after failing for good commits the failure-free output and repeats no transaction id", async () => {
  await inTempDir(async (dir) => {
    const sink = new IdRecordingSink<SumRecord>();
    // Split 0's key 0 fails at seq 120, after 240 records of the split: 4
    // awaitCheckpoint markers passed, so checkpoints completed and committed.
    const failAt = { key: splitKeys(0, RESUME_SPLITS.keysPerSplit)[0]!, seq: 120 };
    const first = await rejectionOf(
      keyedJob(dir, new ThrowAt(failAt), sink).execute("txn-ids"),
      10_000,
      "the failing run",
    );
    assert.ok(first instanceof JobFailedError, `not a JobFailedError: ${first}`);
    assert.match(first.message, /induced failure/);
    const committedBefore = sink.committed().length;
    assert.ok(committedBefore > 0, "the failing run committed nothing: the test would be vacuous");
    const { jobId, checkpoints } = await onlyJob(dir);
    assert.ok(checkpoints.length > 0, `job ${jobId} kept no completed checkpoint`);

    forgetTransactionCounters(sink);
    const result = await withinDeadline(
      keyedJob(dir, new SplitCounter(undefined), sink).resumeFrom({ jobId }).execute("txn-ids"),
      10_000,
      "the resumed run",
    );
    const context = `resumed from ${jobId} checkpoint ${checkpoints.at(-1)} (${result.summary})`;

    const repeated = sink.begun.filter((id, i) => sink.begun.indexOf(id) !== i);
    assert.deepEqual(repeated, [], `${context}: transaction ids begun twice`);
    assertSameOutput(
      sink.committed(),
      [...expectedSums(RESUME_SPLITS).values()].flat(),
      context,
    );
  });
});

// ---------------------------------------------------------------------------
// 5. A missing state file

/** Counts records per key in keyed state and emits `[key, count]` after each. */
class CountPerKey implements KeyedProcessFunction<string, string, [string, number]> {
  private count!: ValueState<number>;
  open(context: RuntimeContext): void {
    this.count = context.getState(new ValueStateDescriptor<number>("count"));
  }
  processElement(
    key: string,
    _ctx: KeyedProcessContext<string>,
    out: Collector<[string, number]>,
  ): void {
    const n = (this.count.value() ?? 0) + 1;
    this.count.update(n);
    out.collect([key, n]);
  }
}

/** words -> keyBy -> CountPerKey -> sink, checkpointing into `dir` (checkpoints kept at the end). */
function countingJob(
  dir: string,
  words: readonly string[],
  sink: CollectingSink<[string, number]>,
  options: {
    parallelism?: number;
    awaitEvery?: number;
    retainedCheckpoints?: number;
    memoryThresholdBytes?: number;
  } = {},
): StreamExecutionEnvironment {
  const items: (string | ReturnType<typeof TestSource.awaitCheckpoint>)[] = [];
  words.forEach((w, i) => {
    items.push(w);
    if (options.awaitEvery && (i + 1) % options.awaitEvery === 0) {
      items.push(TestSource.awaitCheckpoint());
    }
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(5, {
      directory: dir,
      retainOnFinish: true,
      retainedCheckpoints: options.retainedCheckpoints ?? 1,
      ...(options.memoryThresholdBytes === undefined
        ? {}
        : { memoryThresholdBytes: options.memoryThresholdBytes }),
    })
    .setParallelism(options.parallelism ?? 1);
  env.fromSource(TestSource.of(items), WatermarkStrategy.noWatermarks(), "words").uid("words")
    .keyBy((w: string) => w)
    .process(new CountPerKey()).uid("counts")
    .sinkTo(sink).uid("out");
  return env;
}

Deno.test("a missing state file fails the restore without restarts under the default restart strategy", async () => {
  await inTempDir(async (dir) => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i % 6}`);
    // Threshold 0: every blob a file (small state would be inline in the metadata).
    await countingJob(dir, words, new CollectingSink(), { memoryThresholdBytes: 0 })
      .execute("retained");
    const { jobId, checkpoints } = await onlyJob(dir);
    const checkpointId = checkpoints.at(-1);
    assert.ok(checkpointId !== undefined, `job ${jobId} retained no completed checkpoint`);
    const stateFiles = (await listTree(`${dir}/${jobId}/chk-${checkpointId}`))
      .filter((name) => name !== "_metadata" && !name.endsWith(".tmp"));
    // The keyed state of the counts (any state file would do).
    const victim = stateFiles.find((name) => name.endsWith(".keyed")) ?? stateFiles[0];
    assert.ok(victim !== undefined, `checkpoint ${checkpointId} has no state file`);
    await Deno.remove(`${dir}/${jobId}/chk-${checkpointId}/${victim}`);

    // No restart strategy set: with checkpointing on, the default restarts
    // forever, one second apart. A restore that restarts never settles here.
    const sink = new CollectingSink<[string, number]>();
    const env = countingJob(dir, words, sink).resumeFrom({ jobId, checkpointId });
    const started = performance.now();
    const error = await rejectionOf(env.execute("resumed"), 4_000, "execute() of the resume");
    const elapsed = performance.now() - started;
    assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
    assert.ok(
      error.message.includes(`checkpoint ${checkpointId}`),
      `the error does not name checkpoint ${checkpointId}: ${error.message}`,
    );
    assert.ok(
      error.message.includes(victim),
      `the error does not name the missing file ${victim}: ${error.message}`,
    );
    assert.ok(elapsed < 1_000, `the failure took ${Math.round(elapsed)} ms: it restarted first`);
    assert.deepEqual(sink.committed(), [], "the failed resume committed records");
  });
});

// ---------------------------------------------------------------------------
// 6. Lone surrogates in keys

Deno.test("keys with lone surrogates are counted under the key the consumer sees at parallelism 4", async () => {
  const rounds = 40;
  const keys = ["y\uD800", "y\uDC00", "y"];
  const words = Array.from({ length: rounds * keys.length }, (_, i) => keys[i % keys.length]!);
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setRestartStrategy(RestartStrategies.noRestart())
    .setParallelism(4);
  const sink = new CollectingSink<[string, number]>();
  env.fromCollection(words).uid("words")
    .keyBy((w: string) => w)
    .process(new CountPerKey()).uid("counts")
    .sinkTo(sink).uid("out");
  await withinDeadline(env.execute("lone-surrogates"), 10_000, "execute()");

  const counts = new Map<string, number[]>();
  for (const [key, n] of sink.committed()) {
    if (!counts.has(key)) counts.set(key, []);
    counts.get(key)!.push(n);
  }
  const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  // Both lone surrogates decode as U+FFFD on the network edge: one key, counted once per record.
  assert.deepEqual(
    new Map([...counts].map(([k, ns]) => [k, [...ns].sort((a, b) => a - b)])),
    new Map([["y\uFFFD", upTo(2 * rounds)], ["y", upTo(rounds)]]),
    "counts per key (each key's counts must run 1..n, once each)",
  );
});

// ---------------------------------------------------------------------------
// 7. resumeFrom an unknown job or checkpoint

Deno.test("resumeFrom an unknown job or checkpoint rejects at once with a ResumeError listing the completed checkpoints", async (t) => {
  await inTempDir(async (dir) => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i % 4}`);
    await countingJob(dir, words, new CollectingSink(), {
      awaitEvery: 10,
      retainedCheckpoints: 3,
    }).execute("retained");
    const { jobId, checkpoints } = await onlyJob(dir);
    assert.ok(checkpoints.length >= 2, `job ${jobId} retained checkpoints ${checkpoints}`);

    const resume = async (options: { jobId: string; checkpointId?: number }) => {
      const sink = new CollectingSink<[string, number]>();
      const env = countingJob(dir, words, sink).resumeFrom(options);
      const started = performance.now();
      const error = await rejectionOf(env.execute("resumed"), 4_000, "execute() of the resume");
      const elapsed = performance.now() - started;
      assert.ok(error instanceof ResumeError, `not a ResumeError: ${error}`);
      assert.ok(elapsed < 1_000, `the ResumeError took ${Math.round(elapsed)} ms`);
      assert.deepEqual(sink.committed(), [], "the rejected resume committed records");
      assert.deepEqual([...(await checkpointsIn(dir)).keys()], [jobId], "the resume made a job");
      return error;
    };

    await t.step("a checkpoint id that does not exist", async () => {
      const missing = checkpoints.at(-1)! + 100;
      const error = await resume({ jobId, checkpointId: missing });
      assert.match(error.message, new RegExp(`checkpoint ${missing}\\b`));
      assert.ok(
        error.message.includes(`completed checkpoints ${checkpoints.join(", ")}`),
        `the error does not list checkpoints ${checkpoints.join(", ")}: ${error.message}`,
      );
    });

    await t.step("an unknown job id", async () => {
      const error = await resume({ jobId: "no-such-job" });
      assert.match(error.message, /no-such-job/);
      assert.match(error.message, /no completed checkpoint/);
    });
  });
});
