/**
 * One suite, run on each transport (`data_plane_test.ts` in-process,
 * `nats_data_plane_test.ts` over NATS): a data buffer lost, duplicated or
 * reordered on its way fails the attempt, never passes unnoticed, and with a
 * restart strategy the job recovers and commits exactly once.
 *
 * The faults are made by a {@linkcode FaultyTransport} around the real one:
 * it hands every message it publishes to a {@linkcode BufferFaultPlan}, which
 * picks the `nth` data buffer published on a task subject of attempt 0 and
 *
 * | fault       | publishes                                                        | the receiver sees (buffer `n`)  |
 * | ----------- | ---------------------------------------------------------------- | ------------------------------- |
 * | `lose`      | nothing                                                          | `expected n, got n+1` (a gap)   |
 * | `duplicate` | the buffer twice                                                 | `expected n+1, got n`           |
 * | `reorder`   | nothing, then the buffer right after the next message of its channel | `expected n, got n+1`        |
 *
 * Over the in-process transport the data plane hands buffers and events
 * over as values (`Transport.publishValue`, DESIGN.md §15), not bytes: the
 * {@linkcode FaultyTransport} offers `publishValue` exactly when the
 * transport it wraps does, and the plan faults the `nth` buffer whichever
 * way it travels, so the suite covers both paths (in-process: values; NATS:
 * bytes). Each test asserts which path its faulted buffer took.
 *
 * A receiver cannot tell a reordered buffer from a lost one when the later
 * message arrives: both read as a gap, and both must fail the attempt.
 *
 * The reordered buffer's successor always comes: once the consumer has taken
 * the buffers before `n`, a producer given `c` initial credits has at least
 * `c - 2` left after sending `n` (the consumer returns credits in batches of
 * `c / 2`), and the job's input goes on well past the faulted buffer.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type JobExecutionResult,
  JobFailedError,
  RestartStrategies,
  type RestartStrategyConfig,
  StreamExecutionEnvironment,
  systemClock,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { deadline } from "../runtime/actor/async.ts";
import { decode } from "../runtime/actor/codec.ts";
import type {
  RequestOptions,
  Subscription,
  Transport,
  TransportMessage,
} from "../runtime/actor/types.ts";
import { decodeBufferFrame, isBufferFrame } from "../runtime/task/buffer_frame.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

/** How data buffers travel on a transport: in-thread values, or byte frames. */
export type BufferPath = "value" | "bytes";

/** What a {@linkcode BufferFaultPlan} does to the buffer it picks. */
export type BufferFault = "lose" | "duplicate" | "reorder";

/** The buffer a {@linkcode BufferFaultPlan} picked. */
export interface FaultedBuffer {
  /** The subject it was published on (the consumer subtask's). */
  readonly subject: string;
  /** Its channel: edge and producer subtask. */
  readonly edge: number;
  /** The producer subtask. */
  readonly src: number;
  /** Its sequence number in the channel. */
  readonly seq: number;
  /** Whether it travelled as an in-thread value (else as a byte frame). */
  readonly inThread: boolean;
}

/** What was published: bytes, or an in-thread value (`Transport.publishValue`). */
export type Published =
  | { readonly kind: "bytes"; readonly data: Uint8Array }
  | { readonly kind: "value"; readonly value: unknown };

/** Attempt 0's task subjects: `weir.<job>.0.task.<vertex>.<subtask>`. */
const ATTEMPT_0_TASK = /^weir\.[^.]+\.0\.task\./;

/**
 * Decides what to publish for each message published (performs no I/O): all
 * messages as they are, but the `nth` data buffer (0-based, counted over the
 * task subjects of attempt 0) lost, duplicated or held back until the next
 * message of its channel has gone (see the module docs).
 */
export class BufferFaultPlan {
  /** The fault made. */
  readonly fault: BufferFault;
  /** Which buffer is faulted, 0-based. */
  readonly nth: number;
  #seen = 0;
  #faulted: FaultedBuffer | undefined = undefined;
  #held: Published | undefined = undefined;

  /**
   * Makes a plan that has faulted nothing yet.
   *
   * @param fault What to do to the buffer.
   * @param nth Which data buffer, 0-based, over attempt 0's task subjects.
   */
  constructor(fault: BufferFault, nth: number) {
    this.fault = fault;
    this.nth = nth;
  }

  /** The buffer picked, once it was published. */
  get faulted(): FaultedBuffer | undefined {
    return this.#faulted;
  }

  /** Whether a reordered buffer is still held back (its successor never came). */
  get holding(): boolean {
    return this.#held !== undefined;
  }

