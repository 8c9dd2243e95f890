/**
 * The source operator: runs a {@linkcode SourceReader} on the subtask's
 * mailbox loop, assigns timestamps and generates watermarks per split
 * (`ProgressiveTimestampsAndWatermarks`, Flink's FLIP-27 split-local
 * outputs), and checkpoints the reader's splits, with their positions and
 * watermark state, as split-redistributed operator list state named
 * `_splits`.
 *
 * ## Periodic watermarks and idleness
 *
 * From its first poll on, the operator asks the task for a processing-time
 * wake-up every auto-watermark interval (`env.requestWakeup`, on the job's
 * clock, so `ManualClock` drives it in tests) and, at each, lets every split
 * output check its idleness and emit its periodic watermark. Wake-ups are
 * requested only when the strategy generates watermarks or detects
 * idleness. They run even while the reader has nothing to emit.
 *
 * ## A subtask without splits
 *
 * A source subtask that owns no split (more subtasks than splits) marks
 * itself idle at its first poll, so it never holds back event time
 * downstream. If the source is unbounded, its reader is never polled and
 * the subtask never ends: it emits no `MAX_WATERMARK` while the source runs.
 * A bounded source's reader is polled as usual and ends the subtask
 * normally.
 *
 * ## Checkpointed split state
 *
 * Each item of `_splits` is `{ split, watermark }`: the reader's split at its
 * position, and the split's `SplitWatermarkState` (or `null` when the split
 * has no output yet). Items of the older format, bare splits, are restored
 * without watermark state.
 *
 * ## Split discovery
 *
 * For a source with `splitDiscovery` (see "Split discovery" in
 * `runtime/api/source.ts`), `_splits` is union list state: every subtask
 * restores every checkpointed split and keeps those it owns
 * (`split_assignment.ts`); on the first start it keeps the enumerated splits
 * it owns. Every `intervalMs` it runs its discoverer off the mailbox and, at
 * the next `poll` (on the mailbox), adds the new splits it owns to the
 * reader, then schedules the next discovery `intervalMs` after that. While
 * an unbounded subtask owns no split, its reader is not polled, but a
 * discovery wakes it. The next checkpoint holds the added splits, since the
 * reader snapshots every split it was given. A checkpoint taken with split
 * discovery cannot be restored by the same source without it, or the other
 * way round (the redistribution differs): the restore fails without restarts
 * and says so.
 *
 * @module
 */

import type {
  InputStatus,
  Source,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitDiscoverer,
} from "../../api/source.ts";
import { checkDistinctSplitIds, newOwnedSplits, ownedSplits } from "../../api/split_assignment.ts";
import { SuppressRestartsError } from "../../failure.ts";
import { logger } from "../../log.ts";
import type { ListState } from "../../api/state.ts";
import { ListStateDescriptor } from "../../api/state.ts";
import { DefaultOperatorStateStore } from "../../state/operator_state.ts";
import type { WatermarkStrategy } from "../../time/watermark.ts";
import {
  ProgressiveTimestampsAndWatermarks,
  type SplitWatermarkState,
} from "../../time/progressive_watermarks.ts";
import type {
  OperatorEnvironment,
  OperatorRestore,
  OperatorSnapshotResults,
  Output,
  StreamOperator,
} from "./operator.ts";
import { operatorStateSnapshot } from "./state_participants.ts";

/** One item of the `_splits` operator state. Plain data, MessagePack-encodable. */
export interface SourceSplitState {
  /** The split at its checkpointed position. */
  readonly split: SourceSplit;
  /** The split's watermark state, or `null` when it had no output yet. */
  readonly watermark: SplitWatermarkState | null;
}

const log = logger("task");

/** What a finished discovery left for the next `poll`. */
type DiscoveryResult =
  | { readonly kind: "splits"; readonly splits: readonly SourceSplit[] }
  | { readonly kind: "failed"; readonly error: unknown };

