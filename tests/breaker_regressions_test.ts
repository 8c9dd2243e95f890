/**
 * Regression tests for the breaker's findings about jobs that must fail
 * instead of hanging or crashing (one test per fix, see
 * `/tmp/breaker/repro_*.ts`; the resume and restore ones are
 * `breaker_resume_regressions_test.ts`):
 *
 * 1. a buffer that cannot be sent (a record over the transport's max
 *    payload, or one MessagePack cannot encode) fails the job, naming the
 *    edge, even when the buffer had to wait for credit; it never crashes the
 *    process or drops records silently;
 * 2. a source reader whose `isAvailable()` rejects with `undefined` fails
 *    the job instead of hanging it;
 * 3. an error whose message is larger than a transport message fails the
 *    job (its report is truncated) instead of hanging it;
 * 4. keys with lone UTF-16 surrogates are hashed as the consumer decodes
 *    them, so each record is counted under the key the consumer sees.
 *
 * Tests of a hang run under a deadline, so a regression fails the test
 * instead of stalling the suite.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  type SourceReader,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import {
  busyWait,
  captureUncaught,
  CountPerKey,
  rejectionOf,
  withinDeadline,
} from "./_breaker_kit.ts";

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
// 4. Lone surrogates in keys

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
