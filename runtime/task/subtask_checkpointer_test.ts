import assert from "node:assert/strict";
import { join } from "node:path";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { SnapshotResult, StateWriter } from "../checkpoint/snapshot_contract.ts";
import { EMPTY_SNAPSHOT, INLINE_BYTES_PER_ACK_LIMIT } from "../checkpoint/snapshot_contract.ts";
import type { SubtaskAck } from "../checkpoint/types.ts";
import type { StreamOperator } from "./operators/operator.ts";
import type { ChannelEvent, CoordinatorMessage, MessageBody } from "./messages.ts";
import { type CheckpointRequest, SubtaskCheckpointer } from "./subtask_checkpointer.ts";

/** A participant writing `bytes` (default: `name` in UTF-8) under `name` (privately or shared), after `gate` resolves. */
function participant(
  name: string,
  options: {
    bytes?: Uint8Array;
    shared?: boolean;
    gate?: Promise<void>;
    fail?: Error;
    kind?: "operator" | "watermark" | "keyed-incremental";
    uid?: string;
  } = {},
): SnapshotResult & { discarded: boolean } {
  const result = {
    discarded: false,
    async write(writer: StateWriter) {
      await options.gate;
      if (options.fail) throw options.fail;
      if (writer.cancelled) return [];
      const bytes = options.bytes ?? new TextEncoder().encode(name);
      const write = options.shared ? writer.writeShared : writer.writePrivate;
      return [
        await write.call(writer, name, bytes, options.kind ?? "operator", options.uid ?? "op"),
      ];
    },
    discard() {
      result.discarded = true;
    },
  };
  return result;
}

/** An operator whose snapshot returns `results`, recording the call order. */
function operator(
  uid: string,
  results: SnapshotResult[] | (() => never),
  log: string[],
): StreamOperator {
  return {
    uid,
    quiesce: () => {
      log.push(`quiesce ${uid}`);
      return Promise.resolve();
    },
    snapshotState: (id: number, _ts: number, type: string) => {
      log.push(`snapshot ${uid} ${id} ${type}`);
      return Promise.resolve(typeof results === "function" ? results() : results);
    },
  } as unknown as StreamOperator;
}

