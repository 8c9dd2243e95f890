import { ManualClock } from "../../runtime/time/manual_clock.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { decode, encode } from "../../runtime/actor/codec.ts";
import type { ReaderOutput, SourceReader, SourceReaderContext } from "../../runtime/api/source.ts";
import {
  DEAD_LETTER,
  type DeadLetter,
  DeserializationError,
  FileNotReadableError,
  FileSource,
  type FileSplit,
} from "./file_source.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";

const context: SourceReaderContext = {
  subtaskIndex: 0,
  parallelism: 1,
  attempt: 0,
  operatorName: "lines",
  currentProcessingTime: () => 0,
  clock: new ManualClock(),
};

type Collected<T> = RecordingReaderOutput<T>;

function collector<T>(): Collected<T> {
  return new RecordingReaderOutput<T>();
}

async function drain<T>(
  reader: SourceReader<T, FileSplit>,
  output: ReaderOutput<T>,
): Promise<void> {
  for (let i = 0; i < 100_000; i++) {
    if (await reader.pollNext(output) === "END_OF_INPUT") return;
  }
  throw new Error("the reader never ended");
}

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "weir_file_source_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function readAll<T>(source: FileSource<T>): Promise<Collected<T>> {
  const reader = source.createReader(context);
  reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
  const out = collector<T>();
  try {
    await drain(reader, out);
  } finally {
    await reader.close?.();
  }
  return out;
}

Deno.test("FileSource reads lines across chunks, with CRLF, blank lines and no final newline", async (t) => {
  await withTempDir(async (dir) => {
    const a = join(dir, "a.txt");
    const b = join(dir, "b.txt");
    await Deno.writeTextFile(a, "\ufefffirst\r\nsecond line\n\n  \r\nthird, with é and 😀\r\nlast");
    await Deno.writeTextFile(b, "b1\nb2\n");
    const expected = ["first", "second line", "third, with é and 😀", "last", "b1", "b2"];
    for (const chunkSize of [1, 2, 3, 7, 64 * 1024]) {
      await t.step(`with chunks of ${chunkSize} bytes`, async () => {
        const out = await readAll(FileSource.forLines([a, b], { chunkSize }));
        assert.deepEqual(out.records, expected);
      });
    }
  });
});

Deno.test("FileSource emits each file through its own split output, released at the file's end", async () => {
  await withTempDir(async (dir) => {
    const a = join(dir, "a.txt");
    const b = join(dir, "b.txt");
    await Deno.writeTextFile(a, "a1\na2\n");
    await Deno.writeTextFile(b, "b1\n");
    const out = await readAll(FileSource.forLines([a, b]));
    assert.deepEqual(out.recordsOf(a), ["a1", "a2"]);
    assert.deepEqual(out.recordsOf(b), ["b1"]);
    assert.deepEqual(out.recordsOf(undefined), [], "nothing on the main output");
    assert.deepEqual(
      out.events.filter((e) => e.kind === "created" || e.kind === "released"),
      [
        { kind: "created", split: a },
        { kind: "released", split: a },
        { kind: "created", split: b },
        { kind: "released", split: b },
      ],
    );
  });
});

Deno.test("FileSource has one split per file, named by its path", () => {
  const source = FileSource.forLines(["x.csv", "y.csv"]);
  assert.equal(source.boundedness, "bounded");
  assert.deepEqual(source.enumerateSplits({ parallelism: 4 }), [
    { splitId: "x.csv", path: "x.csv", offset: 0, line: 1 },
    { splitId: "y.csv", path: "y.csv", offset: 0, line: 1 },
  ]);
});

