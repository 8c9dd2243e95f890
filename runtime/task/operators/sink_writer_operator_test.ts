import assert from "node:assert/strict";
import type {
  CommitRequest,
  Committer,
  SinkV2,
  SinkWriter,
  WriterInitContext,
} from "../../api/sink_v2.ts";
import { SinkStateError } from "../../api/sink_v2.ts";
import { SuppressRestartsError } from "../../failure.ts";
import {
  type OperatorStateSnapshot,
  redistributeOperatorState,
} from "../../state/operator_state.ts";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import type { OperatorRestore } from "./operator.ts";
import { operatorRestore, type TakenSnapshot } from "./_snapshot_kit.ts";
import {
  PENDING_COMMITTABLES_STATE,
  SinkWriterOperator,
  WRITER_STATE,
} from "./sink_writer_operator.ts";
import type { CommitRetryOptions } from "./sink_commit.ts";

/** A committable: the records of one subtask's checkpoint. */
interface Batch {
  readonly subtask: number;
  readonly checkpointId: number;
  readonly records: number[];
}

/** What a committer does with a request, by its retry count. */
type Decide = (request: CommitRequest<Batch>) => void;

/** A SinkV2 that logs every hook and commits into `committed`. */
class RecordingSink implements SinkV2<number, Batch, number> {
  readonly kind = "v2" as const;
  readonly deliveryGuarantee = "exactly-once" as const;
  readonly log: string[] = [];
  readonly committed: Batch[] = [];
  readonly requests: { checkpointId: number; retries: number; records: number[] }[] = [];
  decide: Decide = () => {};
  restoredStates: number[][] = [];

  createWriter(context: WriterInitContext<number>): SinkWriter<number, Batch, number> {
    this.log.push(`createWriter ${context.subtaskIndex} restored ${context.restoredCheckpointId}`);
    this.restoredStates.push([...context.restoredState]);
    let buffer: number[] = [];
    let written = context.restoredState.reduce((a, b) => a + b, 0);
    return {
      write: (value) => {
        buffer.push(value);
        written++;
      },
      flush: (end) => {
        this.log.push(`flush ${end}`);
      },
      prepareCommit: (checkpointId) => {
        this.log.push(`prepareCommit ${checkpointId}`);
        const batch = { subtask: context.subtaskIndex, checkpointId, records: buffer };
        buffer = [];
        return batch.records.length === 0 ? [] : [batch];
      },
      snapshotState: () => [written],
      close: () => {
        this.log.push(`close writer ${context.subtaskIndex}`);
      },
    };
  }

  createCommitter(): Committer<Batch> {
    this.log.push("createCommitter");
    return {
      commit: (requests) => {
        for (const request of requests) {
          this.requests.push({
            checkpointId: request.checkpointId,
            retries: request.numberOfRetries,
            records: request.committable.records,
          });
          this.decide(request);
          this.log.push(`commit ${request.checkpointId}`);
        }
      },
      close: () => {
        this.log.push("close committer");
      },
    };
  }

  checkCommittable(raw: unknown): Batch {
    const batch = raw as Batch;
    if (!Array.isArray(batch?.records)) {
      throw new SinkStateError(
        "test batch",
        `field 'records' must be an array: current value is ${JSON.stringify(batch?.records)}`,
      );
    }
    return batch;
  }

  checkWriterState(raw: unknown): number {
    if (typeof raw !== "number") {
      throw new Error(`a count must be a number, got ${JSON.stringify(raw)}`);
    }
    return raw;
  }

  /** Records actually made visible (a retried request is committed once it stops asking). */
  visible(): number[] {
    return this.committed.flatMap((b) => b.records).sort((a, b) => a - b);
  }
}

const FAST: CommitRetryOptions = { maxRetries: 3, initialBackoffMs: 10, maxBackoffMs: 25 };

function open(
  sink: SinkV2<number, Batch, number>,
  options: {
    restore?: OperatorRestore;
    subtaskIndex?: number;
    parallelism?: number;
    sleeps?: number[];
  } = {},
) {
  const sleeps = options.sleeps ?? [];
  return OperatorTestHarness.open(
    (env) =>
      new SinkWriterOperator({
        uid: "out",
        name: "recording sink",
        sink: sink as SinkV2<unknown, unknown, unknown>,
        env,
        commitRetry: FAST,
        sleep: (ms) => {
          sleeps.push(ms);
          return Promise.resolve();
        },
      }),
    {
      ...(options.restore === undefined ? {} : { restore: options.restore }),
      subtaskIndex: options.subtaskIndex ?? 0,
      parallelism: options.parallelism ?? 1,
    },
  );
}

