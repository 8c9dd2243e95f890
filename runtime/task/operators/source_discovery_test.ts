/**
 * The source operator's split discovery path (see "Split discovery" in
 * `runtime/api/source.ts`), on an in-memory source and a `ManualClock`:
 * owner assignment, periodic discovery adding splits to the reader on the
 * mailbox, union restore at another parallelism, and its failures.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceSplit,
  SplitDiscovery,
} from "../../api/source.ts";
import { splitOwner } from "../../api/split_assignment.ts";
import { SuppressRestartsError } from "../../failure.ts";
import { computeKeyGroupRangeForOperatorIndex } from "../../state/key_group.ts";
import {
  type OperatorStateSnapshot,
  redistributeOperatorState,
} from "../../state/operator_state.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import { WatermarkStrategy } from "../../time/watermark.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";
import { operatorRestore, takeSnapshot } from "./_snapshot_kit.ts";
import { SourceOperator } from "./source_operator.ts";

/** A split that counts up from `next` to `end` (exclusive), one record per poll. */
interface CountSplit extends SourceSplit {
  readonly next: number;
  readonly end: number;
}

/**
 * A continuous source whose splits are the entries of `splits` (a test adds
 * some while the job runs); its discovery returns them all, each from 0.
 */
class GrowingSource implements Source<string, CountSplit> {
  readonly boundedness = "continuous-unbounded" as const;
  readonly splits: CountSplit[];
  readonly splitDiscovery: SplitDiscovery<CountSplit>;
  discoveries = 0;
  failNext: Error | undefined;
  readerSplits: string[][] = [];
  constructor(ids: string[], intervalMs: number) {
    this.splits = ids.map((splitId) => ({ splitId, next: 0, end: 3 }));
    this.splitDiscovery = {
      intervalMs,
      createDiscoverer: () => ({
        discoverSplits: () => {
          this.discoveries++;
          const failure = this.failNext;
          this.failNext = undefined;
          if (failure !== undefined) throw failure;
          return this.splits.map((s) => ({ ...s }));
        },
      }),
    };
  }
  add(splitId: string): void {
    this.splits.push({ splitId, next: 0, end: 3 });
  }
  enumerateSplits(): CountSplit[] {
    return this.splits.map((s) => ({ ...s }));
  }
  createReader(): SourceReader<string, CountSplit> {
    const active: { split: CountSplit; next: number; out?: SourceOutput<string> }[] = [];
    const added: string[] = [];
    this.readerSplits.push(added);
    return {
      addSplits(splits) {
        for (const split of splits) {
          added.push(split.splitId);
          active.push({ split, next: split.next });
        }
      },
      pollNext(output: ReaderOutput<string>): InputStatus {
        let emitted = false;
        for (const a of active) {
          a.out ??= output.createOutputForSplit(a.split.splitId);
          if (a.next < a.split.end) {
            a.out.collect(`${a.split.splitId}#${a.next++}`);
            emitted = true;
          }
        }
        return emitted ? "MORE_AVAILABLE" : "NOTHING_AVAILABLE";
      },
      isAvailable: () => new Promise<void>(() => {}),
      snapshotState: () => active.map((a) => ({ ...a.split, next: a.next })),
    };
  }
}

/** Opens subtask `subtaskIndex` of `parallelism` over `source`, optionally restored. */
async function open(
  source: Source<string, CountSplit>,
  options: {
    subtaskIndex?: number;
    parallelism?: number;
    clock?: ManualClock;
    restore?: OperatorStateSnapshot;
  } = {},
) {
  const clock = options.clock ?? new ManualClock();
  const subtaskIndex = options.subtaskIndex ?? 0;
  const parallelism = options.parallelism ?? 1;
  const wakeups: number[] = [];
  const env: OperatorEnvironment = {
    jobId: "job-1",
    jobName: "discovery",
    vertexId: "v0",
    subtaskIndex,
    parallelism,
    maxParallelism: 128,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, parallelism, subtaskIndex),
    attempt: 0,
    clock,
    checkpointingMode: "exactly-once",
    requestWakeup: (t) => wakeups.push(t),
  };
  const records: string[] = [];
  const out: Output = {
    collect: (v) => records.push(v as string),
    collectSide: () => {},
    emitWatermark: () => {},
    emitWatermarkStatus: () => {},
  };
  const op = new SourceOperator({
    uid: "growing",
    name: "Source: growing",
    source: source as unknown as Source<unknown, SourceSplit>,
    watermarkStrategy: WatermarkStrategy.noWatermarks() as never,
    env,
    output: out,
    autoWatermarkIntervalMs: 200,
  });
  await op.initializeState(
    options.restore === undefined ? undefined : operatorRestore(options.restore),
  );
  await op.open();
  return { op, records, wakeups, clock };
}

