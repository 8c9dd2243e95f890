import assert from "node:assert/strict";
import { type CommitOutcome, CommitRequestImpl } from "../../runtime/task/operators/sink_commit.ts";
import type { SinkWriter, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import { DateTimeBucketAssigner } from "./bucket_assigner.ts";
import { parseCsv } from "./csv.ts";
import { FileSink, FileSinkConfigurationError } from "./file_sink.ts";
import { decideFileCommit, FileCommitError } from "./file_sink_committer.ts";
import type { FileSinkCommittable, FileSinkWriterState } from "./file_sink_state.ts";
import { DefaultRollingPolicy, OnCheckpointRollingPolicy } from "./rolling_policy.ts";
import { csvEncoder, jsonLinesEncoder, lineEncoder, RecordEncodingError } from "./row_encoders.ts";

type Writer<T> = SinkWriter<T, FileSinkCommittable, FileSinkWriterState>;

function context(
  overrides: Partial<WriterInitContext<FileSinkWriterState>> = {},
): WriterInitContext<FileSinkWriterState> {
  return {
    subtaskIndex: 0,
    parallelism: 1,
    attempt: 0,
    uid: "out",
    jobId: "job-f",
    restoredCheckpointId: undefined,
    restoredState: [],
    checkpointingMode: "exactly-once",
    ...overrides,
  };
}

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "weir_file_sink_test_" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every file under `dir`, relative, sorted; in-progress names lose their random part. */
async function listFiles(dir: string, sub = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(sub === "" ? dir : `${dir}/${sub}`)) {
    const path = sub === "" ? entry.name : `${sub}/${entry.name}`;
    if (entry.isDirectory) out.push(...await listFiles(dir, path));
    else out.push(path.replace(/\.inprogress\.[0-9a-f]{8}$/, ".inprogress.*"));
  }
  return out.sort();
}

async function commitAll<T>(
  sink: FileSink<T>,
  checkpointId: number,
  committables: readonly FileSinkCommittable[],
): Promise<CommitOutcome[]> {
  const committer = sink.createCommitter({ ...context(), restoredCheckpointId: undefined });
  const requests = committables.map((c) =>
    new CommitRequestImpl({ checkpointId, committable: c }, 0)
  );
  await committer.commit(requests as never);
  await committer.close();
  return requests.map((r) => r.seal());
}

async function writeAll<T>(writer: Writer<T>, values: readonly T[]): Promise<void> {
  for (const value of values) await writer.write(value, { timestamp: undefined });
}

Deno.test("FileSink writes hidden in-progress files, pending at prepareCommit, finished on commit", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<[string, number]>({
      path: dir,
      encoder: csvEncoder({ header: ["name", "n"], toFields: (r) => r }),
    });
    const writer = await sink.createWriter(context());
    await writeAll(writer, [["a,b", 1], ['say "x"', 2]]);
    assert.deepEqual(await listFiles(dir), [".part-out-0-0.csv.inprogress.*"]);
    const committables = await writer.prepareCommit!(1);
    assert.deepEqual(committables, [{
      pendingPath: ".part-out-0-0.csv.pending",
      finalPath: "part-out-0-0.csv",
      sizeBytes: 32,
    }]);
    assert.deepEqual(await writer.snapshotState!(1), [{ subtask: 0, nextCounter: 1 }]);
    assert.deepEqual(await listFiles(dir), [".part-out-0-0.csv.pending"]);
    await writeAll(writer, [["c", 3]]);
    assert.deepEqual((await commitAll(sink, 1, committables)).map((o) => o.kind), ["committed"]);
    assert.deepEqual(await listFiles(dir), [".part-out-0-1.csv.inprogress.*", "part-out-0-0.csv"]);
    assert.deepEqual(parseCsv(await Deno.readTextFile(`${dir}/part-out-0-0.csv`)), [
      ["name", "n"],
      ["a,b", "1"],
      ['say "x"', "2"],
    ]);
    // A replayed commit finds the finished file.
    assert.deepEqual((await commitAll(sink, 1, committables)).map((o) => o.kind), [
      "already-committed",
    ]);
    await writer.close();
  });
});

