/**
 * The job of the resume tests (`resume_test.ts`, `inline_state_test.ts`,
 * `incremental_retention_test.ts`): numbered records `[key, n]` for
 * n = 1..count, keys taken in turn, read by one `TestSource` subtask
 * (uid `numbers`), passed through a mapper that can fail once
 * ({@linkcode FailAt}), summed per key (`reduce`, uid `sums` unless given)
 * and committed by a `CollectingSink` (uid `committed`); and what its
 * failure-free output is, key by key. Test code only.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  type RuntimeContext,
  type StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { type CollectingSink, type TestItem, TestSource } from "../testing.ts";

/** A record of the job: its key and its number n (1-based). */
export type Numbered = [string, number];

/**
 * `[key, n]` for n = 1..`count`, the key `keys[n % keys.length]`; after
 * record n, the control item `after(n)` returns, if any (e.g.
 * `TestSource.awaitCheckpoint()` or a pause).
 */
export function numbered(
  keys: readonly string[],
  count: number,
  after: (n: number) => TestItem<Numbered> | undefined = () => undefined,
): TestItem<Numbered>[] {
  const list: TestItem<Numbered>[] = [];
  for (let n = 1; n <= count; n++) {
    list.push([keys[n % keys.length]!, n]);
    const extra = after(n);
    if (extra !== undefined) list.push(extra);
  }
  return list;
}

/** A map function that throws at record `failAt` on attempt 0 only (0: never). */
export class FailAt {
  /** The number n of the record that fails attempt 0. */
  readonly failAt: number;
  private attempt = 0;
  /** Fails at record `failAt` (0: never). */
  constructor(failAt: number) {
    this.failAt = failAt;
  }
  /** Notes the subtask's attempt. */
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  /**
   * Passes `r` on.
   * @throws {Error} `induced failure at <n>` for record `failAt` on attempt 0.
   */
  map(r: Numbered): Numbered {
    if (r[1] === this.failAt && this.attempt === 0) throw new Error(`induced failure at ${r[1]}`);
    return r;
  }
}

/** The pipeline {@linkcode addRunningSums} adds. */
export interface RunningSumsOptions {
  /** The source's items (records and control items). */
  readonly items: readonly TestItem<Numbered>[];
  /** Records the source emits per batch. */
  readonly batchSize: number;
  /** The record that fails attempt 0 (0: none). */
  readonly failAt: number;
  /** The sums' uid; default `sums`. */
  readonly sumsUid?: string;
  /** Where the running sums go. */
  readonly sink: CollectingSink<Numbered>;
}

/** Adds the source → FailAt → keyed running sum → sink pipeline to `env`. */
export function addRunningSums(env: StreamExecutionEnvironment, options: RunningSumsOptions): void {
  env.fromSource(
    TestSource.of<Numbered>([...options.items], { batchSize: options.batchSize }),
    WatermarkStrategy.noWatermarks(),
    "numbers",
  )
    .uid("numbers").setParallelism(1)
    .map(new FailAt(options.failAt)).setParallelism(1)
    .keyBy((r) => r[0])
    .reduce((acc, r) => [r[0], acc[1] + r[1]]).uid(options.sumsUid ?? "sums")
    .sinkTo(options.sink).uid("committed");
}

/** The failure-free running sums of {@linkcode numbered}`(keys, count)`, per key, in order. */
export function expectedRunningSums(keys: readonly string[], count: number): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const sums = new Map<string, number>();
  for (let n = 1; n <= count; n++) {
    const key = keys[n % keys.length]!;
    const sum = (sums.get(key) ?? 0) + n;
    sums.set(key, sum);
    (out.get(key) ?? out.set(key, []).get(key)!).push(sum);
  }
  return out;
}

/** The sums of `records`, per key, in order. */
export function byKey(records: readonly Numbered[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [key, sum] of records) (out.get(key) ?? out.set(key, []).get(key)!).push(sum);
  return out;
}

/**
 * The checkpoint a job that failed for good names in its error, as
 * `resumeFrom({ jobId: "…", checkpointId: n })`.
 * @throws {AssertionError} unless `error` is a `JobFailedError` whose
 *   message says how to resume.
 */
export function resumeHint(error: unknown): { jobId: string; checkpointId: number } {
  assert.ok(error instanceof JobFailedError, String(error));
  const match = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(error.message);
  assert.ok(match, `the error says how to resume: ${error.message}`);
  return { jobId: match[1]!, checkpointId: Number(match[2]) };
}