/** Polls until the operator has nothing more now. */
async function drain(op: SourceOperator): Promise<void> {
  while ((await op.poll()) === "MORE_AVAILABLE");
}

/** Whether `promise` settled after a few turns of the microtask queue. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true);
  for (let i = 0; i < 20; i++) await Promise.resolve();
  return done;
}

/** Split ids that `subtask` of `parallelism` owns, among `candidates`. */
function ownedBy(subtask: number, parallelism: number, candidates: string[]): string[] {
  return candidates.filter((id) => splitOwner(id, parallelism) === subtask);
}

const IDS = Array.from({ length: 12 }, (_, i) => `s${i}`);

Deno.test("on the first start a discovering source's subtask keeps the enumerated splits it owns by hash", async () => {
  const source = new GrowingSource(IDS, 0);
  for (let i = 0; i < 3; i++) {
    await open(source, { subtaskIndex: i, parallelism: 3 });
    assert.deepEqual(source.readerSplits[i], ownedBy(i, 3, IDS));
  }
  assert.deepEqual(source.readerSplits.flat().sort(), [...IDS].sort());
});

Deno.test("a split that appears mid-run is discovered at the next interval and read from its start by its owner only", async () => {
  const source = new GrowingSource(["s0"], 1_000);
  const subtasks = [];
  for (let i = 0; i < 2; i++) {
    subtasks.push(await open(source, { subtaskIndex: i, parallelism: 2 }));
  }
  for (const s of subtasks) await drain(s.op);
  for (const s of subtasks) assert.deepEqual(s.wakeups, [1_000], "the first discovery is due");
  const waiting = subtasks.map((s) => s.op.isAvailable());
  assert.deepEqual(await Promise.all(waiting.map(settled)), [false, false]);

  source.add("s1");
  source.add("s5");
  for (const s of subtasks) {
    s.clock.setTime(999);
    s.op.onProcessingTime(999);
  }
  assert.equal(source.discoveries, 0, "not due before the interval");
  for (const s of subtasks) {
    s.clock.setTime(1_000);
    s.op.onProcessingTime(1_000);
  }
  assert.deepEqual(await Promise.all(waiting.map(settled)), [true, true], "a discovery wakes it");
  assert.equal(source.discoveries, 2, "each subtask discovers for itself");
  for (const s of subtasks) {
    s.clock.setTime(1_050);
    await drain(s.op);
  }
  for (let i = 0; i < 2; i++) {
    const mine = ownedBy(i, 2, ["s0", "s1", "s5"]);
    assert.deepEqual(source.readerSplits[i], mine);
    assert.deepEqual(
      subtasks[i]!.records.sort(),
      mine.flatMap((id) => [0, 1, 2].map((n) => `${id}#${n}`)).sort(),
    );
    assert.deepEqual(subtasks[i]!.wakeups.at(-1), 2_050, "the next one is an interval later");
  }

  // A later discovery returns the same splits: nothing is added twice.
  for (const s of subtasks) {
    s.clock.setTime(2_050);
    s.op.onProcessingTime(2_050);
    await settled(s.op.isAvailable());
    await drain(s.op);
  }
  assert.equal(source.discoveries, 4);
  assert.deepEqual(source.readerSplits.flat().sort(), ["s0", "s1", "s5"]);
});