async function withCheckpointer(
  fn: (ctx: {
    checkpointer: SubtaskCheckpointer;
    storage: LocalDirectoryCheckpointStorage;
    dir: string;
    reports: MessageBody<CoordinatorMessage>[];
    done: { value: boolean };
  }) => Promise<void>,
  /** Storage writes for every private blob unless a test asks for inline state. */
  memoryThresholdBytes = 0,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "weir-checkpointer-" });
  const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
  const reports: MessageBody<CoordinatorMessage>[] = [];
  const done = { value: false };
  const checkpointer = new SubtaskCheckpointer({
    jobId: "job-1",
    attempt: 2,
    vertexId: "v3",
    subtask: 1,
    storage,
    taskName: "Map (2/2)",
    report: (body) => reports.push(body),
    isDone: () => done.value,
    memoryThresholdBytes,
  });
  try {
    await fn({ checkpointer, storage, dir, reports, done });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const request = (checkpointId: number, type: "checkpoint" | "savepoint" = "checkpoint") =>
  ({ checkpointId, timestamp: 1_000, type, alignmentDurationMs: 3 }) satisfies CheckpointRequest;

Deno.test("SubtaskCheckpointer quiesces, forwards the barrier, captures every operator, then acks every handle", async () => {
  await withCheckpointer(async ({ checkpointer, storage, reports }) => {
    const log: string[] = [];
    const barriers: ChannelEvent[] = [];
    const writers = [{
      broadcastEvent: (e: ChannelEvent) => (log.push("barrier"), barriers.push(e)),
    }];
    await checkpointer.checkpointState(request(4), {
      operators: [
        operator("src", [participant("splits", { uid: "src" })], log),
        operator(
          "map",
          [EMPTY_SNAPSHOT, participant("wm", { kind: "watermark", uid: "map" })],
          log,
        ),
      ],
      writers,
    });
    assert.deepEqual(log, [
      "quiesce src",
      "quiesce map",
      "barrier",
      "snapshot src 4 checkpoint",
      "snapshot map 4 checkpoint",
    ]);
    assert.deepEqual(barriers, [{ k: "barrier", id: 4, ts: 1_000, type: "checkpoint" }]);
    await checkpointer.waitForAll();
    assert.equal(reports.length, 1);
    const ack = (reports[0] as { t: "ack"; ack: SubtaskAck }).ack;
    assert.deepEqual(ack.handles.map((h) => [h.path, h.kind, h.uid, h.shared]), [
      ["chk-4/v3-1-a2.splits", "operator", "src", false],
      ["chk-4/v3-1-a2.wm", "watermark", "map", false],
    ]);
    assert.deepEqual(ack.stateUids, ["src"], "a watermark floor alone is no state");
    assert.equal(ack.stateBytes, "splits".length + "wm".length);
    assert.equal(ack.alignmentDurationMs, 3);
    assert.equal(ack.attempt, 2);
    assert.ok(ack.syncDurationMs >= 0 && ack.asyncDurationMs >= 0);
    const bytes = await storage.readState("job-1", ack.handles[0]!);
    assert.equal(new TextDecoder().decode(bytes), "splits");
  });
});

Deno.test("SubtaskCheckpointer writes shared blobs into the shared namespace and refuses them in a savepoint", async () => {
  await withCheckpointer(async ({ checkpointer, storage, reports }) => {
    const writers: { broadcastEvent(e: ChannelEvent): void }[] = [];
    const incremental = () => participant("delta-1", { shared: true, kind: "keyed-incremental" });
    await checkpointer.checkpointState(request(5), {
      operators: [operator("count", [incremental()], [])],
      writers,
    });
    await checkpointer.waitForAll();
    const ack = (reports[0] as { t: "ack"; ack: SubtaskAck }).ack;
    assert.deepEqual(ack.handles.map((h) => [h.path, h.shared]), [[
      "shared/v3-1-a2.delta-1",
      true,
    ]]);
    assert.deepEqual(await storage.listShared("job-1"), ["shared/v3-1-a2.delta-1"]);

    await checkpointer.checkpointState(request(6, "savepoint"), {
      operators: [operator("count", [incremental()], [])],
      writers,
    });
    await checkpointer.waitForAll();
    const decline = reports[1] as { t: "decline"; id: number; code: string; reason: string };
    assert.equal(decline.t, "decline");
    assert.equal(decline.id, 6);
    assert.equal(decline.code, "DECLINED");
    assert.match(
      decline.reason,
      /Asynchronous part of savepoint 6 failed in Map \(2\/2\): Savepoint 6 cannot write shared blob 'delta-1' of operator op \(kind keyed-incremental\): a savepoint must be self-contained/,
    );
  });
});

Deno.test("SubtaskCheckpointer declines when a write fails, discarding every capture and removing what was written", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports }) => {
    const ok = participant("fine");
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const failing = participant("broken", { gate, fail: new Error("disk on fire") });
    await checkpointer.checkpointState(request(7), {
      operators: [operator("a", [ok, failing], [])],
      writers: [],
    });
    await new Promise((r) => setTimeout(r, 50)); // "fine" is written meanwhile
    release();
    await checkpointer.waitForAll();
    assert.equal(reports.length, 1);
    const decline = reports[0] as { t: "decline"; reason: string };
    assert.equal(decline.t, "decline");
    assert.match(decline.reason, /checkpoint 7 failed in Map \(2\/2\): disk on fire/);
    assert.ok(ok.discarded && failing.discarded);
    await assert.rejects(Deno.stat(join(dir, "job-1", "chk-7")), Deno.errors.NotFound);
  });
});

Deno.test("SubtaskCheckpointer acks nothing for an aborted checkpoint, removes its private files and keeps its shared blobs (a backend may reuse them; the registry decides)", async () => {
  await withCheckpointer(async ({ checkpointer, storage, dir, reports }) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    // Written before the abort arrives; the slow one finishes after it.
    const early = participant("early");
    const earlyShared = participant("early-shared", { shared: true, kind: "keyed-incremental" });
    const late = participant("late", { gate });
    await checkpointer.checkpointState(request(8), {
      operators: [operator("a", [early, earlyShared, late], [])],
      writers: [],
    });
    await new Promise((r) => setTimeout(r, 50));
    checkpointer.abort(8);
    release();
    await checkpointer.waitForAll();
    assert.deepEqual(reports, [], "no ack, no decline: the coordinator aborted it");
    await assert.rejects(Deno.stat(join(dir, "job-1", "chk-8")), Deno.errors.NotFound);
    // The changelog backend refers to a segment again once it was written,
    // even when the checkpoint that wrote it was aborted: deleting it here
    // would break the next checkpoint's restore.
    assert.deepEqual(await storage.listShared("job-1"), ["shared/v3-1-a2.early-shared"]);
    assert.ok(early.discarded && late.discarded);
  });
});