function restoreOf(
  snapshots: readonly TakenSnapshot[],
  checkpointId: number,
  parallelism: number,
  index: number,
): OperatorRestore {
  return operatorRestore(
    redistributeOperatorState(
      snapshots.map((s) => (s.operator ?? {}) as OperatorStateSnapshot),
      parallelism,
      index,
    ),
    { checkpointId },
  );
}

/** A committer decision that commits into `sink.committed` unless it signals otherwise. */
function commitUnless(sink: RecordingSink, signal: (r: CommitRequest<Batch>) => boolean): Decide {
  return (r) => {
    if (!signal(r)) sink.committed.push(r.committable);
  };
}

Deno.test("SinkWriterOperator commits every pending committable up to a completed checkpoint, aborted ones included", async () => {
  const sink = new RecordingSink();
  sink.decide = commitUnless(sink, () => false);
  const h = await open(sink);
  h.processElement(1, undefined);
  await h.snapshot(1);
  h.processElement(2, undefined);
  await h.snapshot(2);
  await h.operator.notifyCheckpointAborted(1);
  assert.deepEqual(sink.visible(), []);
  h.processElement(3, undefined);
  await h.snapshot(3);
  await h.operator.notifyCheckpointComplete(2);
  assert.deepEqual(sink.visible(), [1, 2], "checkpoint 2 commits aborted checkpoint 1's too");
  assert.deepEqual(h.operator.pendingCommittables().map((p) => p.checkpointId), [3]);
  await h.operator.notifyCheckpointComplete(1); // late and reordered: nothing left for it
  await h.operator.notifyCheckpointComplete(3);
  assert.deepEqual(sink.visible(), [1, 2, 3]);
  assert.deepEqual(sink.requests.map((r) => r.checkpointId), [1, 2, 3]);
  assert.deepEqual(h.operator.metrics(), {
    totalCommittables: 3,
    successfulCommittables: 3,
    alreadyCommittedCommittables: 0,
    retriedCommittables: 0,
    failedCommittables: 0,
    pendingCommittables: 0,
  });
  await h.close();
  assert.deepEqual(sink.log.slice(-2), ["close writer 0", "close committer"]);
});

Deno.test("SinkWriterOperator retries a request that asks to, with its updated committable and a growing backoff", async () => {
  const sink = new RecordingSink();
  sink.decide = commitUnless(sink, (r) => {
    if (r.numberOfRetries === 0) r.retryLater();
    else if (r.numberOfRetries === 1) {
      r.updateAndRetryLater({ ...r.committable, records: [10, 11] });
    } else return false;
    return true;
  });
  const sleeps: number[] = [];
  const h = await open(sink, { sleeps });
  h.processElement(1, undefined);
  await h.snapshot(1);
  await h.operator.notifyCheckpointComplete(1);
  assert.deepEqual(sink.requests.map((r) => [r.retries, r.records]), [[0, [1]], [1, [1]], [2, [
    10,
    11,
  ]]]);
  assert.deepEqual(sleeps, [10, 20], "backoff doubles from initialBackoffMs");
  assert.deepEqual(sink.visible(), [10, 11]);
  assert.equal(h.operator.metrics().retriedCommittables, 2);
  await h.close();
});

Deno.test("SinkWriterOperator fails the attempt when a request still asks to retry after maxRetries", async () => {
  const sink = new RecordingSink();
  sink.decide = (r) => r.retryLater();
  const sleeps: number[] = [];
  const h = await open(sink, { sleeps });
  h.processElement(1, undefined);
  await h.snapshot(4);
  await assert.rejects(h.operator.notifyCheckpointComplete(4), (e: unknown) => {
    assert.ok(e instanceof Error && !(e instanceof SuppressRestartsError), "a restart may fix it");
    assert.match(
      e.message,
      /^Cannot commit 1 committable\(s\) of checkpoint\(s\) 4 in sink 'recording sink' \(uid out\) subtask 0\/1 attempt 0 checkpoint 4: the committer still asked to retry after 3 retries/,
    );
    return true;
  });
  assert.deepEqual(sleeps, [10, 20, 25], "capped at maxBackoffMs");
  assert.equal(h.operator.pendingCommittables().length, 1, "the committable stays pending");
  await h.close();
});

Deno.test("SinkWriterOperator fails the job without restarts on a known failure, naming sink, subtask and checkpoint", async () => {
  const sink = new RecordingSink();
  const cause = new Error("records 5-9 expired from stream 'bills'");
  sink.decide = (r) => r.signalFailedWithKnownReason(cause);
  const h = await open(sink, { subtaskIndex: 1, parallelism: 2 });
  h.processElement(1, undefined);
  await h.snapshot(7);
  await assert.rejects(h.operator.notifyCheckpointComplete(7), (e: unknown) => {
    assert.ok(e instanceof SuppressRestartsError);
    assert.equal(e.cause, cause);
    assert.match(
      e.message,
      /^Cannot commit a committable of checkpoint 7 in sink 'recording sink' \(uid out\) subtask 1\/2 attempt 0 checkpoint 7: records 5-9 expired from stream 'bills'\. The committer signalled a known reason/,
    );
    return true;
  });
  await h.close();
});

