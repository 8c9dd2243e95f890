/**
 * The job of `bench/cluster_recovery.ts`: keyed state of a chosen size, a
 * steady trickle of output through the transactional `JetStreamSink`, and
 * timestamps of the moments of a recovery that only the subtasks can see.
 *
 *     deno run -A bench/jobs/recovery_job.ts --nats nats://127.0.0.1:4222 \
 *       --stream S --txn-bucket B [--keys 100000] [--value-bytes 100] [--rate 200] \
 *       [--checkpoint-ms 1000] [--parallelism 2] [--restart-delay-ms 0] [--incremental]
 *
 * ## Dataflow
 *
 * A {@linkcode BuildThenTrickleSource} emits the integers 0, 1, 2, ... in
 * interleaved splits: the first `--keys` numbers as fast as the job takes
 * them (the *build* phase), then `--rate` numbers per second in all (the
 * *trickle*). `keyBy(i % keys)` sends them to {@linkcode StateBuilder}, a
 * keyed process function whose `ValueState<string>` holds `--value-bytes`
 * characters per key (so the keyed state is about `keys × (value-bytes + 7)`
 * bytes in a checkpoint). Build records only write state; every trickle
 * record reads its key's value (`hit`: it was there), rewrites it, and emits a
 * {@linkcode RecoveryRecord} stamped with the attempt and its wall-clock
 * time, which the chained `JetStreamSink` writes to `<stream>.out`.
 *
 * With an even `--keys`, split `s` of parallelism 2 only ever sees keys of
 * its own parity, in the build phase and in the trickle alike, so every
 * trickle record finds its key already built: `hit` false in a restored
 * attempt means keyed state was lost.
 *
 * ## Marks
 *
 * Slot threads print one `RECOVERY-MARK <json>` line per event on the worker
 * process's stdout ({@linkcode RecoveryMark}): the module evaluated on a slot
 * thread (`module`), a keyed subtask restored and opened (`open`, with the
 * time its `initializeState` ran, which is after its keyed state was
 * downloaded, decoded and loaded), its first record (`first`) and its first
 * trickle record (`trickle`). Times are {@linkcode wallClockMs}.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type CheckpointedFunction,
  type Collector,
  executionRole,
  type FunctionInitializationContext,
  type InputStatus,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type ReaderOutput,
  RestartStrategies,
  type RuntimeContext,
  type Source,
  type SourceReader,
  type SourceReaderContext,
  type SourceSplit,
  type SplitEnumeratorContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../../mod.ts";
import { JetStreamSink } from "../../connectors/jetstream/mod.ts";

/** The prefix of a mark line on a worker's stdout. */
export const MARK_PREFIX = "RECOVERY-MARK ";

/** One moment seen by a slot thread (see the module docs). Times in wall-clock ms. */
export type RecoveryMark =
  /** The job module was evaluated on a slot thread of process `pid`. */
  | { readonly ev: "module"; readonly pid: number; readonly ms: number }
  /** Keyed subtask `sub` of attempt `att` ran `initializeState` at `initMs` and `open` at `ms`. */
  | {
    readonly ev: "open";
    readonly att: number;
    readonly sub: number;
    readonly pid: number;
    readonly restored: boolean;
    readonly initMs: number;
    readonly ms: number;
  }
  /** Keyed subtask `sub` of attempt `att` processed its first record (`first`) or trickle record. */
  | {
    readonly ev: "first" | "trickle";
    readonly att: number;
    readonly sub: number;
    readonly pid: number;
    readonly ms: number;
  };

/** A record the sink writes (JSON). */
export interface RecoveryRecord {
  /** The source number (>= keys: a trickle record). */
  readonly i: number;
  /** `i % keys`. */
  readonly key: number;
  /** The attempt that produced it. */
  readonly att: number;
  /** The keyed subtask that produced it. */
  readonly sub: number;
  /** When the keyed subtask produced it ({@linkcode wallClockMs}). */
  readonly ts: number;
  /** Whether the key's value was in state (always, unless state was lost). */
  readonly hit: boolean;
}

/**
 * Wall-clock time in ms with sub-millisecond resolution; threads and
 * processes of one host agree on it.
 */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Prints `mark` as one {@linkcode MARK_PREFIX} line on stdout. */
function printMark(mark: RecoveryMark): void {
  console.log(MARK_PREFIX + JSON.stringify(mark));
}

/** One interleaved split of a {@linkcode BuildThenTrickleSource}: plain data. */
export interface TrickleSplit extends SourceSplit {
  /** `build-trickle-<i>`. */
  readonly splitId: string;
  /** The next number to emit (the split's position). */
  readonly next: number;
  /** The distance between two numbers of the split (the enumerating parallelism). */
  readonly step: number;
}

/**
 * The integers 0, 1, 2, ... without end, in interleaved splits (split `i`
 * of `p`: `i`, `i + p`, ...): the numbers below `buildRecords` in batches of
 * `batchSize` as fast as the job takes them, the rest at `recordsPerSecond`
 * over all subtasks (a token bucket per reader holding at most 100 ms worth
 * of records). Exactly-once with checkpoints: a split's position is its next
 * number.
 */