Deno.test("SubtaskCheckpointer keeps a subsumed checkpoint cancelled while its write runs: the later completion does not revive it (no ack, no stray folder)", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports }) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const slow = participant("slow", { gate });
    await checkpointer.checkpointState(request(11), {
      operators: [operator("a", [slow], [])],
      writers: [],
    });
    // Checkpoint 12 completes first: the coordinator aborts (subsumes) 11,
    // discards its folder, then notifies 12 complete, in that order.
    checkpointer.abort(11);
    checkpointer.completed(12);
    release();
    await checkpointer.waitForAll();
    assert.deepEqual(reports, [], "no ack of the subsumed checkpoint");
    await assert.rejects(Deno.stat(join(dir, "job-1", "chk-11")), Deno.errors.NotFound);
    assert.ok(slow.discarded);
  });
});

Deno.test("SubtaskCheckpointer declines nothing when the write of an aborted checkpoint fails (its folder was discarded under it)", async () => {
  await withCheckpointer(async ({ checkpointer, reports }) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const failing = participant("state", {
      gate,
      fail: new Error("No such file or directory (os error 2): rename"),
    });
    await checkpointer.checkpointState(request(13), {
      operators: [operator("a", [failing], [])],
      writers: [],
    });
    checkpointer.abort(13);
    release();
    await checkpointer.waitForAll();
    assert.deepEqual(reports, [], "a decline of an aborted checkpoint is noise");
    assert.ok(failing.discarded);
  });
});

Deno.test("SubtaskCheckpointer writes nothing once the subtask is done", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports, done }) => {
    const p = participant("x");
    await checkpointer.checkpointState(request(9), {
      operators: [operator("a", [p], [])],
      writers: [],
    });
    done.value = true;
    await checkpointer.waitForAll();
    assert.deepEqual(reports, []);
    assert.ok(p.discarded);
    await assert.rejects(Deno.stat(join(dir, "job-1", "chk-9")), Deno.errors.NotFound);
  });
});

Deno.test("SubtaskCheckpointer refuses a blob name written twice in one checkpoint, naming it", async () => {
  await withCheckpointer(async ({ checkpointer, reports }) => {
    await checkpointer.checkpointState(request(10), {
      operators: [
        operator("a", [participant("same")], []),
        operator("b", [participant("same")], []),
      ],
      writers: [],
    });
    await checkpointer.waitForAll();
    const decline = reports[0] as { t: "decline"; reason: string };
    assert.equal(decline.t, "decline");
    assert.match(
      decline.reason,
      /Checkpoint 10: private blob 'v3-1-a2.same' is written twice \(two state participants use the name 'same'\)/,
    );
  });
});

Deno.test("SubtaskCheckpointer discards the captures taken so far when an operator's snapshot throws, and rethrows", async () => {
  await withCheckpointer(async ({ checkpointer, reports }) => {
    const first = participant("first");
    await assert.rejects(
      checkpointer.checkpointState(request(11), {
        operators: [
          operator("a", [first], []),
          operator("b", () => {
            throw new Error("pre-commit failed");
          }, []),
        ],
        writers: [],
      }),
      /pre-commit failed/,
    );
    assert.ok(first.discarded);
    await checkpointer.waitForAll();
    assert.deepEqual(reports, []);
  });
});

/** Every private blob the storage holds for checkpoint `id` of job-1 (names only). */
async function storedNames(dir: string, id: number): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(join(dir, "job-1", `chk-${id}`))) names.push(e.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}