Deno.test("SinkWriterOperator fails the attempt on an unknown failure and keeps the committable for the restore", async () => {
  const sink = new RecordingSink();
  const cause = new Error("connection reset");
  sink.decide = (r) => r.signalFailedWithUnknownReason(cause);
  const h = await open(sink);
  h.processElement(1, undefined);
  const snapshot = await h.snapshot(2);
  await assert.rejects(h.operator.notifyCheckpointComplete(2), (e: unknown) => {
    assert.ok(e instanceof Error && !(e instanceof SuppressRestartsError));
    assert.equal(e.cause, cause);
    assert.match(
      e.message,
      /checkpoint 2 .*: connection reset\. The attempt fails; the restore commits/,
    );
    return true;
  });
  await h.close();
  // The restore commits it.
  sink.decide = commitUnless(sink, () => false);
  const restored = await open(sink, { restore: restoreOf([snapshot], 2, 1, 0) });
  assert.deepEqual(sink.visible(), [1]);
  await restored.close();
});

Deno.test("SinkWriterOperator fails the attempt when the committer throws, keeping the cause chain", async () => {
  const sink = new RecordingSink();
  const inner = new SuppressRestartsError("the target was dropped");
  sink.decide = () => {
    throw new Error("commit failed", { cause: inner });
  };
  const h = await open(sink);
  h.processElement(1, undefined);
  await h.snapshot(1);
  await assert.rejects(h.operator.notifyCheckpointComplete(1), (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.match(
      e.message,
      /^Cannot commit the committables of checkpoint\(s\) 1 in .*: the committer threw \(commit failed\)/,
    );
    assert.equal(
      (e.cause as Error).cause,
      inner,
      "a SuppressRestartsError in the chain still stops restarts",
    );
    return true;
  });
  await h.close();
});

Deno.test("SinkWriterOperator commits restored committables before it creates the writer, spread over the new subtasks", async () => {
  const before = new RecordingSink();
  const snapshots: TakenSnapshot[] = [];
  for (const subtask of [0, 1]) {
    const h = await open(before, { subtaskIndex: subtask, parallelism: 2 });
    h.processElement(subtask * 10, undefined);
    await h.snapshot(1);
    h.processElement(subtask * 10 + 1, undefined);
    await h.operator.notifyCheckpointAborted(1);
    snapshots.push(await h.snapshot(2));
    await h.close();
  }
  assert.deepEqual(before.visible(), [], "nothing committed before the restore");
  // 2 -> 3: four committables and two writer states, each to exactly one new subtask.
  const after = new RecordingSink();
  after.decide = commitUnless(after, () => false);
  const states: number[][] = [];
  for (const subtask of [0, 1, 2]) {
    const h = await open(after, {
      subtaskIndex: subtask,
      parallelism: 3,
      restore: restoreOf(snapshots, 2, 3, subtask),
    });
    states.push(after.restoredStates.at(-1)!);
    await h.close();
  }
  assert.deepEqual(after.visible(), [0, 1, 10, 11]);
  assert.deepEqual(states.flat().sort(), [2, 2], "each writer state reaches one new writer");
  const firstWriter = after.log.indexOf("createWriter 0 restored 2");
  assert.ok(
    after.log.indexOf("commit 1") < firstWriter,
    `commits come first: ${after.log.join(", ")}`,
  );
  assert.deepEqual(after.requests.map((r) => r.checkpointId).sort(), [1, 1, 2, 2]);
});