export class BuildThenTrickleSource implements Source<number, TrickleSplit> {
  /** Always `"continuous-unbounded"`. */
  readonly boundedness = "continuous-unbounded" as const;
  /** Numbers emitted at full speed, in all splits. */
  readonly buildRecords: number;
  /** Total rate after the build phase, in records per second. */
  readonly recordsPerSecond: number;
  /** Records per `pollNext` call at most. */
  readonly batchSize: number;

  /**
   * @throws {RangeError} when `buildRecords` is not a non-negative safe
   * integer, `recordsPerSecond` not a positive finite number, or `batchSize`
   * not a positive integer.
   */
  constructor(buildRecords: number, recordsPerSecond: number, batchSize = 1024) {
    if (!Number.isSafeInteger(buildRecords) || buildRecords < 0) {
      throw new RangeError(
        `BuildThenTrickleSource: 'buildRecords' must be a non-negative integer: current value is ${buildRecords}`,
      );
    }
    if (!(recordsPerSecond > 0 && Number.isFinite(recordsPerSecond))) {
      throw new RangeError(
        `BuildThenTrickleSource: 'recordsPerSecond' must be a positive number: current value is ${recordsPerSecond}`,
      );
    }
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(
        `BuildThenTrickleSource: 'batchSize' must be a positive integer: current value is ${batchSize}`,
      );
    }
    this.buildRecords = buildRecords;
    this.recordsPerSecond = recordsPerSecond;
    this.batchSize = batchSize;
  }

  /** `parallelism` interleaved splits, split `i` starting at `i`. */
  enumerateSplits(context: SplitEnumeratorContext): TrickleSplit[] {
    return Array.from({ length: context.parallelism }, (_, i) => ({
      splitId: `build-trickle-${i}`,
      next: i,
      step: context.parallelism,
    }));
  }

  /** The reader of one subtask; its trickle rate is `recordsPerSecond / parallelism`. */
  createReader(context: SourceReaderContext): SourceReader<number, TrickleSplit> {
    return new BuildThenTrickleReader(
      context,
      this.buildRecords,
      this.recordsPerSecond / context.parallelism,
      this.batchSize,
    );
  }
}

class BuildThenTrickleReader implements SourceReader<number, TrickleSplit> {
  readonly #context: SourceReaderContext;
  readonly #build: number;
  readonly #perMs: number;
  readonly #capacity: number;
  readonly #batchSize: number;
  #splits: { splitId: string; next: number; step: number }[] = [];
  #cursor = 0;
  #tokens = 0;
  #lastMs: number | undefined;

  constructor(context: SourceReaderContext, build: number, rate: number, batchSize: number) {
    this.#context = context;
    this.#build = build;
    this.#perMs = rate / 1000;
    this.#capacity = Math.max(1, rate / 10);
    this.#batchSize = batchSize;
  }

  addSplits(splits: TrickleSplit[]): void {
    for (const { splitId, next, step } of splits) this.#splits.push({ splitId, next, step });
  }

