/**
 * Shared pieces of the integration tests: a seeded PRNG, a temporary
 * checkpoint directory, and a keyed job whose output can be compared with a
 * failure-free run record by record.
 *
 * ## The keyed job
 *
 * Records are `{ key, seq }`: every key's records carry the sequence
 * numbers 0, 1, 2, ... in order, and all of one key's records sit in one
 * source split, so the order in which a key's records reach the keyed
 * operator is fixed. The keyed operator ({@linkcode SequenceCheck}) keeps a
 * running sum and the last sequence number per key in keyed state, fails on
 * any gap or repeat, and emits `{ key, seq, sum }`; the output of a key is
 * thus a deterministic function of its input, and any lost or replayed
 * record (or lost or stale state) shows up in the committed output.
 *
 * ## Consistent cuts
 *
 * A {@linkcode Cuts} recorder checks the checkpoints themselves: at each
 * checkpoint, every source-side {@linkcode SplitCounter} reports how many
 * records of each split it had passed when it took the checkpoint, and
 * every keyed subtask how many of each split it had processed when it took
 * it. Aligned barriers make the two equal, split by split.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  CheckpointedFunction,
  Collector,
  FunctionInitializationContext,
  FunctionSnapshotContext,
  KeyedProcessContext,
  KeyedProcessFunction,
  ListState,
  RuntimeContext,
  ValueState,
} from "../mod.ts";
import {
  assignToKeyGroup,
  DEFAULT_MAX_PARALLELISM,
  ListStateDescriptor,
  ValueStateDescriptor,
} from "../mod.ts";
import { computeOperatorIndexForKeyGroup } from "../runtime/state/key_group.ts";
import { setImmediate } from "node:timers";
import type { SinkContext } from "../runtime/api/sink.ts";
import { CollectingSink, type CollectingTxn, TestSource } from "../testing.ts";
import type { TestItem } from "../testing.ts";

/** A record of the keyed job. */
export interface KeyedRecord {
  readonly key: string;
  readonly seq: number;
}

/** An output record of the keyed job: the running sum of `seq` for `key` after this record. */
export interface SumRecord {
  readonly key: string;
  readonly seq: number;
  readonly sum: number;
}