Deno.test("discovered splits are checkpointed and a resume at another parallelism hands each to one subtask at its position", async () => {
  for (const [from, to] of [[1, 3], [3, 1], [2, 3]] as const) {
    const source = new GrowingSource(IDS.slice(0, 4), 100);
    const old = [];
    for (let i = 0; i < from; i++) {
      old.push(await open(source, { subtaskIndex: i, parallelism: from }));
    }
    for (const s of old) await s.op.poll(); // one record of each initial split
    for (const id of IDS.slice(4)) source.add(id);
    for (const s of old) {
      s.clock.setTime(100);
      s.op.onProcessingTime(100);
      await settled(s.op.isAvailable());
      await s.op.poll(); // adds the discovered splits and emits one record of each split
    }
    const snapshots: OperatorStateSnapshot[] = [];
    for (let i = 0; i < from; i++) {
      const snap = await takeSnapshot(await old[i]!.op.snapshotState(1));
      snapshots.push(snap.operator ?? {});
      await old[i]!.op.close();
    }
    const emitted = old.flatMap((s) => s.records);
    assert.equal(emitted.length, 4 + 4 + 8, `${from}→${to}: records before the checkpoint`);

    const resumed = [];
    for (let i = 0; i < to; i++) {
      const restore = redistributeOperatorState(snapshots, to, i);
      resumed.push(await open(source, { subtaskIndex: i, parallelism: to, restore }));
    }
    for (const s of resumed) await drain(s.op);
    const all = [...emitted, ...resumed.flatMap((s) => s.records)].sort();
    const expected = IDS.flatMap((id) => [0, 1, 2].map((n) => `${id}#${n}`)).sort();
    assert.deepEqual(all, expected, `${from}→${to}: every record once`);
    for (let i = 0; i < to; i++) {
      assert.deepEqual(
        source.readerSplits[from + i]!.sort(),
        ownedBy(i, to, IDS).sort(),
        `${from}→${to}: subtask ${i} restores the splits it owns`,
      );
    }
  }
});

Deno.test("a failed discovery fails the attempt at the next poll, naming the source", async () => {
  const source = new GrowingSource(["s0"], 100);
  const { op, clock } = await open(source);
  await drain(op);
  source.failNext = new Error("connection refused");
  clock.setTime(100);
  op.onProcessingTime(100);
  assert.equal(await settled(op.isAvailable()), true);
  await assert.rejects(
    async () => await op.poll(),
    (e: unknown) =>
      e instanceof Error && !(e instanceof SuppressRestartsError) &&
      e.message ===
        "Split discovery of source 'Source: growing' (uid growing) subtask 0/1 of job job-1 failed: connection refused",
  );
});

Deno.test("a checkpoint taken without split discovery is not restored by a source with it, without restarts", async () => {
  const split = {
    _splits: { mode: "split" as const, items: [{ splitId: "s0", next: 1, end: 3 }] },
  };
  await assert.rejects(
    () => open(new GrowingSource([], 100), { restore: split }),
    (e: unknown) =>
      e instanceof SuppressRestartsError &&
      /taken without split discovery and the source now has it on/.test(e.message),
  );
});

Deno.test("a discovery interval that is not an integer >= 0 fails the open without restarts, naming the value", async () => {
  for (const intervalMs of [-1, 0.5, Number.NaN]) {
    await assert.rejects(
      () => open(new GrowingSource(["s0"], intervalMs)),
      (e: unknown) =>
        e instanceof SuppressRestartsError &&
        e.message.endsWith(
          `its split discovery interval must be an integer >= 0 (ms): current value is ${intervalMs}`,
        ),
    );
  }
});

Deno.test("with interval 0 a discovering source keeps owner assignment but never discovers", async () => {
  const source = new GrowingSource(IDS, 0);
  const { op, wakeups, clock } = await open(source, { subtaskIndex: 1, parallelism: 2 });
  await drain(op);
  clock.setTime(100_000);
  op.onProcessingTime(100_000);
  assert.deepEqual(wakeups, []);
  assert.equal(source.discoveries, 0);
  assert.deepEqual(source.readerSplits[0], ownedBy(1, 2, IDS));
});