  /**
   * What to publish on `subject`, in order, for a message published there.
   *
   * @param subject The subject published on.
   * @param published The message: bytes, or an in-thread value.
   * @returns The messages to publish now (none, one or two).
   */
  onPublish(subject: string, published: Published): Published[] {
    if (!ATTEMPT_0_TASK.test(subject)) return [published];
    const faulted = this.#faulted;
    if (faulted !== undefined) {
      const held = this.#held;
      if (held === undefined || subject !== faulted.subject) return [published];
      const channel = channelOf(published);
      if (channel?.edge !== faulted.edge || channel.src !== faulted.src) return [published];
      this.#held = undefined;
      return [published, held];
    }
    const buffer = bufferOf(published);
    if (buffer === undefined || this.#seen++ !== this.nth) return [published];
    const { edge, src, seq } = buffer;
    this.#faulted = { subject, edge, src, seq, inThread: published.kind === "value" };
    // The producer may reuse its byte buffer; an in-thread value is never changed.
    const copy: Published = published.kind === "bytes"
      ? { kind: "bytes", data: published.data.slice() }
      : published;
    switch (this.fault) {
      case "lose":
        return [];
      case "duplicate":
        return [published, copy];
      case "reorder":
        this.#held = copy;
        return [];
    }
  }
}

/** The channel of a data buffer (bytes or in-thread value), else `undefined`. */
function bufferOf(published: Published): { edge: number; src: number; seq: number } | undefined {
  if (published.kind === "bytes") {
    return isBufferFrame(published.data) ? decodeBufferFrame(published.data) : undefined;
  }
  const { t, edge, src, seq } = published.value as Record<string, unknown>;
  if (t !== "buf" || typeof edge !== "number" || typeof src !== "number") return undefined;
  if (typeof seq !== "number") return undefined;
  return { edge, src, seq };
}

/** The channel (edge, producer) of a data buffer or channel event, else `undefined`. */
function channelOf(published: Published): { edge: number; src: number } | undefined {
  const buffer = bufferOf(published);
  if (buffer !== undefined) return buffer;
  const message = published.kind === "bytes" ? decode(published.data) : published.value;
  if (typeof message !== "object" || message === null) return undefined;
  const { t, edge, src } = message as { t?: unknown; edge?: unknown; src?: unknown };
  if (t !== "evt" || typeof edge !== "number" || typeof src !== "number") return undefined;
  return { edge, src };
}

/** A {@linkcode Transport} that publishes through a {@linkcode BufferFaultPlan}. */
export class FaultyTransport implements Transport {
  readonly #inner: Transport;
  readonly #plan: BufferFaultPlan;

  /**
   * Wraps `inner`.
   *
   * @param inner The transport that does the work.
   * @param plan Decides what is published.
   */
  constructor(inner: Transport, plan: BufferFaultPlan) {
    this.#inner = inner;
    this.#plan = plan;
    if (inner.publishValue !== undefined) {
      // Offered only when the inner transport offers it: the data plane
      // picks the in-thread path by its presence.
      this.publishValue = (subject, value) => {
        for (const out of plan.onPublish(subject, { kind: "value", value })) {
          this.#send(subject, out);
        }
        return true; // even when the plan dropped or held it: the fault is the transport's
      };
    }
  }

  /** Hands a value over through the plan; present only when the inner transport has it. */
  readonly publishValue?: (subject: string, value: unknown) => boolean;

  #send(subject: string, out: Published, options?: { reply?: string }): void {
    if (out.kind === "bytes") this.#inner.publish(subject, out.data, options);
    else if (!this.#inner.publishValue!(subject, out.value)) {
      throw new Error(
        `FaultyTransport wraps a transport that refused a value on '${subject}': it supports ` +
          `transports that deliver every subject in-thread (in-process) or none (NATS)`,
      );
    }
  }

  /** The inner transport's limit, in bytes. */
  get maxPayload(): number {
    return this.#inner.maxPayload;
  }

  /** Publishes what the plan says, in order, on the inner transport. */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void {
    for (const out of this.#plan.onPublish(subject, { kind: "bytes", data })) {
      this.#send(subject, out, options);
    }
  }

  /** Subscribes on the inner transport. */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription {
    return this.#inner.subscribe(subject, handler);
  }

  /** Requests on the inner transport (requests are never faulted). */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage> {
    return this.#inner.request(subject, data, options);
  }

  /** Flushes the inner transport. */
  flush(): Promise<void> {
    return this.#inner.flush();
  }

  /** Closes the inner transport. */
  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** Makes the transports of one run; see the `transports` option of `executeLocally`. */
export type TransportFactory = () => Transport | Promise<Transport>;

/** The fault as a participle, for messages: "a lost buffer". */
const PARTICIPLE: Record<BufferFault, string> = {
  lose: "lost",
  duplicate: "duplicated",
  reorder: "reordered",
};

/** How long one run of the keyed job may take before the test fails, in ms. */
const RUN_TIMEOUT_MS = 60_000;

/** The keyed job of `_job_kit.ts`: sources 2, keyed sums 2, sink 2. */
const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 4,
  recordsPerKey: 250,
  awaitCheckpointEvery: 300,
};