/**
 * mulberry32: a small, seeded 32-bit PRNG, so every random choice of a test
 * can be replayed from the seed printed in its assertion messages.
 * @returns a function giving floats in [0, 1).
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max], from `random`. */
export function randomInt(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** The paths under `dir`, recursively, relative to it (empty when `dir` is empty or gone). */
export async function listTree(dir: string): Promise<string[]> {
  const paths: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      paths.push(entry.name);
      if (entry.isDirectory) {
        for (const inner of await listTree(`${dir}/${entry.name}`)) {
          paths.push(`${entry.name}/${inner}`);
        }
      }
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return paths.sort();
}

/** Runs `body` with a fresh temporary directory, removed afterwards. */
export async function withTempDir<R>(body: (dir: string) => Promise<R>): Promise<R> {
  const dir = await Deno.makeTempDir({ prefix: "weir-test-" });
  try {
    return await body(dir);
  } finally {
    await removeTree(dir);
  }
}

/**
 * Removes `dir` recursively. A subtask of a failed job that was blocked in
 * user code may still finish its checkpoint write (and then remove it) after
 * `execute()` rejected, so a removal racing with it is retried briefly.
 */
async function removeTree(dir: string): Promise<void> {
  for (let attempt = 0;; attempt++) {
    try {
      await Deno.remove(dir, { recursive: true });
      return;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      if (attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** Options of {@linkcode keyedSplits}. */
export interface KeyedSplitsOptions {
  /** Number of splits (one per source subtask). */
  readonly splits: number;
  /**
   * Keys per split, named `k<split>-<i>` (see {@linkcode splitKeys}): every
   * split has keys on both subtasks of a keyed operator of parallelism 2.
   */
  readonly keysPerSplit: number;
  /** Records per key. */
  readonly recordsPerKey: number;
  /** Put an `awaitCheckpoint` marker after every this many records of a split. */
  readonly awaitCheckpointEvery: number;
}

/**
 * The keys of `split`: names `k<split>-<i>` chosen so that they go to the
 * subtasks of a keyed operator of parallelism 2 in turn (0, 1, 0, ...) with
 * the default max parallelism. So a keyed subtask gets records from every
 * source subtask, and every one of its input channels carries data.
 */
export function splitKeys(split: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const key = `k${split}-${i}`;
    const subtask = computeOperatorIndexForKeyGroup(
      DEFAULT_MAX_PARALLELISM,
      2,
      assignToKeyGroup(key, DEFAULT_MAX_PARALLELISM),
    );
    if (subtask === keys.length % 2) keys.push(key);
  }
  return keys;
}

/** Makes one split of {@linkcode keyedSplits} slower than the others. */
export interface Skew {
  /** The slow split. */
  readonly split: number;
  /** Pause after every this many records. */
  readonly every: number;
  /** Length of each pause, in ms of processing time. */
  readonly ms: number;
}

/**
 * The items of each split of the keyed job's `TestSource`: each split's keys
 * interleaved round-robin, with `awaitCheckpoint` markers sprinkled in, so
 * that checkpoints land mid-stream, and with `skew`, short pauses in one
 * split, so that its channels carry less data than the others and barriers
 * reach a consumer's channels at different times.
 */
export function keyedSplits(
  options: KeyedSplitsOptions,
  skew?: Skew,
): TestItem<KeyedRecord>[][] {
  const lists: TestItem<KeyedRecord>[][] = [];
  for (let s = 0; s < options.splits; s++) {
    const items: TestItem<KeyedRecord>[] = [];
    const keys = splitKeys(s, options.keysPerSplit);
    let emitted = 0;
    for (let seq = 0; seq < options.recordsPerKey; seq++) {
      for (const key of keys) {
        items.push({ key, seq });
        emitted++;
        if (emitted % options.awaitCheckpointEvery === 0) items.push(TestSource.awaitCheckpoint());
        if (skew?.split === s && emitted % skew.every === 0) items.push(TestSource.pause(skew.ms));
      }
    }
    lists.push(items);
  }
  return lists;
}

/** The output a correct run of the keyed job commits, per key in order. */
export function expectedSums(options: KeyedSplitsOptions): Map<string, SumRecord[]> {
  const byKey = new Map<string, SumRecord[]>();
  for (let s = 0; s < options.splits; s++) {
    for (const key of splitKeys(s, options.keysPerSplit)) {
      const list: SumRecord[] = [];
      let sum = 0;
      for (let seq = 0; seq < options.recordsPerKey; seq++) {
        sum += seq;
        list.push({ key, seq, sum });
      }
      byKey.set(key, list);
    }
  }
  return byKey;
}

/** Groups records by key, keeping their order. */
export function groupByKey<R extends { readonly key: string }>(records: readonly R[]): Map<
  string,
  R[]
> {
  const byKey = new Map<string, R[]>();
  for (const r of records) {
    let list = byKey.get(r.key);
    if (!list) byKey.set(r.key, list = []);
    list.push(r);
  }
  return byKey;
}

/** A canonical, order-independent form of a multiset of records. */
export function multiset(records: readonly unknown[]): string[] {
  return records.map((r) => JSON.stringify(r)).sort();
}

/**
 * Asserts that `actual` holds exactly the records of `expected` (same
 * multiset: nothing lost, nothing twice) and that every key's records come
 * in the same order.
 * @param context names the run in assertion messages (e.g. the seed).
 */
export function assertSameOutput<R extends { readonly key: string }>(
  actual: readonly R[],
  expected: readonly R[],
  context: string,
): void {
  const seen = new Set<string>();
  const duplicates = actual.map((r) => JSON.stringify(r)).filter((r) =>
    seen.has(r) || !seen.add(r)
  );
  assert.deepEqual(duplicates, [], `${context}: records committed twice`);
  assert.equal(actual.length, expected.length, `${context}: number of committed records`);
  assert.deepEqual(multiset(actual), multiset(expected), `${context}: committed multiset`);
  const actualByKey = groupByKey(actual);
  for (const [key, records] of groupByKey(expected)) {
    assert.deepEqual(actualByKey.get(key), records, `${context}: order of key ${key}`);
  }
}

/** The split a key of {@linkcode splitKeys} belongs to. */
export function splitOf(key: string): number {
  return Number(key.slice(1, key.indexOf("-")));
}

/** What the parties of one checkpoint reported, per split (see the module docs). */
export interface Cut {
  /** Records of each split the sources had emitted at the checkpoint. */
  readonly emitted: number[];
  /** Records of each split the keyed subtasks had processed at the checkpoint. */
  readonly processed: number[];
  /** Who reported (`emitted#<subtask>`, `processed#<subtask>`). */
  readonly reporters: Set<string>;
}

/**
 * Collects the {@linkcode Cut} of every checkpoint, and the attempts that ran
 * user code; shared by all subtasks of a job.
 */
export class Cuts {
  readonly #byId = new Map<number, Cut>();
  /** The execution attempts whose subtasks opened a counting function. */
  readonly attempts: Set<number> = new Set();

  /** Adds `counts` (per split) of one party to checkpoint `checkpointId`. */
  report(
    checkpointId: number,
    side: "emitted" | "processed",
    subtask: number,
    counts: readonly number[],
  ): void {
    let cut = this.#byId.get(checkpointId);
    if (!cut) {
      this.#byId.set(checkpointId, cut = { emitted: [], processed: [], reporters: new Set() });
    }
    const reporter = `${side}#${subtask}`;
    assert.ok(
      !cut.reporters.has(reporter),
      `${reporter} reported checkpoint ${checkpointId} twice`,
    );
    cut.reporters.add(reporter);
    counts.forEach((n, split) => cut[side][split] = (cut[side][split] ?? 0) + n);
  }

  /** The cuts every one of `parties` reported to, by checkpoint id. */
  complete(parties: number): [number, Cut][] {
    return [...this.#byId].filter(([, cut]) => cut.reporters.size === parties);
  }
}

/**
 * Asserts that at least `atLeast` checkpoints were taken by every party and
 * that each of them is a consistent cut: per split, the keyed subtasks
 * processed exactly what the sources had emitted before their barriers.
 * @param context names the run in assertion messages.
 */
export function assertConsistentCuts(
  cuts: readonly [number, Cut][],
  atLeast: number,
  context: string,
): void {
  assert.ok(
    cuts.length >= atLeast,
    `${context}: only ${cuts.length} checkpoints reached every party`,
  );
  for (const [id, cut] of cuts) {
    assert.deepEqual(
      cut.processed,
      cut.emitted,
      `${context}: checkpoint ${id} is not a consistent cut (records per split)`,
    );
  }
}

/**
 * Per-split record counts kept in operator state, so they survive restores.
 * Every subtask snapshots its whole array; a restore adds up whatever
 * arrays it is given, so the sum over subtasks stays right however the
 * list state is redistributed.
 */
class SplitCounts {
  readonly counts: number[] = [];
  #state!: ListState<number[]>;

  initialize(context: FunctionInitializationContext, name: string): void {
    this.#state = context.operatorStateStore.getListState(new ListStateDescriptor<number[]>(name));
    this.counts.length = 0;
    for (const restored of this.#state.get()) {
      restored.forEach((n, split) => this.counts[split] = (this.counts[split] ?? 0) + n);
    }
  }

  count(key: string): void {
    const split = splitOf(key);
    this.counts[split] = (this.counts[split] ?? 0) + 1;
  }

  snapshot(): number[] {
    const copy = Array.from(this.counts, (n) => n ?? 0);
    this.#state.update([copy]);
    return copy;
  }
}

/**
 * An identity map, to chain to a source, that counts the records of each
 * split it passes and reports the counts to `cuts` at every checkpoint.
 * `onRecord` runs first for every record (tests throw from it).
 */
export class SplitCounter implements CheckpointedFunction {
  readonly cuts: Cuts | undefined;
  // Functions are copied per subtask (own fields, shallowly): per-subtask
  // objects are made in initializeState, and no #private fields are used.
  private counts!: SplitCounts;
  private subtask = -1;
  constructor(cuts: Cuts | undefined) {
    this.cuts = cuts;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.counts = new SplitCounts();
    this.counts.initialize(context, "emitted-per-split");
  }
  snapshotState(context: FunctionSnapshotContext): void {
    this.cuts?.report(context.checkpointId, "emitted", this.subtask, this.counts.snapshot());
  }
  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
    this.cuts?.attempts.add(context.attempt);
  }
  /** Called for every record before it is counted; a hook for subclasses. */
  onRecord(_record: KeyedRecord): void {}
  map(record: KeyedRecord): KeyedRecord {
    this.onRecord(record);
    this.counts.count(record.key);
    return record;
  }
}

/**
 * The keyed operator of the keyed job: keeps `sum` and `last` (the last
 * sequence number) per key, fails on a gap or repeat, and emits the running
 * sum. With `cuts`, it reports what it processed of each split at every
 * checkpoint.
 */
export class SequenceCheck
  implements KeyedProcessFunction<string, KeyedRecord, SumRecord>, CheckpointedFunction {
  readonly cuts: Cuts | undefined;
  private sum!: ValueState<number>;
  private last!: ValueState<number>;
  private subtask = -1;
  private processed!: SplitCounts;
  /** Checkpoint restored from by this subtask, if any (for messages). */
  private restoredFrom: number | undefined;

  constructor(cuts?: Cuts) {
    this.cuts = cuts;
  }

  initializeState(context: FunctionInitializationContext): void {
    this.restoredFrom = context.restoredCheckpointId;
    this.processed = new SplitCounts();
    this.processed.initialize(context, "processed-per-split");
  }

  snapshotState(context: FunctionSnapshotContext): void {
    const counts = this.processed.snapshot();
    this.cuts?.report(context.checkpointId, "processed", this.subtask, counts);
  }

  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
    this.cuts?.attempts.add(context.attempt);
    this.sum = context.getState(new ValueStateDescriptor<number>("sum"));
    this.last = context.getState(new ValueStateDescriptor<number>("last"));
  }

  processElement(
    record: KeyedRecord,
    ctx: KeyedProcessContext<string>,
    out: Collector<SumRecord>,
  ): void {
    const last = this.last.value() ?? -1;
    if (record.seq !== last + 1) {
      throw new Error(
        `key ${ctx.getCurrentKey()}: expected seq ${
          last + 1
        }, got ${record.seq} (restored from ${this.restoredFrom})`,
      );
    }
    const sum = (this.sum.value() ?? 0) + record.seq;
    this.last.update(record.seq);
    this.sum.update(sum);
    this.processed.count(record.key);
    out.collect({ key: record.key, seq: record.seq, sum });
  }
}

/** Resolves on the next macrotask turn, so other subtasks run in between. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A {@linkcode CollectingSink} that is slow on purpose: its `invoke` takes a
 * macrotask turn every `every` records (0: never), so its subtask falls
 * behind and the data plane backs up. `counts.invoked` counts the records it
 * was given (shared by all subtask copies).
 */
export class SlowCollectingSink<T> extends CollectingSink<T> {
  readonly every: number;
  readonly counts: { invoked: number };
  constructor(every: number, counts: { invoked: number } = { invoked: 0 }) {
    super();
    this.every = every;
    this.counts = counts;
  }
  override invoke(txn: CollectingTxn<T>, value: T, context: SinkContext): void | Promise<void> {
    this.counts.invoked++;
    if (this.every === 0 || this.counts.invoked % this.every !== 0) {
      return super.invoke(txn, value, context);
    }
    return nextTurn().then(() => super.invoke(txn, value, context));
  }
}