Deno.test("SubtaskCheckpointer keeps private blobs below the memory threshold inline and writes the rest", async () => {
  await withCheckpointer(async ({ checkpointer, storage, dir, reports }) => {
    const below = new Uint8Array(99).fill(7);
    const atThreshold = new Uint8Array(100).fill(8);
    // A view into a larger buffer: the inline copy must hold the view only.
    const view = new Uint8Array(1000).fill(9).subarray(10, 20);
    await checkpointer.checkpointState(request(7), {
      operators: [operator("op", [
        participant("small", { bytes: below }),
        participant("large", { bytes: atThreshold }),
        participant("view", { bytes: view, kind: "watermark" }),
        participant("delta", { shared: true, kind: "keyed-incremental", bytes: below }),
      ], [])],
      writers: [],
    });
    await checkpointer.waitForAll();
    const ack = (reports[0] as { t: "ack"; ack: SubtaskAck }).ack;
    const byPath = new Map(ack.handles.map((h) => [h.path, h]));
    const small = byPath.get("chk-7/v3-1-a2.small")!;
    assert.deepEqual(small.inline, below);
    assert.equal(small.bytes, 99);
    assert.equal(small.shared, false);
    const v = byPath.get("chk-7/v3-1-a2.view")!;
    assert.deepEqual(v.inline, new Uint8Array(10).fill(9));
    assert.equal(v.inline!.buffer.byteLength, 10, "a copy of the view, not its whole buffer");
    assert.equal(byPath.get("chk-7/v3-1-a2.large")!.inline, undefined, "not below the threshold");
    const shared = byPath.get("shared/v3-1-a2.delta")!;
    assert.equal(shared.inline, undefined, "shared blobs are never inline");
    assert.deepEqual(await storedNames(dir, 7), ["v3-1-a2.large"]);
    assert.deepEqual(await storage.listShared("job-1"), ["shared/v3-1-a2.delta"]);
    assert.equal(ack.stateBytes, 99 + 100 + 10 + 99, "inline bytes count as state");
  }, 100);
});

Deno.test("SubtaskCheckpointer writes every blob to storage with memory threshold 0", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports }) => {
    await checkpointer.checkpointState(request(8), {
      operators: [
        operator("op", [participant("a"), participant("b", { bytes: new Uint8Array(0) })], []),
      ],
      writers: [],
    });
    await checkpointer.waitForAll();
    const ack = (reports[0] as { t: "ack"; ack: SubtaskAck }).ack;
    assert.ok(ack.handles.every((h) => h.inline === undefined));
    assert.deepEqual(await storedNames(dir, 8), ["v3-1-a2.a", "v3-1-a2.b"]);
  }, 0);
});

Deno.test("SubtaskCheckpointer caps the inline bytes of one ack and writes blobs beyond the cap to storage", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports }) => {
    // Blobs just under the threshold; the cap admits floor(limit / size) of them.
    const size = INLINE_BYTES_PER_ACK_LIMIT / 4 - 1;
    const results = Array.from(
      { length: 6 },
      (_, i) => participant(`p${i}`, { bytes: new Uint8Array(size).fill(i) }),
    );
    await checkpointer.checkpointState(request(9), {
      operators: [operator("op", results, [])],
      writers: [],
    });
    await checkpointer.waitForAll();
    const ack = (reports[0] as { t: "ack"; ack: SubtaskAck }).ack;
    const inline = ack.handles.filter((h) => h.inline !== undefined);
    assert.equal(inline.length, 4);
    const inlineBytes = inline.reduce((n, h) => n + h.bytes, 0);
    assert.ok(inlineBytes <= INLINE_BYTES_PER_ACK_LIMIT, `${inlineBytes} inline bytes`);
    assert.equal((await storedNames(dir, 9)).length, 2);
    assert.equal(ack.handles.length, 6);
  }, INLINE_BYTES_PER_ACK_LIMIT / 4);
});

Deno.test("SubtaskCheckpointer writes nothing to storage for an aborted checkpoint whose blobs were all inline", async () => {
  await withCheckpointer(async ({ checkpointer, dir, reports }) => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Writes even after the abort (no `cancelled` check): the blob is inline.
    const late: SnapshotResult = {
      async write(writer) {
        await gate;
        return [await writer.writePrivate("a", new Uint8Array(3), "operator", "op")];
      },
    };
    await checkpointer.checkpointState(request(10), {
      operators: [operator("op", [late], [])],
      writers: [],
    });
    checkpointer.abort(10);
    open();
    await checkpointer.waitForAll();
    assert.deepEqual(reports, []);
    assert.deepEqual(await storedNames(dir, 10), []);
  }, 1024);
});
