/**
 * Throughput of the MariaDB sinks (the server at 127.0.0.1:3306, database
 * `test`), driven as the sink operator drives them: 200k records of
 * `{ id, key, amount }` written in 10 checkpoints (flush, prepareCommit,
 * then the committer commits), into a table with a unique name dropped
 * afterwards. Variants: the XA sink exactly-once at batch sizes 100, 1000
 * and 5000, and at-least-once (autocommit) at 1000.
 *
 * Run: `deno run -A connectors/mariadb/xa_sink_bench.ts [records]`.
 * Prints `RESULT sink=… batch=… records=… eps=…` per variant.
 *
 * @module
 */

import type { DeliveryGuarantee, SinkV2 } from "../../runtime/api/sink_v2.ts";
import {
  cleanupPrefix,
  committerContext,
  RecordingRequest,
  sql,
  TEST_CONNECTION,
  uniqueName,
  writerContext,
} from "./_test_kit.ts";
import type { XaCommittable } from "./xa_committable.ts";
import { mariaDbXaSink } from "./xa_sink.ts";

interface Bill {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

const RECORDS = Number(Deno.args[0] ?? 200_000);
const CHECKPOINTS = 10;
const ctx = { timestamp: undefined };

async function run(guarantee: DeliveryGuarantee, batchSize: number): Promise<void> {
  const table = uniqueName("xa_bench");
  const prefix = uniqueName("bench");
  const commitLogTable = uniqueName("xa_bench_log");
  await sql(
    `CREATE TABLE \`${table}\` (id INT NOT NULL, \`key\` VARCHAR(16) NOT NULL, amount INT NOT NULL) ENGINE=InnoDB`,
  );
  try {
    const sink = mariaDbXaSink<Bill>({
      connection: TEST_CONNECTION,
      sql: `INSERT INTO \`${table}\` (id, \`key\`, amount) VALUES (?, ?, ?)`,
      parameters: (b) => [b.id, b.key, b.amount],
      deliveryGuarantee: guarantee,
      batchSize,
      xidPrefix: prefix,
      commitLogTable,
    }) as SinkV2<Bill, XaCommittable>;
    const bills = Array.from({ length: RECORDS }, (_, id) => ({
      id,
      key: `acct-${id % 1000}`,
      amount: id % 97,
    }));
    const started = performance.now();
    const committer = await sink.createCommitter?.(committerContext({ uid: "bench" }));
    const writer = await sink.createWriter(writerContext({ uid: "bench" }));
    const perCheckpoint = Math.ceil(RECORDS / CHECKPOINTS);
    for (let checkpoint = 1; checkpoint <= CHECKPOINTS; checkpoint++) {
      const end = Math.min(RECORDS, checkpoint * perCheckpoint);
      for (let i = (checkpoint - 1) * perCheckpoint; i < end; i++) {
        const pending = writer.write(bills[i]!, ctx);
        if (pending !== undefined) await pending;
      }
      await writer.flush(checkpoint === CHECKPOINTS);
      const committables = await writer.prepareCommit?.(checkpoint) ?? [];
      const requests = committables.map((c) => new RecordingRequest(c, checkpoint));
      await committer?.commit(requests);
      for (const r of requests) {
        if (r.signal.kind !== "committed") throw new Error(`commit: ${JSON.stringify(r.signal)}`);
      }
    }
    const ms = performance.now() - started;
    await writer.close();
    await committer?.close();
    const [{ n }] = await sql(`SELECT COUNT(*) AS n FROM \`${table}\``) as [{ n: bigint }];
    if (Number(n) !== RECORDS) throw new Error(`table holds ${n} rows, expected ${RECORDS}`);
    console.log(
      `RESULT sink=${guarantee} batch=${batchSize} records=${RECORDS} eps=${
        Math.round(RECORDS / ms * 1000)
      }`,
    );
  } finally {
    await cleanupPrefix(prefix, commitLogTable);
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
}

for (const batch of [100, 1000, 5000]) await run("exactly-once", batch);
await run("at-least-once", 1000);