Deno.test("FileSource resumes after the checkpointed line", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "numbers.txt");
    const lines = Array.from({ length: 50 }, (_, i) => `${i + 1}`);
    await Deno.writeTextFile(path, lines.join("\r\n") + "\r\n");
    const source = FileSource.forLines(path, {
      deserializer: Number,
      chunkSize: 16,
      batchSize: 4,
    });

    const first = source.createReader(context);
    first.addSplits(source.enumerateSplits({ parallelism: 1 }));
    const before = collector<number>();
    for (let i = 0; i < 5; i++) await first.pollNext(before);
    const checkpointed = before.records.length;
    const snapshot = decode(encode(first.snapshotState(1))) as FileSplit[];
    await first.pollNext(before); // emitted after the checkpoint: lost with the failure
    await first.close?.();
    assert.ok(checkpointed > 0 && checkpointed < 50);
    const [split] = snapshot;
    assert.equal(split?.line, checkpointed + 1);
    const text = await Deno.readTextFile(path);
    assert.equal(text.slice(split?.offset).split("\r\n")[0], `${checkpointed + 1}`);

    const restored = source.createReader(context);
    restored.addSplits(snapshot);
    const after = collector<number>();
    await drain(restored, after);
    await restored.close?.();
    assert.deepEqual(
      [...before.records.slice(0, checkpointed), ...after.records],
      lines.map(Number),
    );
  });
});

Deno.test("FileSource snapshots queued files and drops finished ones", async () => {
  await withTempDir(async (dir) => {
    const a = join(dir, "a.txt");
    const b = join(dir, "b.txt");
    await Deno.writeTextFile(a, "a1\na2\n");
    await Deno.writeTextFile(b, "b1\nb2\nb3\n");
    const source = FileSource.forLines([a, b], { batchSize: 1 });
    const reader = source.createReader(context);
    reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
    assert.deepEqual(reader.snapshotState(1), [
      { splitId: a, path: a, offset: 0, line: 1 },
      { splitId: b, path: b, offset: 0, line: 1 },
    ]);
    const out = collector<string>();
    while (out.records.length < 3) await reader.pollNext(out);
    assert.deepEqual(out.records, ["a1", "a2", "b1"]);
    assert.deepEqual(reader.snapshotState(2), [{ splitId: b, path: b, offset: 3, line: 2 }]);
    await reader.close?.();
  });
});

Deno.test("FileSource emits at most batchSize records per poll and ends with an empty poll", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "five.txt");
    await Deno.writeTextFile(path, "1\n2\n3\n4\n5\n");
    const reader = FileSource.forLines(path, { batchSize: 2 }).createReader(context);
    reader.addSplits([{ splitId: path, path, offset: 0, line: 1 }]);
    const out = collector<string>();
    const sizes: number[] = [];
    let status;
    do {
      const before = out.records.length;
      status = await reader.pollNext(out);
      sizes.push(out.records.length - before);
    } while (status !== "END_OF_INPUT");
    assert.deepEqual(sizes, [2, 2, 1, 0]);
    await reader.close?.();
  });
});

function parseReading(line: string): { id: string; temperature: number } {
  const fields = line.split(",");
  if (fields.length !== 3) throw new Error(`expected 3 fields, got ${fields.length}`);
  return { id: fields[0]!, temperature: Number(fields[2]) };
}

Deno.test("FileSource names the file and line of a malformed record", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "bad.csv");
    await Deno.writeTextFile(path, "sensor_1,1547718199,35.8\n\nsensor_1,35.8\nsensor_2,1,2\n");
    const source = FileSource.forLines(path, { deserializer: parseReading });
    const reader = source.createReader(context);
    reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
    const out = collector<{ id: string; temperature: number }>();
    const error = await drain(reader, out).then(() => undefined, (e: unknown) => e);
    // The position stays at the malformed line: a restart meets it again.
    assert.deepEqual(reader.snapshotState(1).map((s) => [s.offset, s.line]), [[26, 3]]);
    await reader.close?.();
    assert.ok(error instanceof DeserializationError);
    assert.equal(
      error.message,
      `Cannot parse line 3 of ${path}: expected 3 fields, got 2 ("sensor_1,35.8")`,
    );
    assert.equal(error.name, "DeserializationError");
    assert.equal(error.source, path);
    assert.equal(error.line, 3);
    assert.equal(error.offset, 26);
    assert.equal(error.raw, "sensor_1,35.8");
    assert.ok(error.cause instanceof Error);
    assert.deepEqual(out.records, [{ id: "sensor_1", temperature: 35.8 }]);
  });
});

