/**
 * Helpers of the breaker's regression tests (`breaker_regressions_test.ts`,
 * `breaker_resume_regressions_test.ts`): deadlines for tests of a hang,
 * catching uncaught errors, a busy consumer, temporary checkpoint
 * directories removed with retries, the completed checkpoints in one, and
 * a keyed per-key counter.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  Collector,
  KeyedProcessContext,
  KeyedProcessFunction,
  RuntimeContext,
  ValueState,
} from "../mod.ts";
import { ValueStateDescriptor } from "../mod.ts";
import { listTree } from "./_job_kit.ts";

/** A deadline passed before the promise under test settled. */
class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

/**
 * Awaits `promise`, or throws {@linkcode DeadlineExceeded} after `ms` ms.
 * @param what names the awaited operation in the error.
 */
export async function withinDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
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
export async function rejectionOf(
  promise: Promise<unknown>,
  ms: number,
  what: string,
): Promise<Error> {
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
export function captureUncaught(): { readonly errors: string[]; stop(): void } {
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
export function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* spin */ }
}

/**
 * Runs `body` with a fresh temporary directory, removed afterwards. Unlike
 * `withTempDir` of `_job_kit.ts`, removal retries for a while (a failed
 * job's cancelled subtasks may still be writing state files into it after
 * `execute()` settled) and never hides an error of `body`.
 */
export async function inTempDir<R>(body: (dir: string) => Promise<R>): Promise<R> {
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
export async function checkpointsIn(dir: string): Promise<Map<string, number[]>> {
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
export async function onlyJob(dir: string): Promise<{ jobId: string; checkpoints: number[] }> {
  const jobs = [...await checkpointsIn(dir)];
  assert.equal(jobs.length, 1, `expected one job directory in ${dir}: ${JSON.stringify(jobs)}`);
  const [jobId, checkpoints] = jobs[0]!;
  return { jobId, checkpoints };
}

/** Counts records per key in keyed state and emits `[key, count]` after each. */
export class CountPerKey implements KeyedProcessFunction<string, string, [string, number]> {
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
