/**
 * Exactly-once sinks in bounded jobs without `enableCheckpointing`: the
 * coordinator's final checkpoint at the end of input commits everything
 * (see `runtime/api/delivery_check.ts`, which allows the combination at
 * `execute()`). The file sink and the write-ahead-log sink must run then,
 * not refuse at run time, and commit every record exactly once, with and
 * without a failure induced before the end of input (the restart starts
 * from the beginning, with no checkpoint to restore).
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { FileSink } from "../connectors/file/file_sink.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { lineEncoder } from "../connectors/file/row_encoders.ts";
import { WriteAheadSink } from "../connectors/wal/wal_sink.ts";
import type { WalCommitId, WalTargetFactory } from "../connectors/wal/types.ts";
import { listTree, withTempDir } from "./_job_kit.ts";

const RECORDS = 600;
const values = Array.from({ length: RECORDS }, (_, i) => i);

/** `values` with a failure of attempt 0 after the first `at` of them. */
function failingOnce(at: number): TestItem<number>[] {
  return [
    ...values.slice(0, at),
    TestSource.fail("induced failure before the end of input", { attempt: 0 }),
    ...values.slice(at),
  ];
}

/** The numbers in the finished part files, and the hidden files left over. */
async function readFinished(dir: string): Promise<{ numbers: number[]; hidden: string[] }> {
  const numbers: number[] = [];
  const hidden: string[] = [];
  for (const path of await listTree(dir)) {
    if (path.slice(path.lastIndexOf("/") + 1).startsWith(".")) {
      hidden.push(path);
      continue;
    }
    const text = await Deno.readTextFile(`${dir}/${path}`);
    for (const line of text.split("\n")) if (line !== "") numbers.push(Number(line));
  }
  return { numbers: numbers.sort((a, b) => a - b), hidden };
}

function fileSink(dir: string): FileSink<string> {
  // Small part files: several are rolled (and pending) before the end of input.
  return new FileSink<string>({
    path: dir,
    encoder: lineEncoder<string>(),
    rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 256 }),
  });
}

Deno.test("a bounded job without checkpointing commits every record to a FileSink exactly once at its final checkpoint", async () => {
  await withTempDir(async (out) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection(values).uid("numbers")
      .map((n) => String(n)).uid("text")
      .sinkTo(fileSink(out)).uid("file-out");
    const result = await env.execute("file sink without checkpointing");
    assert.equal(result.restarts, 0, result.summary);
    const { numbers, hidden } = await readFinished(out);
    assert.deepEqual(hidden, [], "hidden part files left behind");
    assert.deepEqual(numbers, values);
  });
});

Deno.test("a bounded job without checkpointing that fails before its end writes every record to a FileSink exactly once after the restart", async () => {
  await withTempDir(async (out) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
    env.fromSource(
      TestSource.of(failingOnce(RECORDS / 2), { batchSize: 10 }),
      WatermarkStrategy.noWatermarks(),
      "numbers",
    ).uid("numbers")
      .map((n) => String(n)).uid("text")
      .sinkTo(fileSink(out)).uid("file-out");
    const result = await env.execute("file sink without checkpointing, one failure");
    assert.equal(result.restarts, 1, result.summary);
    const { numbers, hidden } = await readFinished(out);
    assert.deepEqual(hidden, [], "hidden part files left behind");
    assert.deepEqual(numbers, values);
  });
});

/** An atomic in-memory write-ahead-log target, shared by every attempt of a job. */
class MemoryWalTarget {
  readonly sent: number[] = [];
  readonly #recorded = new Set<string>();

  factory(): WalTargetFactory<number> {
    return {
      atomicity: "atomic",
      open: () =>
        Promise.resolve({
          sendValuesOnce: (batch: readonly number[], id: WalCommitId) => {
            const key = `${id.jobId}/${id.attempt}/${id.subtask}/${id.checkpointId}/${id.part}`;
            if (this.#recorded.has(key)) return Promise.resolve("already-committed" as const);
            this.sent.push(...batch);
            this.#recorded.add(key);
            return Promise.resolve("sent" as const);
          },
          close: () => Promise.resolve(),
        }),
    };
  }
}

for (const failure of [false, true]) {
  Deno.test(
    `a bounded job without checkpointing ${
      failure ? "that fails before its end " : ""
    }sends every record through a WriteAheadSink exactly once at its final checkpoint`,
    async () => {
      const target = new MemoryWalTarget();
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
      env.fromSource(
        TestSource.of(failure ? failingOnce(RECORDS / 2) : values, { batchSize: 10 }),
        WatermarkStrategy.noWatermarks(),
        "numbers",
      ).uid("numbers")
        .sinkTo(new WriteAheadSink<number>({ target: target.factory() })).uid("wal-out");
      const result = await env.execute("write-ahead-log sink without checkpointing");
      assert.equal(result.restarts, failure ? 1 : 0, result.summary);
      assert.deepEqual(target.sent.toSorted((a, b) => a - b), values);
    },
  );
}