Deno.test("FileSource sends a malformed line to the dead-letter output", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "bad.csv");
    await Deno.writeTextFile(path, "sensor_1,1547718199,35.8\nsensor_1,35.8\nsensor_7,1,6.7");
    const out = await readAll(
      FileSource.forLines(path, { deserializer: parseReading, onError: "dead-letter" }),
    );
    assert.deepEqual(out.records.map((r) => r.id), ["sensor_1", "sensor_7"]);
    const expected: DeadLetter = {
      source: path,
      line: 2,
      offset: 25,
      raw: "sensor_1,35.8",
      error: "expected 3 fields, got 2",
    };
    assert.deepEqual(out.side, [[DEAD_LETTER.id, expected]]);
    assert.equal(DEAD_LETTER.id, "dead-letter");
  });
});

Deno.test("FileSource treats a line that is not UTF-8 as malformed", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "latin1.txt");
    await Deno.writeFile(path, new Uint8Array([0x6f, 0x6b, 0x0a, 0x63, 0x61, 0x66, 0xe9, 0x0a]));
    const out = await readAll(FileSource.forLines(path, { onError: "dead-letter" }));
    assert.deepEqual(out.records, ["ok"]);
    const letter = out.side[0]?.[1] as DeadLetter;
    assert.equal(letter.line, 2);
    assert.equal(letter.raw, "caf\ufffd");
    assert.match(letter.error, /invalid UTF-8/);
  });
});

Deno.test("FileSource fails with the path of a missing file", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "missing.csv");
    const reader = FileSource.forLines(path).createReader(context);
    reader.addSplits([{ splitId: path, path, offset: 0, line: 1 }]);
    await assert.rejects(
      () => Promise.resolve(reader.pollNext(collector<string>())),
      (error: Error) => {
        assert.ok(error instanceof FileNotReadableError && error instanceof SuppressRestartsError);
        assert.ok(error.cause instanceof Deno.errors.NotFound);
        assert.equal(error.path, path);
        assert.ok(error.message.includes(path), error.message);
        return true;
      },
    );
    await reader.close?.();
  });
});

Deno.test("FileSource refuses to resume a file that changed since the checkpoint", async (t) => {
  await withTempDir(async (dir) => {
    const path = join(dir, "data.txt");
    const attempt = async (offset: number) => {
      const reader = FileSource.forLines(path).createReader(context);
      reader.addSplits([{ splitId: path, path, offset, line: 2 }]);
      try {
        return await reader.pollNext(collector<string>());
      } finally {
        await reader.close?.();
      }
    };
    await Deno.writeTextFile(path, "short\n");
    await t.step("when it is shorter", async () => {
      await assert.rejects(
        () => attempt(40),
        /byte offset 40 \(line 2\): the file now has only 6 bytes/,
      );
    });
    await t.step("when no line ends before the offset", async () => {
      await assert.rejects(() => attempt(3), /byte offset 3 \(line 2\): no line ends there/);
    });
    await t.step("but resumes a file that only grew", async () => {
      await Deno.writeTextFile(path, "short\nmore\n");
      assert.equal(await attempt(6), "MORE_AVAILABLE");
    });
  });
});

Deno.test("FileSource refuses invalid options", () => {
  assert.throws(() => FileSource.forLines([]), /without paths/);
  assert.throws(() => FileSource.forLines(["a", "a"]), /path a is given twice/);
  assert.throws(
    // @ts-expect-error: only UTF-8 is supported
    () => FileSource.forLines("a", { encoding: "latin1" }),
    /only the "utf-8" encoding is supported: current value is "latin1"/,
  );
  assert.throws(
    // @ts-expect-error: an unknown policy
    () => FileSource.forLines("a", { onError: "skip" }),
    /'onError' must be "fail" or "dead-letter"/,
  );
  assert.throws(() => FileSource.forLines("a", { chunkSize: 0 }), RangeError);
  assert.throws(() => FileSource.forLines("a", { batchSize: 1.5 }), RangeError);
});

Deno.test("FileSource reads the seed sensors file", async () => {
  const out = await readAll(
    FileSource.forLines(new URL("../../examples/data/sensors.csv", import.meta.url).pathname, {
      deserializer: parseReading,
    }),
  );
  assert.ok(out.records.length > 0);
  assert.equal(out.records[0]?.id, "sensor_1");
});