Deno.test("SinkWriterOperator refuses a corrupt checkpoint with a SinkStateError, which stops restarts", async (t) => {
  const sink = new RecordingSink();
  const restoreWith = (operator: OperatorStateSnapshot): OperatorRestore =>
    operatorRestore(operator, { checkpointId: 3 });
  const cases: [string, OperatorStateSnapshot, RegExp][] = [
    [
      "a pending entry that is not an object",
      { [PENDING_COMMITTABLES_STATE]: { mode: "split", items: [42] } },
      /^Invalid pending committable 0 of sink 'recording sink' \(uid out\) subtask 0\/1 attempt 0 checkpoint 3 in checkpoint: entry must be an object \{ checkpointId, committable \}: current value is 42$/,
    ],
    [
      "a pending entry without a checkpoint id",
      {
        [PENDING_COMMITTABLES_STATE]: {
          mode: "split",
          items: [{ checkpointId: "x", committable: {} }],
        },
      },
      /field 'checkpointId' must be an integer >= 0: current value is "x"/,
    ],
    [
      "a committable the sink rejects",
      {
        [PENDING_COMMITTABLES_STATE]: {
          mode: "split",
          items: [{ checkpointId: 2, committable: { records: 5 } }],
        },
      },
      /^Invalid test batch in checkpoint: field 'records' must be an array: current value is 5$/,
    ],
    [
      "a writer state whose check throws a plain error",
      { [WRITER_STATE]: { mode: "split", items: ["many"] } },
      /^Invalid writer state item 0 of sink .* checkpoint 3 in checkpoint: a count must be a number, got "many"$/,
    ],
  ];
  for (const [name, operator, message] of cases) {
    await t.step(name, async () => {
      await assert.rejects(open(sink, { restore: restoreWith(operator) }), (e: unknown) => {
        assert.ok(e instanceof SinkStateError && e instanceof SuppressRestartsError);
        assert.match(e.message, message);
        return true;
      });
    });
  }
});

Deno.test("SinkWriterOperator refuses restored committables when the sink has no committer", async () => {
  const sink = new RecordingSink();
  const noCommitter: SinkV2<number, Batch, number> = {
    kind: "v2",
    deliveryGuarantee: "at-least-once",
    createWriter: (c) => sink.createWriter(c),
    checkWriterState: (raw) => sink.checkWriterState(raw),
  };
  const operator: OperatorStateSnapshot = {
    [PENDING_COMMITTABLES_STATE]: {
      mode: "split",
      items: [{ checkpointId: 1, committable: { records: [] } }],
    },
  };
  await assert.rejects(
    open(noCommitter, { restore: operatorRestore(operator) }),
    /the checkpoint holds committables but the sink has no committer and checkCommittable/,
  );
});

Deno.test("SinkWriterOperator refuses a writer that snapshots state when the sink cannot read it back", async () => {
  const sink = new RecordingSink();
  const unreadable: SinkV2<number, Batch, number> = {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    createWriter: (c) => sink.createWriter(c),
    createCommitter: () => sink.createCommitter(),
    checkCommittable: (raw) => sink.checkCommittable(raw),
  };
  await assert.rejects(open(unreadable), (e: unknown) => {
    assert.ok(e instanceof SuppressRestartsError);
    assert.match(e.message, /snapshots state but the sink has no checkWriterState/);
    return true;
  });
});

Deno.test("SinkWriterOperator fails the job when a writer without a committer returns committables", async () => {
  const sink = new RecordingSink();
  const noCommitter: SinkV2<number, Batch, number> = {
    kind: "v2",
    deliveryGuarantee: "at-least-once",
    createWriter: (c) => sink.createWriter(c),
    checkWriterState: (raw) => sink.checkWriterState(raw),
  };
  const h = await open(noCommitter);
  h.processElement(1, undefined);
  await assert.rejects(h.snapshot(5), (e: unknown) => {
    assert.ok(e instanceof SuppressRestartsError);
    assert.match(e.message, /returned 1 committable\(s\) but the sink has no committer/);
    return true;
  });
  await h.close();
});

Deno.test("SinkWriterOperator flushes with endOfInput once at the end and not again at the final checkpoint", async () => {
  const sink = new RecordingSink();
  const h = await open(sink);
  h.processElement(1, undefined);
  await h.snapshot(1);
  await h.operator.endInput();
  await h.snapshot(2);
  assert.deepEqual(sink.log.filter((l) => l.startsWith("flush")), ["flush false", "flush true"]);
  await h.close();
});

Deno.test("SinkWriterOperator runs overlapping completion notifications one round after the other", async () => {
  const sink = new RecordingSink();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const slow: SinkV2<number, Batch, number> = {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    createWriter: (c) => sink.createWriter(c),
    createCommitter: () => ({
      commit: async (requests) => {
        if (requests.some((r) => r.checkpointId === 1)) await gate;
        for (const r of requests) sink.committed.push(r.committable);
      },
      close: () => {},
    }),
    checkCommittable: (raw) => sink.checkCommittable(raw),
    checkWriterState: (raw) => sink.checkWriterState(raw),
  };
  const h = await open(slow);
  for (const [n, value] of [[1, 1], [2, 2], [3, 3]]) {
    h.processElement(value!, undefined);
    await h.snapshot(n);
  }
  const first = h.operator.notifyCheckpointComplete(1);
  const second = h.operator.notifyCheckpointComplete(3);
  release();
  await Promise.all([first, second]);
  assert.deepEqual(
    sink.committed.map((b) => b.checkpointId),
    [1, 2, 3],
    "each committable once, in order",
  );
  assert.deepEqual(h.operator.pendingCommittables(), []);
  await h.close();
});
