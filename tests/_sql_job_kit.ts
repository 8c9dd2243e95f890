/**
 * What the SQL failure tests share (`sql_failure_test.ts`,
 * `sql_windows_joins_failure_test.ts`, `sql_udf_failure_test.ts`,
 * `sql_over_rank_failure_test.ts`): a job that reads a list of records from
 * one `TestSource` subtask, optionally failing once after a completed
 * checkpoint, and commits its query's changelog through the exactly-once
 * `CollectingSink`; and the folding of a changelog into a multiset (which
 * the other SQL job tests use too). Test code only.
 *
 * Each run checkpoints every 30 ms into a temporary directory it removes
 * afterwards, and restarts with fixed-delay (2 attempts, no delay), so one
 * induced failure restarts the job once from its latest checkpoint.
 *
 * @module
 */

import {
  type DataStream,
  RestartStrategies,
  type Row,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { applyChange } from "../runtime/table/row.ts";
import { withTempDir } from "./_job_kit.ts";

/** Where a run's source fails: it waits for a checkpoint, reads on, then fails once. */
export interface InjectedFailure {
  /** Records read before the source waits for a completed checkpoint. */
  readonly checkpointAfter: number;
  /** Records read (in all) when the source fails; greater than `checkpointAfter`. */
  readonly failAfter: number;
  /** What a record is, for the failure's message: `induced failure after <what> <failAfter>`. */
  readonly what: string;
}

/** A changelog job of {@linkcode runChangelogJob}. */
export interface ChangelogJob<T> {
  /** The job's name. */
  readonly name: string;
  /** The default parallelism; the source runs at 1. */
  readonly parallelism: number;
  /** The source's name and uid, e.g. `"orders"`. */
  readonly source: string;
  /** The records, in order. */
  readonly records: readonly T[];
  /** Where the source fails once, or `undefined` for a failure-free run. */
  readonly failure: InjectedFailure | undefined;
  /** The query over the source's stream, as its changelog (it may register views on `env`). */
  readonly changelog: (env: StreamExecutionEnvironment, source: DataStream<T>) => DataStream<Row>;
}

/** `records` with a checkpoint wait and one failure at the points `failure` gives. */
export function withInjectedFailure<T>(
  records: readonly T[],
  failure: InjectedFailure,
): TestItem<T>[] {
  return [
    ...records.slice(0, failure.checkpointAfter),
    TestSource.awaitCheckpoint(),
    ...records.slice(failure.checkpointAfter, failure.failAfter),
    TestSource.fail(`induced failure after ${failure.what} ${failure.failAfter}`),
    ...records.slice(failure.failAfter),
  ];
}

/**
 * Runs `job` to its end.
 * @returns the committed changelog and how often the job restarted.
 * @throws what `execute()` throws, e.g. `JobFailedError` when a failure
 *   outlasts the restart strategy.
 */
export async function runChangelogJob<T>(
  job: ChangelogJob<T>,
): Promise<{ rows: Row[]; restarts: number }> {
  return await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(job.parallelism)
      .enableCheckpointing(30, { directory })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0));
    const items: TestItem<T>[] = job.failure === undefined
      ? [...job.records]
      : withInjectedFailure(job.records, job.failure);
    const source = env.fromSource(
      TestSource.of(items),
      WatermarkStrategy.noWatermarks(),
      job.source,
    )
      .uid(job.source).setParallelism(1);
    const sink = new CollectingSink<Row>();
    job.changelog(env, source).sinkTo(sink).uid("changelog");
    const result = await env.execute(job.name);
    return { rows: sink.committed() as Row[], restarts: result.restarts };
  });
}

/**
 * A changelog applied in order (`applyChange`): each held row's fields (as
 * JSON) with its multiplicity.
 * @throws {Error} when a row retracts what the table does not hold.
 */
export function fold(rows: readonly Row[]): Map<string, number> {
  const folded = new Map<string, number>();
  for (const row of rows) applyChange(folded, row);
  return folded;
}
