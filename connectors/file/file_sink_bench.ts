/**
 * Throughput of the file sink's writer and committer, driven as the sink
 * operator drives them (write per record; at each checkpoint flush,
 * prepareCommit, snapshotState, then commit), without a job around them:
 * 1M records of `{ id, key, amount }` in 10 checkpoints, per format, into a
 * temporary directory removed afterwards. The time includes the fsyncs and
 * renames of every checkpoint.
 *
 * Run: `deno run -A connectors/file/file_sink_bench.ts [records]`.
 * Prints one line per format, `RESULT format=… records=… eps=… mb_per_s=… part_files=…`.
 *
 * @module
 */

import { CommitRequestImpl } from "../../runtime/task/operators/sink_commit.ts";
import { FileSink } from "./file_sink.ts";
import { csvEncoder, jsonLinesEncoder, lineEncoder, type RowEncoder } from "./row_encoders.ts";

interface Bill {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

const RECORDS = Number(Deno.args[0] ?? 1_000_000);
const CHECKPOINTS = 10;

const formats: [string, RowEncoder<Bill>][] = [
  ["lines", lineEncoder<Bill>((b) => `${b.id} ${b.key} ${b.amount}`)],
  ["jsonl", jsonLinesEncoder<Bill>()],
  [
    "csv",
    csvEncoder<Bill>({ header: ["id", "key", "amount"], toFields: (b) => [b.id, b.key, b.amount] }),
  ],
];

const bills: Bill[] = Array.from({ length: 10_000 }, (_, i) => ({
  id: i,
  key: `account-${i % 997}`,
  amount: ((i * 37) % 1001) - 500,
}));

for (const [name, encoder] of formats) {
  const dir = await Deno.makeTempDir({ prefix: "weir_file_sink_bench_" });
  try {
    const sink = new FileSink<Bill>({ path: dir, encoder });
    const base = { subtaskIndex: 0, parallelism: 1, attempt: 0, uid: "bench", jobId: "bench" };
    const writer = await sink.createWriter({
      ...base,
      restoredCheckpointId: undefined,
      restoredState: [],
      checkpointingMode: "exactly-once",
    });
    const committer = sink.createCommitter({ ...base, restoredCheckpointId: undefined });
    const perCheckpoint = Math.ceil(RECORDS / CHECKPOINTS);
    const context = { timestamp: undefined };
    let bytes = 0, parts = 0;
    const started = performance.now();
    for (let checkpoint = 1, written = 0; written < RECORDS; checkpoint++) {
      const end = Math.min(RECORDS, written + perCheckpoint);
      for (; written < end; written++) {
        const pending = writer.write(bills[written % bills.length]!, context);
        if (pending !== undefined) await pending;
      }
      await writer.flush(false);
      const committables = await writer.prepareCommit!(checkpoint);
      await writer.snapshotState!(checkpoint);
      await committer.commit(
        committables.map((c) =>
          new CommitRequestImpl({ checkpointId: checkpoint, committable: c }, 0)
        ) as never,
      );
      for (const c of committables) bytes += c.sizeBytes;
      parts += committables.length;
    }
    const seconds = (performance.now() - started) / 1000;
    await writer.close();
    console.log(
      `RESULT format=${name} records=${RECORDS} eps=${Math.round(RECORDS / seconds)} ` +
        `mb_per_s=${(bytes / 1e6 / seconds).toFixed(1)} part_files=${parts}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