Deno.test("FileSink rolls on size before the record that finds the part full, and on age and inactivity", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(1_000);
    const sink = new FileSink<string>({
      path: dir,
      encoder: lineEncoder<string>(),
      rollingPolicy: new DefaultRollingPolicy({
        maxPartSizeBytes: 10,
        rolloverIntervalMs: 5_000,
        inactivityIntervalMs: 2_000,
      }),
      clock,
      checkIntervalMs: 500,
    });
    const writer = await sink.createWriter(context());
    await writeAll(writer, ["12345", "1234", "x"]); // 6 + 5 = 11 bytes >= 10: "x" opens part 1
    clock.advance(1_500);
    await writeAll(writer, ["y"]);
    clock.advance(1_999); // part 1 idle for 1999 ms: stays
    await writer.flush(false);
    clock.advance(1); // idle 2000 ms: rolls at the flush
    await writer.flush(false);
    await writeAll(writer, ["z"]);
    for (const value of ["w", "u", "t"]) {
      clock.advance(1_500); // written to every 1500 ms: never inactive for 2000 ms
      await writeAll(writer, [value]);
    }
    clock.advance(500); // part 2 is 5000 ms old: the next write rolls it first
    await writeAll(writer, ["v"]);
    const committables = await writer.prepareCommit!(1);
    assert.deepEqual(
      committables.map((c) => [c.finalPath, c.sizeBytes]),
      [["part-out-0-0.txt", 11], ["part-out-0-1.txt", 4], ["part-out-0-2.txt", 8], [
        "part-out-0-3.txt",
        2,
      ]],
    );
    await commitAll(sink, 1, committables);
    assert.equal(await Deno.readTextFile(`${dir}/part-out-0-1.txt`), "x\ny\n");
    assert.equal(await Deno.readTextFile(`${dir}/part-out-0-2.txt`), "z\nw\nu\nt\n");
    await writer.close();
  });
});

Deno.test("FileSink with the on-checkpoint policy writes one part file per bucket per checkpoint", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(Date.UTC(2024, 2, 1, 17, 59, 59));
    const sink = new FileSink<{ n: number }>({
      path: dir,
      encoder: jsonLinesEncoder(),
      rollingPolicy: new OnCheckpointRollingPolicy(),
      bucketAssigner: new DateTimeBucketAssigner(),
      clock,
    });
    const writer = await sink.createWriter(context({ subtaskIndex: 1, parallelism: 2 }));
    await writeAll(writer, [{ n: 1 }, { n: 2 }]);
    clock.advance(1_000);
    await writeAll(writer, [{ n: 3 }]);
    const committables = await writer.prepareCommit!(4);
    await commitAll(sink, 4, committables);
    assert.deepEqual(await listFiles(dir), [
      "2024-03-01--17/part-out-1-0.jsonl",
      "2024-03-01--18/part-out-1-1.jsonl",
    ]);
    assert.equal(
      await Deno.readTextFile(`${dir}/2024-03-01--17/part-out-1-0.jsonl`),
      '{"n":1}\n{"n":2}\n',
    );
    await writer.close();
  });
});