  pollNext(output: ReaderOutput<number>): InputStatus {
    if (this.#splits.length === 0) return "NOTHING_AVAILABLE";
    const building = this.#splits.filter((s) => s.next < this.#build);
    if (building.length > 0) {
      // Full speed, but never past the build phase.
      for (let n = 0; n < this.#batchSize && building.length > 0; n++) {
        if (this.#cursor >= building.length) this.#cursor = 0;
        const split = building[this.#cursor]!;
        output.collect(split.next);
        split.next += split.step;
        if (split.next >= this.#build) building.splice(this.#cursor, 1);
        else this.#cursor++;
      }
      return "MORE_AVAILABLE";
    }
    const budget = Math.min(this.#batchSize, this.#refill());
    if (budget === 0) return "NOTHING_AVAILABLE";
    this.#tokens -= budget;
    for (let n = 0; n < budget; n++) {
      if (this.#cursor >= this.#splits.length) this.#cursor = 0;
      const split = this.#splits[this.#cursor++]!;
      output.collect(split.next);
      split.next += split.step;
    }
    return "MORE_AVAILABLE";
  }

  /** Tops the token bucket up to now; returns the whole records it allows. */
  #refill(): number {
    const now = this.#context.currentProcessingTime();
    if (this.#lastMs !== undefined && now > this.#lastMs) {
      this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#lastMs) * this.#perMs);
    }
    if (this.#lastMs === undefined || now > this.#lastMs) this.#lastMs = now;
    return Math.floor(this.#tokens);
  }

  isAvailable(): Promise<void> {
    if (this.#splits.length === 0 || this.#refill() > 0) return Promise.resolve();
    const waitMs = Math.max(1, Math.ceil((1 - this.#tokens) / this.#perMs));
    const clock = this.#context.clock;
    return new Promise((resolve) => clock.schedule(clock.now() + waitMs, resolve));
  }

  snapshotState(_checkpointId: number): TrickleSplit[] {
    return this.#splits.map(({ splitId, next, step }) => ({ splitId, next, step }));
  }
}

/** `"v<i>:"` padded with `x` to `bytes` characters (at least the prefix). */
function makeValue(i: number, bytes: number): string {
  return `v${i}:`.padEnd(bytes, "x");
}

/** Builds and updates the keyed state, emits trickle records, and prints marks. */
export class StateBuilder
  implements KeyedProcessFunction<number, number, RecoveryRecord>, CheckpointedFunction {
  private readonly keys: number;
  private readonly valueBytes: number;
  private blob: ValueState<string> | undefined;
  private attempt = 0;
  private subtask = 0;
  private initMs = 0;
  private restored = false;
  private seenFirst = false;
  private seenTrickle = false;

  /** `keys`: the build-phase records; `valueBytes`: characters per value. */
  constructor(keys: number, valueBytes: number) {
    this.keys = keys;
    this.valueBytes = valueBytes;
  }

  /** Notes when state was restored (this runs after the keyed state was loaded). */
  initializeState(context: FunctionInitializationContext): void {
    this.initMs = wallClockMs();
    this.restored = context.isRestored;
  }

  /** Nothing to snapshot besides the keyed state. */
  snapshotState(): void {}

  /** Registers the state and prints the `open` mark. */
  open(ctx: RuntimeContext): void {
    this.blob = ctx.getState(new ValueStateDescriptor<string>("blob"));
    this.attempt = ctx.attempt;
    this.subtask = ctx.subtaskIndex;
    printMark({
      ev: "open",
      att: this.attempt,
      sub: this.subtask,
      pid: Deno.pid,
      restored: this.restored,
      initMs: this.initMs,
      ms: wallClockMs(),
    });
  }

  /** Writes the key's value; for a trickle record, also emits it. */
  processElement(
    i: number,
    _ctx: KeyedProcessContext<number>,
    out: Collector<RecoveryRecord>,
  ): void {
    const blob = this.blob!;
    if (!this.seenFirst) {
      this.seenFirst = true;
      this.mark("first");
    }
    if (i < this.keys) {
      blob.update(makeValue(i, this.valueBytes));
      return;
    }
    if (!this.seenTrickle) {
      this.seenTrickle = true;
      this.mark("trickle");
    }
    const hit = blob.value() !== undefined;
    blob.update(makeValue(i, this.valueBytes));
    out.collect({
      i,
      key: i % this.keys,
      att: this.attempt,
      sub: this.subtask,
      ts: wallClockMs(),
      hit,
    });
  }

  private mark(ev: "first" | "trickle"): void {
    printMark({ ev, att: this.attempt, sub: this.subtask, pid: Deno.pid, ms: wallClockMs() });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      stream: { type: "string" },
      "txn-bucket": { type: "string" },
      keys: { type: "string", default: "100000" },
      "value-bytes": { type: "string", default: "100" },
      rate: { type: "string", default: "200" },
      "checkpoint-ms": { type: "string", default: "1000" },
      parallelism: { type: "string", default: "2" },
      "restart-delay-ms": { type: "string", default: "0" },
      incremental: { type: "boolean", default: false },
    },
  });
  const { nats, stream } = values;
  const txnBucket = values["txn-bucket"];
  if (nats === undefined || stream === undefined || txnBucket === undefined) {
    throw new Error("recovery_job.ts needs --nats URL, --stream S and --txn-bucket B");
  }
  const keys = Number(values.keys);
  if (!Number.isSafeInteger(keys) || keys < 2 || keys % 2 !== 0) {
    throw new RangeError(`--keys must be an even integer >= 2: current value is ${values.keys}`);
  }
  if (executionRole() === "slot") printMark({ ev: "module", pid: Deno.pid, ms: wallClockMs() });
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.setParallelism(Number(values.parallelism));
  env.enableCheckpointing(Number(values["checkpoint-ms"]), {
    incrementalCheckpoints: values.incremental,
  });
  env.setRestartStrategy(RestartStrategies.fixedDelay(3, Number(values["restart-delay-ms"])));
  env.fromSource(
    new BuildThenTrickleSource(keys, Number(values.rate)),
    WatermarkStrategy.noWatermarks(),
    "build-then-trickle",
  )
    .uid("numbers")
    .keyBy((i) => i % keys)
    .process(new StateBuilder(keys, Number(values["value-bytes"])))
    .uid("state")
    .sinkTo(
      new JetStreamSink<RecoveryRecord>({
        connection: { servers: nats },
        stream,
        subject: `${stream}.out`,
        txnBucket,
      }),
    )
    .uid("out");
  const result = await env.execute("cluster-recovery-bench");
  console.log(`RESULT ${JSON.stringify({ jobId: result.jobId, restarts: result.restarts })}`);
}