/** Drives one source subtask's reader. */
export class SourceOperator implements StreamOperator {
  readonly uid: string;
  readonly name: string;
  readonly #source: Source<unknown, SourceSplit>;
  readonly #env: OperatorEnvironment;
  readonly #watermarkIntervalMs: number;
  readonly #watermarks: ProgressiveTimestampsAndWatermarks<unknown>;
  #reader: SourceReader<unknown, SourceSplit> | undefined;
  #store: DefaultOperatorStateStore | undefined;
  #splitsState: ListState<SourceSplitState | SourceSplit> | undefined;
  #restoredSplits: SourceSplit[] | undefined;
  /** False when the subtask was assigned no split. */
  #ownsSplits = true;
  /** Set at the first poll: from then on, periodic watermarks and status may be emitted. */
  #running = false;
  #ended = false;
  #nextPeriodicAt = 0;
  #closed = false;
  /** What an unbounded subtask without splits waits for: `close` (or a discovery). */
  readonly #closedSignal: { promise: Promise<void>; resolve: () => void };
  /** Splits owned by hash, union state, and discovery (the source has `splitDiscovery`). */
  readonly #ownerAssigned: boolean;
  /** The ids of every split given to the reader. */
  readonly #known = new Set<string>();
  #discoverer: SplitDiscoverer<SourceSplit> | undefined;
  #discoveryIntervalMs = 0;
  #nextDiscoveryAt = 0;
  #discovering = false;
  #discovered: DiscoveryResult | undefined;
  /** Resolved when a discovery finishes, to wake a waiting `isAvailable`. */
  #discoveryWake: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(options: {
    uid: string;
    name: string;
    source: Source<unknown, SourceSplit>;
    watermarkStrategy: WatermarkStrategy<unknown>;
    env: OperatorEnvironment;
    output: Output;
    autoWatermarkIntervalMs: number;
  }) {
    this.uid = options.uid;
    this.name = options.name;
    this.#source = options.source;
    this.#env = options.env;
    this.#watermarkIntervalMs = options.autoWatermarkIntervalMs;
    this.#watermarks = new ProgressiveTimestampsAndWatermarks({
      strategy: options.watermarkStrategy,
      clock: options.env.clock,
      output: options.output,
      where: this.#where(),
    });
    this.#closedSignal = deferred();
    this.#ownerAssigned = options.source.splitDiscovery !== undefined;
  }

  #where(): string {
    const env = this.#env;
    return `source '${this.name}' (uid ${this.uid}) subtask ${env.subtaskIndex}/${env.parallelism} of job ${env.jobId}`;
  }

  /** An unbounded subtask without splits: its reader is not polled (until a discovery gives it splits). */
  get #parked(): boolean {
    return !this.#ownsSplits && this.#source.boundedness !== "bounded";
  }

  initializeState(restore: OperatorRestore | undefined): Promise<void> {
    this.#store = new DefaultOperatorStateStore(restore?.operator);
    const descriptor = new ListStateDescriptor<SourceSplitState | SourceSplit>("_splits");
    try {
      this.#splitsState = this.#ownerAssigned
        ? this.#store.getUnionListState(descriptor)
        : this.#store.getListState(descriptor);
    } catch (error) {
      throw new SuppressRestartsError(
        `Cannot restore ${this.#where()}: its checkpoint was taken ${
          this.#ownerAssigned ? "without" : "with"
        } split discovery and the source now has it ${this.#ownerAssigned ? "on" : "off"} (${
          error instanceof Error ? error.message : error
        })`,
        { cause: error },
      );
    }
    if (restore) {
      const env = this.#env;
      let items = [...this.#splitsState.get()].map((item) => this.#restoreItem(item));
      if (this.#ownerAssigned) {
        checkDistinctSplitIds(items.map((i) => i.split), this.#where());
        const mine = new Set(
          ownedSplits(items.map((i) => i.split), env.subtaskIndex, env.parallelism),
        );
        items = items.filter((i) => mine.has(i.split));
      }
      for (const { split, watermark } of items) {
        if (watermark !== null) this.#watermarks.restoreSplit(split.splitId, watermark);
      }
      this.#restoredSplits = items.map((i) => i.split);
    }
    return Promise.resolve();
  }

  /** Reads one `_splits` item (either format). */
  #restoreItem(item: SourceSplitState | SourceSplit): SourceSplitState {
    const isObject = (v: unknown): v is Record<string, unknown> =>
      typeof v === "object" && v !== null;
    if (isObject(item) && typeof item.splitId === "string") {
      return { split: item as SourceSplit, watermark: null };
    }
    if (isObject(item) && isObject(item.split) && typeof item.split.splitId === "string") {
      const { split, watermark } = item as SourceSplitState;
      return { split, watermark: watermark ?? null };
    }
    throw new Error(
      `Cannot restore ${this.#where()}: a checkpointed split must be a split or { split, watermark }, got ${
        JSON.stringify(item)
      }`,
    );
  }

  async open(): Promise<void> {
    const env = this.#env;
    const context: SourceReaderContext = {
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
      attempt: env.attempt,
      operatorName: this.name,
      currentProcessingTime: () => env.clock.now(),
      clock: env.clock,
    };
    this.#reader = this.#source.createReader(context);
    await this.#reader.start?.();
    let splits = this.#restoredSplits;
    if (splits === undefined) {
      const all = await this.#source.enumerateSplits({ parallelism: env.parallelism });
      splits = this.#ownerAssigned
        ? ownedSplits(all, env.subtaskIndex, env.parallelism)
        : all.filter((_, i) => i % env.parallelism === env.subtaskIndex);
    }
    this.#ownsSplits = splits.length > 0;
    for (const split of splits) this.#known.add(split.splitId);
    this.#reader.addSplits(splits);
    const discovery = this.#source.splitDiscovery;
    if (discovery !== undefined && this.#source.boundedness !== "bounded") {
      const interval = discovery.intervalMs;
      if (!Number.isSafeInteger(interval) || interval < 0) {
        throw new SuppressRestartsError(
          `Cannot open ${this.#where()}: its split discovery interval must be an integer >= 0 (ms): current value is ${interval}`,
        );
      }
      if (interval > 0) {
        this.#discoveryIntervalMs = interval;
        this.#discoverer = discovery.createDiscoverer(context);
      }
    }
  }

  /**
   * Polls the reader once. The first poll starts periodic watermarks and,
   * for a subtask without splits, marks it idle. An unbounded subtask
   * without splits never polls its reader.
   */
  poll(): InputStatus | Promise<InputStatus> {
    if (!this.#running) this.#start();
    if (this.#discovered !== undefined) this.#addDiscovered();
    if (this.#parked) return "NOTHING_AVAILABLE";
    return this.#reader!.pollNext(this.#watermarks.readerOutput);
  }

  #start(): void {
    this.#running = true;
    if (!this.#ownsSplits) this.#watermarks.markIdle();
    const now = this.#env.clock.now();
    if (this.#watermarks.periodic) this.#nextPeriodicAt = now + this.#watermarkIntervalMs;
    if (this.#discoverer !== undefined) this.#nextDiscoveryAt = now + this.#discoveryIntervalMs;
    this.#requestNextWakeup();
  }

  /** Asks for a wake-up at the next periodic watermark or discovery, whichever is first. */
  #requestNextWakeup(): void {
    let at = Number.POSITIVE_INFINITY;
    if (this.#watermarks.periodic) at = this.#nextPeriodicAt;
    if (this.#discoverer !== undefined && !this.#discovering && this.#discovered === undefined) {
      at = Math.min(at, this.#nextDiscoveryAt);
    }
    if (at !== Number.POSITIVE_INFINITY) this.#env.requestWakeup(at);
  }

  /** Runs the discoverer off the mailbox; its result waits for the next `poll`. */
  #discover(): void {
    const discoverer = this.#discoverer!;
    this.#discovering = true;
    Promise.resolve()
      .then(() => discoverer.discoverSplits())
      .then(
        (splits): DiscoveryResult => ({ kind: "splits", splits }),
        (error): DiscoveryResult => ({ kind: "failed", error }),
      )
      .then((result) => {
        this.#discovering = false;
        if (this.#closed) return;
        this.#discovered = result;
        const wake = this.#discoveryWake;
        this.#discoveryWake = undefined;
        wake?.resolve();
      });
  }

  /**
   * On the mailbox: adds the discovered splits this subtask owns and does
   * not hold to the reader, and schedules the next discovery.
   * @throws {Error} naming the source when the discovery failed (its cause attached);
   *   a `SuppressRestartsError` from the discoverer is rethrown as it is.
   */
  #addDiscovered(): void {
    const result = this.#discovered!;
    this.#discovered = undefined;
    if (result.kind === "failed") {
      const error = result.error;
      if (error instanceof SuppressRestartsError) throw error;
      throw new Error(
        `Split discovery of ${this.#where()} failed: ${
          error instanceof Error ? error.message : error
        }`,
        { cause: error },
      );
    }
    const env = this.#env;
    const added = newOwnedSplits({
      discovered: result.splits,
      known: this.#known,
      subtaskIndex: env.subtaskIndex,
      parallelism: env.parallelism,
    });
    if (added.length > 0) {
      log.info(
        `${this.#where()} discovered ${added.length} new split(s): ${
          added.slice(0, 10).map((s) => s.splitId).join(", ")
        }${added.length > 10 ? ", …" : ""}`,
      );
      for (const split of added) this.#known.add(split.splitId);
      this.#ownsSplits = true;
      this.#reader!.addSplits(added);
    }
    this.#nextDiscoveryAt = env.clock.now() + this.#discoveryIntervalMs;
    this.#requestNextWakeup();
  }

  /**
   * Resolves when the reader may have records again, or a discovery
   * finished (never, for an unbounded subtask without splits or discovery).
   */
  isAvailable(): Promise<void> {
    let wait: Promise<void> = this.#parked
      ? this.#closedSignal.promise
      : this.#reader!.isAvailable?.() ?? new Promise((resolve) => setTimeout(resolve, 1));
    if (this.#discoverer !== undefined) {
      if (this.#discovered !== undefined) return Promise.resolve();
      wait = Promise.race([wait, (this.#discoveryWake ??= deferred()).promise]);
    }
    return wait;
  }

  processElement(): void {
    throw new Error(`Source operator '${this.name}' has no input`);
  }

  processWatermark(): void {}

  /** Emits the periodic watermarks and idleness and starts a split discovery when due, and asks for the next wake-up. */
  onProcessingTime(nowMs: number): void {
    if (!this.#running || this.#ended || this.#closed) return;
    if (this.#watermarks.periodic && nowMs >= this.#nextPeriodicAt) {
      this.#watermarks.emitPeriodicWatermark(nowMs);
      this.#nextPeriodicAt = nowMs + this.#watermarkIntervalMs;
    }
    if (
      this.#discoverer !== undefined && !this.#discovering && this.#discovered === undefined &&
      nowMs >= this.#nextDiscoveryAt
    ) {
      this.#discover();
    }
    this.#requestNextWakeup();
  }

  quiesce(): Promise<void> {
    return Promise.resolve();
  }

  /** End of input: event time ends too, so every event-time timer downstream fires. */
  endInput(): Promise<void> {
    this.#ended = true;
    this.#watermarks.emitFinalWatermark();
    return Promise.resolve();
  }

  /**
   * Captures the reader's splits, each with its generator's highest
   * timestamp (the per-split watermark floor), as one `source-splits`
   * participant.
   */
  snapshotState(checkpointId: number): Promise<OperatorSnapshotResults> {
    const splits = this.#reader!.snapshotState(checkpointId);
    this.#splitsState!.update(splits.map((split) => ({
      split,
      watermark: this.#watermarks.snapshotSplit(split.splitId) ?? null,
    })));
    return Promise.resolve([
      operatorStateSnapshot("source-splits", this.uid, this.#store!.snapshot()),
    ]);
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await this.#reader?.notifyCheckpointComplete?.(checkpointId);
  }

  notifyCheckpointAborted(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closedSignal.resolve();
    this.#discoveryWake?.resolve();
    try {
      await this.#reader?.close?.();
    } finally {
      await this.#discoverer?.close?.();
    }
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}