Deno.test("FileSink restores after a crash: in-progress files discarded, later pending files discarded, counter continued", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<string>({ path: dir, encoder: lineEncoder<string>() });
    // Incarnation 1: checkpoint 1 pre-commits part 0; checkpoint 2 pre-commits part 1 but never
    // completes; part 2 is in progress when the process dies.
    const first = await sink.createWriter(context());
    await writeAll(first, ["a", "b"]);
    const cp1 = await first.prepareCommit!(1);
    const state1 = await first.snapshotState!(1);
    await writeAll(first, ["c"]);
    await first.prepareCommit!(2);
    await writeAll(first, ["d"]);
    await first.close(); // the crash: nothing renamed, nothing committed
    assert.deepEqual(await listFiles(dir), [
      ".part-out-0-0.txt.pending",
      ".part-out-0-1.txt.pending",
      ".part-out-0-2.txt.inprogress.*",
    ]);
    // Restore checkpoint 1: its committables are committed first, then the writer starts.
    const restoredCommittables = cp1.map((c) => sink.checkCommittable(structuredClone(c)));
    assert.deepEqual((await commitAll(sink, 1, restoredCommittables)).map((o) => o.kind), [
      "committed",
    ]);
    const second = await sink.createWriter(context({
      attempt: 1,
      restoredCheckpointId: 1,
      restoredState: state1.map((s) => sink.checkWriterState(structuredClone(s))),
    }));
    assert.deepEqual(await listFiles(dir), ["part-out-0-0.txt"]);
    await writeAll(second, ["c", "d"]);
    const cp2 = await second.prepareCommit!(2);
    assert.deepEqual(
      cp2.map((c) => c.finalPath),
      ["part-out-0-3.txt"],
      "counters 1 and 2 are not reused",
    );
    await commitAll(sink, 2, cp2);
    assert.equal(await Deno.readTextFile(`${dir}/part-out-0-0.txt`), "a\nb\n");
    assert.equal(await Deno.readTextFile(`${dir}/part-out-0-3.txt`), "c\nd\n");
    await second.close();
  });
});

Deno.test("FileSink cleans up across rescaling: 2 to 1 discards subtask 1's orphans, 1 to 3 continues counters from disk", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<string>({ path: dir, encoder: lineEncoder<string>() });
    const a = await sink.createWriter(context({ parallelism: 2 }));
    const b = await sink.createWriter(context({ subtaskIndex: 1, parallelism: 2 }));
    await writeAll(a, ["a1"]);
    await writeAll(b, ["b1"]);
    const cpA = await a.prepareCommit!(1);
    const cpB = await b.prepareCommit!(1);
    const states = [...await a.snapshotState!(1), ...await b.snapshotState!(1)];
    await writeAll(a, ["a2"]);
    await writeAll(b, ["b2"]);
    await b.prepareCommit!(2); // pending for checkpoint 2, which never completes
    await writeAll(b, ["b3"]);
    await a.close();
    await b.close();
    // Restore checkpoint 1 at parallelism 1: subtask 0 gets both states and both committables.
    await commitAll(sink, 1, [...cpA, ...cpB]);
    const merged = await sink.createWriter(context({
      attempt: 1,
      restoredCheckpointId: 1,
      restoredState: states,
    }));
    assert.deepEqual(await listFiles(dir), ["part-out-0-0.txt", "part-out-1-0.txt"]);
    await writeAll(merged, ["m"]);
    const cp2 = await merged.prepareCommit!(2);
    const state2 = await merged.snapshotState!(2);
    await commitAll(sink, 2, cp2);
    await merged.close();
    // Restore checkpoint 2 at parallelism 3: subtasks 1 and 2 get no state.
    const wide = await Promise.all(
      [0, 1, 2].map((i) =>
        sink.createWriter(context({
          subtaskIndex: i,
          parallelism: 3,
          attempt: 2,
          restoredCheckpointId: 2,
          restoredState: i === 0 ? state2 : [],
        }))
      ),
    );
    for (const [i, writer] of wide.entries()) await writeAll(writer, [`w${i}`]);
    const names = (await Promise.all(wide.map((w) => w.prepareCommit!(3)))).flat().map((c) =>
      c.finalPath
    );
    assert.deepEqual(names, ["part-out-0-3.txt", "part-out-1-1.txt", "part-out-2-0.txt"]);
    for (const writer of wide) await writer.close();
  });
});

