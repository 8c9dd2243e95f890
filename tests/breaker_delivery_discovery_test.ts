/**
 * JetStream subject discovery, attacked by the breaker of issue 9 (local
 * mode): hundreds of subjects appearing at once while a failure restores the
 * job, a subject purged after it was read and then published to again, and
 * a NATS server restart while subjects appear. Records are `{ s, n }`
 * published to `<stream>.<s>` with `n` = 1, 2, …; the exactly-once
 * `CollectingSink` must hold, per subject, exactly the expected `n`s in
 * order. An unbounded job has no end of its own: once the sink holds
 * everything expected, a completed checkpoint's notification ends it with a
 * `SuppressRestartsError` (`JobDone`), and the test expects that.
 *
 * The tests on the shared NATS server use a unique stream each, deleted
 * afterwards; the NATS restart test runs a private server and stops it.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointListener,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
} from "../mod.ts";
import { SuppressRestartsError } from "../runtime/failure.ts";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { CollectingSink } from "../testing.ts";
import {
  assertExactlyOnce,
  bySubject,
  discoveryJob,
  holds,
  JobDone,
  runUntilDone,
  type SubjectRecord,
} from "./_discovery_kit.ts";
import { withTempDir } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";
import { startNatsServer } from "./_nats_server.ts";
import { CONNECTION, uniqueName, withJetStream } from "../connectors/jetstream/_test_kit.ts";

type Rec = SubjectRecord;

/** What the probe (copied per subtask, sharing this object) and the test share. */
interface Shared {
  /** When set, attempt 0 throws at the next record it maps (once). */
  failNext: boolean;
  /** What happened, for messages. */
  readonly log: string[];
  /** True when the sink holds everything: the next completed checkpoint ends the job. */
  done: () => boolean;
  /** Set when the test gives up waiting: the next completed checkpoint ends the job. */
  gaveUp?: string;
}

/** An identity map that fails attempt 0 once on request and ends the job when done. */
class Probe implements CheckpointListener {
  readonly shared: Shared;
  private attempt = 0;
  constructor(shared: Shared) {
    this.shared = shared;
  }
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  notifyCheckpointComplete(checkpointId: number): void {
    if (this.shared.done()) throw new JobDone();
    if (this.shared.gaveUp !== undefined) {
      throw new SuppressRestartsError(`${this.shared.gaveUp} (checkpoint ${checkpointId})`);
    }
  }
  map(r: Rec): Rec {
    const shared = this.shared;
    if (shared.failNext && this.attempt === 0) {
      shared.failNext = false;
      shared.log.push(`induced failure at ${r.s}#${r.n}`);
      throw new Error(`induced failure at ${r.s}#${r.n}`);
    }
    return r;
  }
}

function counts(sink: CollectingSink<Rec>, expected: ReadonlyMap<string, number[]>): string {
  const got = bySubject(sink.committed());
  const short = [...expected].filter(([s, ns]) => (got.get(s)?.length ?? 0) < ns.length);
  return `${sink.committed().length} records committed; ${short.length} subject(s) short, e.g. ${
    short.slice(0, 5).map(([s, ns]) => `${s} ${got.get(s)?.length ?? 0}/${ns.length}`).join(", ")
  }`;
}

/** Publishes `{ s, n }` for n = from … to to `<stream>.<s>`; records them in `expected`. */
async function publish(
  js: jetstreamApi.JetStreamClient,
  stream: string,
  expected: Map<string, number[]>,
  s: string,
  from: number,
  to: number,
): Promise<void> {
  const enc = new TextEncoder();
  const acks = [];
  const ns = expected.get(s) ?? expected.set(s, []).get(s)!;
  for (let n = from; n <= to; n++) {
    acks.push(js.publish(`${stream}.${s}`, enc.encode(JSON.stringify({ s, n }))));
    ns.push(n);
  }
  await Promise.all(acks);
}

function build(options: {
  connection: NatsConnectionOptions;
  stream: string;
  bucket: string;
  directory: string;
  sink: CollectingSink<Rec>;
  shared: Shared;
  parallelism: number;
  restarts: number;
}): StreamExecutionEnvironment {
  return discoveryJob({
    ...options,
    checkpointIntervalMs: 100,
    restartStrategy: RestartStrategies.fixedDelay(options.restarts, 200),
    discoveryIntervalMs: 100,
    batchSize: 64,
    probe: new Probe(options.shared),
  });
}

const WAIT = { timeoutMs: 90_000 };

/**
 * Starts one scenario's job (see `build`) into a fresh exactly-once sink,
 * its probe ending it once the sink holds `expected` (as published so far
 * when `finish` is called). `waitFor` waits for a condition (90 s at most)
 * saying what the sink holds; `finish` waits for the job to end with
 * `JobDone`, checks every subject exactly once and returns the context
 * string for further assertions.
 */
