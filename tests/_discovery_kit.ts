/**
 * The shared part of the JetStream subject-discovery job tests
 * (`connectors/jetstream/source_discovery_test.ts` and the breaker's
 * `tests/breaker_delivery_discovery_test.ts`): records `{ s, n }` published
 * to `<stream>.<s>` with `n` = 1, 2, …, committed by an exactly-once
 * `CollectingSink` and compared per subject, exactly, in order.
 *
 * An unbounded job has no end of its own: once the sink holds everything
 * expected, a completed checkpoint's notification ends it with
 * {@linkcode JobDone} (a `SuppressRestartsError`), and
 * {@linkcode runUntilDone} waits for that with a deadline; when the test
 * gives up, it sets `gaveUp` so the next completed checkpoint ends the job
 * (the job is never left running).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  type MapFunction,
  type RestartStrategyConfig,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { JetStreamSource } from "../connectors/jetstream/source.ts";
import { SuppressRestartsError } from "../runtime/failure.ts";
import type { CollectingSink } from "../testing.ts";
import { waitUntil } from "./_wait.ts";

/** A record of subject `s`, the `n`-th published to it (from 1). */
export interface SubjectRecord {
  /** The subject's last token. */
  readonly s: string;
  /** 1, 2, … per subject, in publish order. */
  readonly n: number;
}

/** Ends an unbounded test job on purpose, once the sink holds every expected record. */
export class JobDone extends SuppressRestartsError {
  /** Builds the error (`JobDone: the sink holds every expected record`). */
  constructor() {
    super("JobDone: the sink holds every expected record");
    this.name = "JobDone";
  }
}

/** What a job's probe shares with the test for {@linkcode runUntilDone}. */
export interface GiveUp {
  /** Set when the test gives up waiting: the probe then ends the job at its next completed checkpoint. */
  gaveUp?: string;
}

/** The `n`s per subject, in the order of `records`. */
export function bySubject(records: readonly SubjectRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const { s, n } of records) (out.get(s) ?? out.set(s, []).get(s)!).push(n);
  return out;
}

/** `1 … count` per subject, as {@linkcode holds} and {@linkcode assertExactlyOnce} expect it. */
export function firstN(counts: Readonly<Record<string, number>>): Map<string, number[]> {
  return new Map(
    Object.entries(counts).map(([s, count]) => [s, Array.from({ length: count }, (_, i) => i + 1)]),
  );
}

/** Whether the sink holds at least as many records of each subject as `expected` lists. */
export function holds(
  sink: CollectingSink<SubjectRecord>,
  expected: ReadonlyMap<string, readonly number[]>,
): boolean {
  const got = bySubject(sink.committed());
  return [...expected].every(([s, ns]) => (got.get(s)?.length ?? 0) >= ns.length);
}

/**
 * Asserts that the sink holds exactly the expected `n`s of each subject, in
 * order, and no subject not expected.
 * @throws {AssertionError} naming the foreign subjects, or the first 10
 *   wrong subjects with what they hold, after `context`.
 */
export function assertExactlyOnce(
  sink: CollectingSink<SubjectRecord>,
  expected: ReadonlyMap<string, readonly number[]>,
  context: string,
): void {
  const got = bySubject(sink.committed());
  const extra = [...got.keys()].filter((s) => !expected.has(s));
  assert.deepEqual(extra, [], `${context}: subjects never published`);
  const wrong: string[] = [];
  for (const [s, ns] of expected) {
    const have = got.get(s) ?? [];
    if (JSON.stringify(have) !== JSON.stringify(ns)) {
      wrong.push(`${s}: ${JSON.stringify(have)} instead of ${JSON.stringify(ns)}`);
    }
  }
  assert.deepEqual(wrong.slice(0, 10), [], `${context}: ${wrong.length} subject(s) wrong`);
}

/**
 * Waits (`timeoutMs` at most) until the unbounded job `run` ends by failing
 * (`JobDone`, or a failure the test induced) and returns its error. When
 * the time is up, it sets `shared.gaveUp` (the job ends at its next
 * completed checkpoint), waits for the job to end, and rethrows the
 * timeout, which says what `missing` reports.
 * @throws {AssertionError} when the job finishes instead of failing, or
 *   fails with something other than a `JobFailedError`.
 */
export async function runUntilDone(
  run: Promise<unknown>,
  shared: GiveUp,
  options: { readonly timeoutMs: number; readonly missing: () => string },
): Promise<JobFailedError> {
  let settled = false;
  const outcome = run.then(
    () => assert.fail("an unbounded job ends only by failing"),
    (e: unknown) => e,
  ).finally(() => settled = true);
  try {
    await waitUntil(() => settled, {
      timeoutMs: options.timeoutMs,
      missing: () => `the job still runs: ${options.missing()}`,
    });
  } catch (error) {
    shared.gaveUp = error instanceof Error ? error.message : String(error);
    await outcome;
    throw error;
  }
  const error = await outcome;
  assert.ok(error instanceof JobFailedError, String(error));
  return error;
}

/** Options of {@linkcode discoveryJob}. */
export interface DiscoveryJobOptions {
  /** The NATS server. */
  readonly connection: NatsConnectionOptions;
  /** The stream; the source reads `<stream>.*`. */
  readonly stream: string;
  /** The source's transaction bucket. */
  readonly bucket: string;
  /** The checkpoint directory. */
  readonly directory: string;
  /** Checkpoint interval, in ms. */
  readonly checkpointIntervalMs: number;
  /** The job's restart strategy. */
  readonly restartStrategy: RestartStrategyConfig;
  /** The job's parallelism. */
  readonly parallelism: number;
  /** How often the source looks for new subjects, in ms. */
  readonly discoveryIntervalMs: number;
  /** Messages per fetch of the source. */
  readonly batchSize: number;
  /** The identity map between source and sink that injects the test's faults and ends the job. */
  readonly probe: MapFunction<SubjectRecord, SubjectRecord>;
  /** The exactly-once sink the test reads. */
  readonly sink: CollectingSink<SubjectRecord>;
}

/**
 * The discovery job: a `JetStreamSource` of `<stream>.*` (uid `records`)
 * → `probe` (uid `probe`) → `sink` (uid `committed`), with checkpoints into
 * `directory`. Returns the environment, to execute (or resume) by the caller.
 */
export function discoveryJob(options: DiscoveryJobOptions): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(options.checkpointIntervalMs, { directory: options.directory })
    .setRestartStrategy(options.restartStrategy)
    .setParallelism(options.parallelism);
  env.fromSource(
    new JetStreamSource<SubjectRecord>({
      connection: options.connection,
      stream: options.stream,
      filterSubject: `${options.stream}.*`,
      txnBucket: options.bucket,
      discoveryIntervalMs: options.discoveryIntervalMs,
      batchSize: options.batchSize,
    }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .map(options.probe).uid("probe")
    .sinkTo(options.sink).uid("committed");
  return env;
}