/** Runs the keyed job on the transports of `network`, wrapped to apply `plan`. */
async function runKeyedJob(
  network: TransportFactory,
  plan: BufferFaultPlan,
  restartStrategy: RestartStrategyConfig,
): Promise<{ result: JobExecutionResult; committed: SumRecord[] }> {
  return await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    const sink = new CollectingSink<SumRecord>();
    env.fromSource(
      TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(SPLITS.splits)
      .keyBy((r) => r.key)
      .process(new SequenceCheck()).uid("sums").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const run = executeLocally(env.getJobGraph(`${plan.fault} buffer`), {
      checkpointing: {
        intervalMs: 10,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      checkpointDirectory: dir,
      restartStrategy,
      taskConfig: {
        bufferSize: 16,
        bufferTimeoutMs: 10,
        initialCredits: 4,
        autoWatermarkIntervalMs: 200,
        checkpointingMode: "exactly-once",
      },
      clock: systemClock,
      transports: async () => new FaultyTransport(await network(), plan),
    });
    const result = await deadline(
      run,
      RUN_TIMEOUT_MS,
      `the job with a ${PARTICIPLE[plan.fault]} buffer`,
    );
    return { result, committed: sink.committed() };
  });
}

/** Runs `body` while collecting what Weir logs (it logs on `console.error`). */
async function capturingLog<R>(body: () => Promise<R>): Promise<{ value: R; log: string }> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => {
    lines.push(args.map(String).join(" "));
  };
  try {
    return { value: await body(), log: lines.join("\n") };
  } finally {
    console.error = original;
  }
}

/** The messages of `error` and of its `cause` chain, one per line. */
function messages(error: unknown): string {
  const parts: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) parts.push(`${e.name}: ${e.message}`);
  return parts.join("\n");
}

/** What the receiver reports for buffer `seq` under `fault` (see the module docs). */
function expectedError(fault: BufferFault, seq: number): string {
  return fault === "duplicate"
    ? `expected ${seq + 1}, got ${seq} (duplicate or reordered message)`
    : `expected ${seq}, got ${seq + 1} (gap: messages were lost)`;
}

/** The faulted buffer, asserting the plan made its fault on a buffer that travelled as `path`. */
function assertFaulted(plan: BufferFaultPlan, path: BufferPath): FaultedBuffer {
  const faulted = plan.faulted;
  assert.ok(faulted !== undefined, `no data buffer was ${PARTICIPLE[plan.fault]}`);
  assert.equal(
    faulted.inThread ? "value" : "bytes",
    path,
    `buffer ${faulted.seq} on ${faulted.subject} travelled the wrong way`,
  );
  if (plan.fault === "reorder") {
    assert.equal(plan.holding, false, `buffer ${faulted.seq} was held back but never sent`);
  }
  return faulted;
}

/**
 * Registers the suite's tests (`Deno.test`, named "<name>: a lost data
 * buffer ...") for one transport.
 *
 * @param name The transport's name in test names, e.g. `"in-process"`.
 * @param network Called once per run of the job: returns the factory of that
 * run's transports (called for the coordinator and the worker; both must
 * reach each other, e.g. connections to one bus or server).
 * @param path How buffers travel on that transport: `"value"` (in-thread,
 * unencoded) or `"bytes"`; each test asserts its faulted buffer went so.
 */
export function channelFaultSuite(
  name: string,
  network: () => TransportFactory,
  path: BufferPath,
): void {
  for (const fault of ["lose", "duplicate", "reorder"] as const) {
    const what = `a ${PARTICIPLE[fault]} data buffer`;
    Deno.test(`${name}: ${what} fails the job naming the sequence error when restarts are off`, async () => {
      const plan = new BufferFaultPlan(fault, 3);
      let failure: unknown;
      try {
        await capturingLog(() => runKeyedJob(network(), plan, RestartStrategies.noRestart()));
      } catch (error) {
        failure = error;
      }
      const { seq, subject } = assertFaulted(plan, path);
      assert.ok(failure instanceof JobFailedError, `execute did not reject: ${failure}`);
      const text = messages(failure);
      assert.match(text, /ChannelSequenceError/, text);
      assert.ok(
        text.includes(expectedError(fault, seq)),
        `buffer ${seq} ${PARTICIPLE[fault]} on ${subject}: ${text}`,
      );
    });

    Deno.test(`${name}: ${what} fails the attempt and the restarted job commits exactly once`, async () => {
      const plan = new BufferFaultPlan(fault, 30);
      const { value: run, log } = await capturingLog(() =>
        runKeyedJob(network(), plan, RestartStrategies.fixedDelay(2, 0))
      );
      const { seq, subject } = assertFaulted(plan, path);
      assert.equal(
        run.result.restarts,
        1,
        `the job restarted ${run.result.restarts} times, not once: ${run.result.summary}`,
      );
      assert.match(
        log,
        /attempt 0 failed: TaskFailedError: [\s\S]*caused by ChannelSequenceError/,
        log,
      );
      assert.ok(log.includes(expectedError(fault, seq)), log);
      assertSameOutput(
        run.committed,
        [...expectedSums(SPLITS).values()].flat(),
        `after buffer ${seq} was ${PARTICIPLE[fault]} on ${subject}`,
      );
    });
  }
}