function startScenario(options: {
  connection: NatsConnectionOptions;
  stream: string;
  bucket: string;
  directory: string;
  parallelism: number;
  restarts: number;
  jobName: string;
  expected: ReadonlyMap<string, number[]>;
}) {
  const { expected } = options;
  const sink = new CollectingSink<Rec>();
  let all = false;
  const shared: Shared = {
    failNext: false,
    log: [],
    done: () => all && holds(sink, expected),
  };
  const state = () => `${counts(sink, expected)}; ${shared.log.join("; ")}`;
  const run = build({ ...options, sink, shared }).execute(options.jobName);
  return {
    sink,
    shared,
    waitFor: (condition: () => boolean) => waitUntil(condition, { ...WAIT, missing: state }),
    finish: async (): Promise<string> => {
      all = true;
      const error = await runUntilDone(run, shared, { ...WAIT, missing: state });
      const context = `${state()}; ${error.message.split("\n")[0]}`;
      assert.match(error.message, /JobDone/, context);
      assertExactlyOnce(sink, expected, context);
      return context;
    },
  };
}

Deno.test({
  name:
    "breaker: 300 subjects appearing at once while a failure restores the job are each read exactly once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withJetStream(async (t) => {
      await withTempDir(async (directory) => {
        const expected = new Map<string, number[]>();
        await publish(t.js, t.stream, expected, "a", 1, 50);
        const { sink, shared, waitFor, finish } = startScenario({
          connection: CONNECTION,
          stream: t.stream,
          bucket: t.bucket,
          directory,
          parallelism: 3,
          restarts: 3,
          jobName: "breaker many subjects",
          expected,
        });
        await waitFor(() => holds(sink, new Map([["a", [1]]])));
        const many = Array.from({ length: 300 }, (_, i) => `m${String(i).padStart(3, "0")}`);
        await Promise.all(many.map((s) => publish(t.js, t.stream, expected, s, 1, 3)));
        // Fail once some of them are committed (a checkpoint covered them), not all.
        const firstBatch = new Map(many.slice(0, 1).map((s) => [s, [1]]));
        await waitFor(() => holds(sink, firstBatch) || sink.committed().length > 60);
        shared.failNext = true;
        await Promise.all(many.map((s) => publish(t.js, t.stream, expected, s, 4, 5)));
        await publish(t.js, t.stream, expected, "a", 51, 80);
        const context = await finish();
        assert.equal(shared.log.filter((l) => l.startsWith("induced")).length, 1, context);
      });
    });
  },
});

Deno.test({
  name:
    "breaker: a subject purged after it was read and then published to again is read on, exactly once",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withJetStream(async (t) => {
      await withTempDir(async (directory) => {
        const expected = new Map<string, number[]>();
        await publish(t.js, t.stream, expected, "a", 1, 40);
        const { sink, shared, waitFor, finish } = startScenario({
          connection: CONNECTION,
          stream: t.stream,
          bucket: t.bucket,
          directory,
          parallelism: 2,
          restarts: 3,
          jobName: "breaker purged subject",
          expected,
        });
        await waitFor(() => holds(sink, new Map([["a", [1]]])));
        await publish(t.js, t.stream, expected, "p", 1, 30);
        await waitFor(() => holds(sink, new Map([["p", expected.get("p")!]])));
        const jsm = await jetstreamApi.jetstreamManager(t.nc);
        await jsm.streams.purge(t.stream, { filter: `${t.stream}.p` });
        // The subject is gone from the stream's subjects: a discovery no longer lists it.
        await publish(t.js, t.stream, expected, "a", 41, 60);
        shared.failNext = true; // the restore holds the split of p, read to its purged end
        await waitFor(() => shared.log.length > 0);
        await publish(t.js, t.stream, expected, "p", 31, 50);
        await publish(t.js, t.stream, expected, "a", 61, 70);
        await finish();
      });
    });
  },
});

Deno.test({
  name:
    "breaker: subjects that appear while the NATS server restarts are read exactly once after the job recovers",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nats = await startNatsServer({ jetstream: true });
    try {
      await withTempDir(async (directory) => {
        const connection = { servers: nats.url, name: "weir-breaker" };
        const stream = uniqueName("brk-disc");
        const setup = async () => {
          const nc = await connectNats(connection);
          return { nc, js: jetstreamApi.jetstream(nc) };
        };
        let { nc, js } = await setup();
        await (await jetstreamApi.jetstreamManager(nc)).streams.add({
          name: stream,
          subjects: [`${stream}.>`],
        });
        const expected = new Map<string, number[]>();
        await publish(js, stream, expected, "a", 1, 40);
        const { sink, waitFor, finish } = startScenario({
          connection,
          stream,
          bucket: uniqueName("brk-disc-txn"),
          directory,
          parallelism: 2,
          restarts: 50,
          jobName: "breaker discovery through a NATS restart",
          expected,
        });
        await waitFor(() => holds(sink, new Map([["a", expected.get("a")!]])));
        await publish(js, stream, expected, "b", 1, 20);
        await nc.close();
        await nats.restart();
        ({ nc, js } = await setup());
        await publish(js, stream, expected, "c", 1, 20);
        await publish(js, stream, expected, "b", 21, 30);
        await publish(js, stream, expected, "a", 41, 50);
        await finish();
        await nc.close();
      });
    } finally {
      await nats.stop();
    }
  },
});
