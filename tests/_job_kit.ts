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
 * @module
 */

import assert from "node:assert/strict";
import type {
  Collector,
  FunctionInitializationContext,
  KeyedProcessContext,
  KeyedProcessFunction,
  RuntimeContext,
  ValueState,
} from "../mod.ts";
import { ValueStateDescriptor } from "../mod.ts";
import { TestSource } from "../testing.ts";
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

/** Runs `body` with a fresh temporary directory, removed afterwards. */
export async function withTempDir<R>(body: (dir: string) => Promise<R>): Promise<R> {
  const dir = await Deno.makeTempDir({ prefix: "weir-test-" });
  try {
    return await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Options of {@linkcode keyedSplits}. */
export interface KeyedSplitsOptions {
  /** Number of splits (one per source subtask). */
  readonly splits: number;
  /** Keys per split; key names are `k<split>-<i>`. */
  readonly keysPerSplit: number;
  /** Records per key. */
  readonly recordsPerKey: number;
  /** Put an `awaitCheckpoint` marker after every this many records of a split. */
  readonly awaitCheckpointEvery: number;
}

/**
 * The items of each split of the keyed job's `TestSource`: each split's keys
 * interleaved round-robin, with `awaitCheckpoint` markers sprinkled in, so
 * that checkpoints land mid-stream.
 */
export function keyedSplits(options: KeyedSplitsOptions): TestItem<KeyedRecord>[][] {
  const lists: TestItem<KeyedRecord>[][] = [];
  for (let s = 0; s < options.splits; s++) {
    const items: TestItem<KeyedRecord>[] = [];
    let emitted = 0;
    for (let seq = 0; seq < options.recordsPerKey; seq++) {
      for (let k = 0; k < options.keysPerSplit; k++) {
        items.push({ key: `k${s}-${k}`, seq });
        emitted++;
        if (emitted % options.awaitCheckpointEvery === 0) items.push(TestSource.awaitCheckpoint());
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
    for (let k = 0; k < options.keysPerSplit; k++) {
      const key = `k${s}-${k}`;
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

/**
 * The keyed operator of the keyed job: keeps `sum` and `last` (the last
 * sequence number) per key, fails on a gap or repeat, and emits the running
 * sum.
 */
export class SequenceCheck implements KeyedProcessFunction<string, KeyedRecord, SumRecord> {
  private sum!: ValueState<number>;
  private last!: ValueState<number>;
  /** Checkpoint restored from by this subtask, if any (for debugging). */
  restoredFrom: number | undefined;

  initializeState(context: FunctionInitializationContext): void {
    this.restoredFrom = context.restoredCheckpointId;
  }

  open(context: RuntimeContext): void {
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
        `key ${ctx.getCurrentKey()}: expected seq ${last + 1}, got ${record.seq} (restored from ${this.restoredFrom})`,
      );
    }
    const sum = (this.sum.value() ?? 0) + record.seq;
    this.last.update(record.seq);
    this.sum.update(sum);
    out.collect({ key: record.key, seq: record.seq, sum });
  }
}
