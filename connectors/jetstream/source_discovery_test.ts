/**
 * Subject discovery of `JetStreamSource` in running jobs (local mode, the
 * shared NATS server, a unique stream per test, deleted afterwards): a
 * subject first published to while the job runs is read from its first
 * message; a failure after a checkpoint that holds the discovered split
 * neither loses nor repeats its records; a resume at another parallelism
 * (1→3, 3→1) reads every subject, discovered before or after, exactly once.
 *
 * Records are `{ s, n }` published to `<stream>.<s>` with `n` = 1, 2, …;
 * the exactly-once `CollectingSink` must hold, per subject, exactly
 * 1 … N in order. An unbounded job has no end of its own: once the sink
 * holds everything expected, a completed checkpoint's notification ends it
 * with a `SuppressRestartsError` (`JobDone`), and the test expects that.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointedFunction,
  type CheckpointListener,
  type FunctionInitializationContext,
  type FunctionSnapshotContext,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
} from "../../mod.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { CollectingSink } from "../../testing.ts";
import {
  assertExactlyOnce,
  bySubject,
  discoveryJob,
  firstN,
  holds,
  JobDone,
  runUntilDone,
  type SubjectRecord,
} from "../../tests/_discovery_kit.ts";
import { withTempDir } from "../../tests/_job_kit.ts";
import { waitUntil } from "../../tests/_wait.ts";
import { CONNECTION, publishJson, type TestJetStream, withJetStream } from "./_test_kit.ts";

type Rec = SubjectRecord;

/** What the probes of one job share with the test (the function object is copied per subtask). */
interface Shared {
  /** Records of `watched` that passed a probe, by checkpoint snapshotted after them. */
  readonly watched: string;
  /** The id of the first completed checkpoint that covered a record of `watched`, if any. */
  coveredAt: number | undefined;
  /** What the probes did, for assertion messages. */
  readonly log: string[];
  /** On attempt 0, throw at the first record of `watched` after `coveredAt`. */
  readonly failAfterCover: boolean;
  /** Throw a `SuppressRestartsError` when a checkpoint covering `watched` completes (phase 1 of a resume). */
  readonly stopAtCover: boolean;
  /** True when the sink holds everything: the next completed checkpoint ends the job. */
  done: () => boolean;
  /** Set when the test gives up waiting: the next completed checkpoint ends the job. */
  gaveUp?: string;
}

/**
 * An identity map that watches one subject's records through checkpoints
 * and injects the failures `Shared` asks for.
 */
class Probe implements CheckpointedFunction, CheckpointListener {
  readonly shared: Shared;
  private attempt = 0;
  private seen = 0;
  private seenAt = new Map<number, number>();
  constructor(shared: Shared) {
    this.shared = shared;
  }
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
    this.seenAt = new Map();
  }
  initializeState(_context: FunctionInitializationContext): void {}
  snapshotState(context: FunctionSnapshotContext): void {
    this.seenAt.set(context.checkpointId, this.seen);
  }
  notifyCheckpointComplete(checkpointId: number): void {
    const shared = this.shared;
    if ((this.seenAt.get(checkpointId) ?? 0) > 0 && shared.coveredAt === undefined) {
      shared.coveredAt = checkpointId;
      shared.log.push(
        `checkpoint ${checkpointId} covers ${this.seenAt.get(checkpointId)} of ${shared.watched}`,
      );
      if (shared.stopAtCover) {
        throw new SuppressRestartsError(`stop after checkpoint ${checkpointId}`);
      }
    }
    if (shared.done()) throw new JobDone();
    if (shared.gaveUp !== undefined) throw new SuppressRestartsError(shared.gaveUp);
  }
  map(r: Rec): Rec {
    if (r.s !== this.shared.watched) return r;
    this.seen++;
    const shared = this.shared;
    if (
      shared.failAfterCover && this.attempt === 0 && shared.coveredAt !== undefined &&
      !shared.log.some((l) => l.startsWith("induced"))
    ) {
      shared.log.push(`induced failure at ${r.s}#${r.n}`);
      throw new Error(`induced failure at ${r.s}#${r.n}`);
    }
    return r;
  }
}

/** `{ s, n }` for n = from … to. */
function range(s: string, from: number, to: number): Rec[] {
  return Array.from({ length: to - from + 1 }, (_, i) => ({ s, n: from + i }));
}

async function publish(t: TestJetStream, s: string, from: number, to: number): Promise<void> {
  await publishJson(t.js, `${t.stream}.${s}`, range(s, from, to));
}

function counts(sink: CollectingSink<Rec>): string {
  return JSON.stringify(
    Object.fromEntries([...bySubject(sink.committed())].map(([s, ns]) => [s, ns.length])),
  );
}

