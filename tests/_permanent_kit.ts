/**
 * Test helpers for "a deterministic setup error ends the job once": run a
 * job with the *default* restart strategy (fixed delay, unlimited, with
 * checkpointing on) and assert it failed at attempt 0 with a
 * `SuppressRestartsError` in its cause chain and a message naming the
 * thing that was wrong.
 *
 * Without a bound such a test would hang before the fix (the job restarts
 * forever), so {@linkcode guardRestarts} wraps the job's sink: a writer
 * created at attempt 1 or later fails the job without restarts, with a
 * message saying the first failure was treated as transient. The test then
 * fails on its assertions, not on a timeout.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Sink } from "../runtime/api/sink.ts";
import type { SinkV2 } from "../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../runtime/failure.ts";
import { JobFailedError, type StreamExecutionEnvironment } from "../mod.ts";

/** The marker in the guard's message. */
export const RESTARTED_MARKER = "the job restarted: its first failure was treated as transient";

/**
 * Wraps a SinkV2 so that its writer, created at any attempt above 0, fails
 * the job without restarts (see the module docs).
 * @param sink the sink under test (a SinkV2).
 * @returns the same sink, guarded.
 * @throws {TypeError} for a sink that is not a SinkV2.
 */
// deno-lint-ignore no-explicit-any
export function guardRestarts<T>(sink: Sink<T>): SinkV2<T, any, any> {
  if (sink.kind !== "v2") {
    throw new TypeError(`guardRestarts: sink must be a SinkV2: current kind is ${sink.kind}`);
  }
  // Methods bound one by one: a sink may be a class whose methods live on its prototype.
  return {
    kind: "v2",
    deliveryGuarantee: sink.deliveryGuarantee,
    ...(sink.commitsOnlyAtCheckpoints === undefined
      ? {}
      : { commitsOnlyAtCheckpoints: sink.commitsOnlyAtCheckpoints }),
    ...(sink.createCommitter === undefined
      ? {}
      : { createCommitter: sink.createCommitter.bind(sink) }),
    ...(sink.checkCommittable === undefined
      ? {}
      : { checkCommittable: sink.checkCommittable.bind(sink) }),
    ...(sink.checkWriterState === undefined
      ? {}
      : { checkWriterState: sink.checkWriterState.bind(sink) }),
    createWriter(context) {
      if (context.attempt > 0) {
        throw new SuppressRestartsError(`${RESTARTED_MARKER} (attempt ${context.attempt})`);
      }
      return sink.createWriter(context);
    },
  };
}

/** A SinkV2 that drops every record (for jobs whose failure is elsewhere), guarded. */
// deno-lint-ignore no-explicit-any
export function discardingGuard<T>(): SinkV2<T, any, any> {
  return guardRestarts<T>({
    kind: "v2",
    deliveryGuarantee: "at-least-once",
    createWriter: () => ({ write() {}, flush() {}, close() {} }),
  });
}

/** The error and its causes, outermost first. */
export function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e: unknown = error; e !== undefined && chain.length < 20;) {
    chain.push(e);
    e = e instanceof Error ? e.cause : undefined;
  }
  return chain;
}

/**
 * Executes `env` and asserts the job failed once: a `JobFailedError`, a
 * `SuppressRestartsError` in its cause chain, the failure at attempt 0
 * (no restart ran), and every one of `parts` in the message of the chain.
 * @param env the job (built with the default restart strategy and a guarded sink).
 * @param jobName its name.
 * @param parts what the message must name (table, column, path, subject …).
 * @returns the whole chain's text, for further assertions.
 * @throws {AssertionError} naming what was missing, with the chain's text.
 */
export async function assertFailsOnce(
  env: StreamExecutionEnvironment,
  jobName: string,
  parts: readonly string[],
): Promise<string> {
  let outcome: unknown;
  try {
    const result = await env.execute(jobName);
    assert.fail(`${jobName}: the job finished instead of failing: ${result.summary}`);
  } catch (e) {
    outcome = e;
  }
  const chain = causeChain(outcome);
  const text = chain.map((e) => e instanceof Error ? `${e.name}: ${e.message}` : String(e))
    .join("\n  caused by ");
  assert.ok(outcome instanceof JobFailedError, `${jobName}: not a JobFailedError: ${text}`);
  assert.ok(!text.includes(RESTARTED_MARKER), `${jobName}: restarted: ${text}`);
  assert.ok(
    chain.some((e) => e instanceof SuppressRestartsError),
    `${jobName}: no SuppressRestartsError in: ${text}`,
  );
  assert.ok(text.includes("attempt 0"), `${jobName}: not failed at attempt 0: ${text}`);
  for (const part of parts) {
    assert.ok(text.includes(part), `${jobName}: "${part}" not named in: ${text}`);
  }
  return text;
}