Deno.test("FileSink's committer fails without restarts for a lost or changed part file", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<string>({ path: dir, encoder: lineEncoder<string>() });
    const [lost] = await commitAll(sink, 7, [{
      pendingPath: ".part-out-0-9.txt.pending",
      finalPath: "part-out-0-9.txt",
      sizeBytes: 4,
    }]);
    assert.ok(lost?.kind === "failed-known" && lost.error instanceof FileCommitError);
    assert.equal(
      (lost as { error: Error }).error.message,
      "FileSink out#0 of job job-f: cannot commit the part file of checkpoint 7: neither the pending file " +
        "'.part-out-0-9.txt.pending' nor the finished file 'part-out-0-9.txt' exists: the 4 bytes pre-committed there are lost",
    );
    await Deno.writeTextFile(`${dir}/.part-out-0-8.txt.pending`, "abc\n");
    const [changed] = await commitAll(sink, 7, [{
      pendingPath: ".part-out-0-8.txt.pending",
      finalPath: "part-out-0-8.txt",
      sizeBytes: 9,
    }]);
    assert.equal(changed?.kind, "failed-known");
    assert.ok(await Deno.stat(`${dir}/.part-out-0-8.txt.pending`), "nothing renamed");
  });
  const c = { pendingPath: ".p.pending", finalPath: "p", sizeBytes: 3 };
  assert.deepEqual(decideFileCommit(c, { pendingSize: 3, finalSize: undefined }), {
    kind: "rename",
  });
  assert.deepEqual(decideFileCommit(c, { pendingSize: undefined, finalSize: 3 }), {
    kind: "already-committed",
  });
  for (
    const facts of [
      { pendingSize: 3, finalSize: 3 },
      { pendingSize: 2, finalSize: undefined },
      { pendingSize: undefined, finalSize: 4 },
      { pendingSize: undefined, finalSize: undefined },
    ]
  ) {
    assert.equal(decideFileCommit(c, facts).kind, "fail", JSON.stringify(facts));
  }
});

Deno.test("FileSink runs without checkpointing (a bounded job's final checkpoint commits it) and declares it commits only at checkpoints", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<string>({ path: dir, encoder: lineEncoder<string>() });
    assert.equal(sink.commitsOnlyAtCheckpoints, true);
    const writer = await sink.createWriter(context({ checkpointingMode: "none" }));
    await writer.write("one", { timestamp: undefined });
    await writer.flush(true);
    const committables = await writer.prepareCommit!(1);
    assert.equal(committables.length, 1);
    await writer.close();
  });
});

Deno.test("FileSink refuses an unusable uid, and records its format cannot hold", async () => {
  await withDir(async (dir) => {
    const sink = new FileSink<string>({ path: dir, encoder: lineEncoder<string>() });
    assert.throws(
      () => sink.createWriter(context({ uid: "a/b" })),
      (e: unknown) =>
        e instanceof FileSinkConfigurationError && e instanceof SuppressRestartsError &&
        /the uid must be letters, digits, '_', '-' or '\.' to be part of file names, or set 'partPrefix': current uid is "a\/b"/
          .test(e.message),
    );
    const writer = await sink.createWriter(context());
    assert.throws(
      () => writer.write("two\nlines", { timestamp: undefined }),
      (e: unknown) =>
        e instanceof RecordEncodingError &&
        e.message ===
          'Line format: a record\'s line must be a string without CR or LF: current value is "two\\nlines"',
    );
    await writer.close();
  });
  assert.throws(
    () =>
      new FileSink<string>({ path: "x", encoder: lineEncoder<string>(), partPrefix: ".hidden" }),
    /'partPrefix' must be non-empty letters, digits, '_', '-' or '\.', not starting with '\.': current value is "\.hidden"/,
  );
  assert.throws(
    () =>
      new FileSink<string>({
        path: "x",
        encoder: lineEncoder<string>(),
        deliveryGuarantee: "none",
      }),
    /FileSink cannot give deliveryGuarantee "none"/,
  );
});
