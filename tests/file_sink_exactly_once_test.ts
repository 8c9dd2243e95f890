/**
 * The file sink end to end: a keyed running-sum job (two source splits, a
 * keyed operator and a CSV file sink at parallelism 2, part files rolled
 * on size as well as at every checkpoint) fails twice on scripted
 * `TestSource.fail` markers — once on each attempt, each after a completed
 * checkpoint — and restores. The records of the finished part files must be
 * exactly the failure-free output (same multiset, each key's sums in
 * order), and no hidden in-progress or pending file may be left.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { parseCsv } from "../connectors/file/csv.ts";
import { FileSink } from "../connectors/file/file_sink.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { csvEncoder } from "../connectors/file/row_encoders.ts";
import {
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 400,
  awaitCheckpointEvery: 150,
};

/** Inserts a fail marker for `attempt` into `items` right after the `nth` awaitCheckpoint marker. */
function failAfterCheckpoint(
  items: TestItem<KeyedRecord>[],
  nth: number,
  attempt: number,
): TestItem<KeyedRecord>[] {
  let seen = 0;
  const at = items.findIndex((item) =>
    item instanceof Object && "spec" in item && item.spec.kind === "await-checkpoint" &&
    ++seen === nth
  );
  assert.ok(at >= 0, `split has ${seen} awaitCheckpoint markers, wanted ${nth}`);
  return [
    ...items.slice(0, at + 1),
    ...items.slice(at + 1, at + 21), // 20 records into the next checkpoint interval
    TestSource.fail(`induced failure on attempt ${attempt}`, { attempt }),
    ...items.slice(at + 21),
  ];
}

async function readFinishedCsv(dir: string): Promise<{ records: SumRecord[]; hidden: string[] }> {
  const records: SumRecord[] = [];
  const hidden: string[] = [];
  for (const path of await listTree(dir)) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (name.startsWith(".")) {
      hidden.push(path);
      continue;
    }
    const [header, ...rows] = parseCsv(await Deno.readTextFile(`${dir}/${path}`), {
      where: `in ${path} `,
    });
    assert.deepEqual(header, ["key", "seq", "sum"], `${path} starts with its header`);
    for (const [key, seq, sum] of rows) {
      records.push({ key: key!, seq: Number(seq), sum: Number(sum) });
    }
  }
  return { records, hidden };
}

Deno.test("a job writing CSV part files commits each record exactly once across two induced failures", async () => {
  const [split0, split1] = keyedSplits(SPLITS);
  const lists = [failAfterCheckpoint(split0!, 2, 0), failAfterCheckpoint(split1!, 4, 1)];
  await withTempDir(async (checkpoints) => {
    await withTempDir(async (out) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(2)
        .enableCheckpointing(20, { directory: checkpoints })
        .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
      env.fromSource(
        TestSource.perSubtask(lists, { batchSize: 8 }),
        WatermarkStrategy.noWatermarks(),
        "records",
      )
        .uid("records")
        .keyBy((r) => r.key)
        .process(new SequenceCheck()).uid("sums")
        .sinkTo(
          new FileSink<SumRecord>({
            path: out,
            encoder: csvEncoder({
              header: ["key", "seq", "sum"],
              toFields: (r) => [r.key, r.seq, r.sum],
            }),
            rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 2048 }),
          }),
        ).uid("csv-out");
      const result = await env.execute("file sink exactly-once");
      assert.equal(result.restarts, 2, result.summary);

      const { records, hidden } = await readFinishedCsv(out);
      assert.deepEqual(hidden, [], "hidden part files left behind");
      const expected = [...expectedSums(SPLITS).values()].flat();
      const byKey = new Map<string, SumRecord[]>();
      for (const r of records) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r]);
      for (const list of byKey.values()) list.sort((a, b) => a.seq - b.seq);
      assert.equal(records.length, expected.length, "records in finished files");
      assert.deepEqual([...byKey.keys()].sort(), [...expectedSums(SPLITS).keys()].sort());
      for (const [key, list] of expectedSums(SPLITS)) {
        assert.deepEqual(byKey.get(key), list, `records of key ${key}`);
      }
      const parts = (await listTree(out)).filter((p) => !p.startsWith("."));
      assert.ok(
        parts.every((p) => /^part-csv-out-[01]-\d+\.csv$/.test(p)),
        `part file names: ${parts.join(", ")}`,
      );
      // Both subtasks wrote several part files (rolled on size and at checkpoints).
      for (const subtask of [0, 1]) {
        const own = parts.filter((p) => p.startsWith(`part-csv-out-${subtask}-`));
        assert.ok(own.length >= 2, `subtask ${subtask} finished ${own.length} part files`);
      }
    });
  });
});