function build(options: {
  t: TestJetStream;
  directory: string;
  sink: CollectingSink<Rec>;
  shared: Shared;
  parallelism: number;
  restarts: number;
}): StreamExecutionEnvironment {
  return discoveryJob({
    connection: CONNECTION,
    stream: options.t.stream,
    bucket: options.t.bucket,
    directory: options.directory,
    checkpointIntervalMs: 50,
    restartStrategy: options.restarts === 0
      ? RestartStrategies.noRestart()
      : RestartStrategies.fixedDelay(options.restarts, 0),
    parallelism: options.parallelism,
    discoveryIntervalMs: 50,
    batchSize: 16,
    probe: new Probe(options.shared),
    sink: options.sink,
  });
}

const WAIT = { timeoutMs: 60_000 };

Deno.test("a subject first published to mid-run is discovered, read from its first message, and exactly once through a failure after a checkpoint that holds it", async () => {
  await withJetStream(async (t) => {
    await withTempDir(async (directory) => {
      await publish(t, "a", 1, 100);
      const sink = new CollectingSink<Rec>();
      const expected = { a: 150, b: 150, c: 60 };
      let all = false;
      const shared: Shared = {
        watched: "b",
        coveredAt: undefined,
        log: [],
        failAfterCover: true,
        stopAtCover: false,
        done: () => all && holds(sink, firstN(expected)),
      };
      const env = build({ t, directory, sink, shared, parallelism: 2, restarts: 3 });
      const run = env.execute("subject discovery");
      const state = () => `committed ${counts(sink)}; ${shared.log.join("; ")}`;
      await waitUntil(() => holds(sink, firstN({ a: 1 })), { ...WAIT, missing: state });

      await publish(t, "b", 1, 50); // a new subject, after the job's first start
      await waitUntil(() => shared.coveredAt !== undefined, { ...WAIT, missing: state });
      await publish(t, "b", 51, 150); // the first of these fails attempt 0
      await waitUntil(() => shared.log.some((l) => l.startsWith("induced")), {
        ...WAIT,
        missing: state,
      });
      await publish(t, "c", 1, 60); // discovered by the restarted attempt
      await publish(t, "a", 101, 150);
      all = true;

      const error = await runUntilDone(run, shared, { ...WAIT, missing: state });
      const context = `${state()}; ${error.message.split("\n")[0]}`;
      assert.match(error.message, /JobDone/, context);
      assert.equal(shared.log.filter((l) => l.startsWith("induced")).length, 1, context);
      assertExactlyOnce(sink, firstN(expected), context);
    });
  });
});

for (const [from, to] of [[1, 3], [3, 1]] as const) {
  Deno.test(`a job resumed from ${from} to ${to} subtasks reads discovered subjects exactly once, and discovers new ones`, async () => {
    await withJetStream(async (t) => {
      await withTempDir(async (directory) => {
        await publish(t, "a", 1, 100);
        const sink = new CollectingSink<Rec>();
        const first: Shared = {
          watched: "b",
          coveredAt: undefined,
          log: [],
          failAfterCover: false,
          stopAtCover: true,
          done: () => false,
        };
        const state = (s: Shared) => () => `committed ${counts(sink)}; ${s.log.join("; ")}`;
        const run1 = build({ t, directory, sink, shared: first, parallelism: from, restarts: 0 })
          .execute("discovery before a resume");
        await waitUntil(() => holds(sink, firstN({ a: 1 })), { ...WAIT, missing: state(first) });
        await publish(t, "b", 1, 80); // discovered by the first run
        await publish(t, "d", 1, 40); // discovered by the first run, maybe covered by no checkpoint
        const failed = await runUntilDone(run1, first, { ...WAIT, missing: state(first) });
        assert.match(failed.message, /stop after checkpoint/, state(first)());
        const match = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(
          failed.message,
        );
        assert.ok(match, `the error says how to resume: ${failed.message}`);

        const expected = { a: 150, b: 120, c: 50, d: 40 };
        let all = false;
        const second: Shared = {
          watched: "c",
          coveredAt: undefined,
          log: [],
          failAfterCover: false,
          stopAtCover: false,
          done: () => all && holds(sink, firstN(expected)),
        };
        const env = build({ t, directory, sink, shared: second, parallelism: to, restarts: 3 });
        env.resumeFrom({ jobId: match[1]!, checkpointId: Number(match[2]) });
        const run2 = env.execute("discovery after a resume");
        await publish(t, "b", 81, 120);
        await publish(t, "c", 1, 50); // a subject that first appears after the resume
        await publish(t, "a", 101, 150);
        all = true;
        const error = await runUntilDone(run2, second, { ...WAIT, missing: state(second) });
        const context = `${from}→${to}: ${state(second)()}; ${error.message.split("\n")[0]}`;
        assert.match(error.message, /JobDone/, context);
        assertExactlyOnce(sink, firstN(expected), context);
      });
    });
  });
}
