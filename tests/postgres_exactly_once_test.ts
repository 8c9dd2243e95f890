/**
 * The PostgreSQL prepared-transaction sink end to end, on a private
 * PostgreSQL server with `max_prepared_transactions` (one for the file,
 * `_postgres_server.ts`), in a table with a unique name and no key, so that
 * a duplicate would be stored and seen. A keyed running-sum job at
 * parallelism 2 with checkpoints every 20 ms:
 *
 * - fails twice on scripted `TestSource.fail` markers, each after a
 *   completed checkpoint, so transactions are open and prepared ones
 *   pending at each crash;
 * - crashes a sink subtask between pre-commit and commit, then loses a
 *   completion notification on the restarted attempt, so restores commit
 *   what the completed checkpoints prepared;
 * - crashes a sink subtask right after its pre-commit, before the
 *   checkpoint completes, so the restore must roll back its prepared
 *   transaction (else it would hold its locks forever).
 *
 * The table must hold exactly the failure-free output, each row once; no
 * gid of the sink may be left prepared; and the commit table must account
 * for every transaction's rows.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { RestartStrategies, type StreamExecutionEnvironment } from "../mod.ts";
import type { TestItem } from "../testing.ts";
import {
  type PostgresCommittable,
  PostgresPreparedSink,
  type SinkV2,
} from "../connectors/postgres/mod.ts";
import { type KeyedRecord, keyedSplits, type SumRecord, withTempDir } from "./_job_kit.ts";
import {
  assertSameRows,
  crashBeforeCommitThenLoseNotification,
  expectedRows,
  keyedSumJob,
  SINK_JOB_SPLITS,
  sumRecordOf,
  twoFailureSplits,
} from "./_sink_job_kit.ts";
import { startPostgresServer } from "./_postgres_server.ts";

const server = await startPostgresServer();
globalThis.addEventListener("unload", () => server.stopSync());

/** One run's faults. */
interface Faults {
  /** The source split lists (with or without fail markers). */
  readonly lists: TestItem<KeyedRecord>[][];
  /** Installs fault hooks on the environment, if any. */
  readonly install?: (env: StreamExecutionEnvironment) => void;
  /** Wraps the sink, e.g. to fail right after a pre-commit. */
  readonly wrap?: (sink: PreparedSink) => PreparedSink;
  /** The restarts the faults cause. */
  readonly restarts: number;
}

type PreparedSink = SinkV2<SumRecord, PostgresCommittable, never>;

/** Runs the keyed job into a fresh table and compares the table with the failure-free output exactly. */
async function runAndCheck(name: string, faults: Faults): Promise<void> {
  const sql = postgres(server.url, { max: 1, onnotice: () => {} });
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `weir_job_${suffix}`;
  const commitTable = `weir_job_commits_${suffix}`;
  const gidPrefix = `job_${suffix}`;
  await sql.unsafe(`CREATE TABLE ${table} (key text NOT NULL, seq int NOT NULL, sum int NOT NULL)`);
  try {
    await withTempDir(async (checkpoints) => {
      const env = keyedSumJob({
        checkpoints,
        lists: faults.lists,
        restartStrategy: RestartStrategies.fixedDelay(3, 0),
        ...(faults.install === undefined ? {} : { install: faults.install }),
        sink: (faults.wrap ?? ((sink) => sink))(
          new PostgresPreparedSink<SumRecord>({
            url: server.url,
            table,
            columns: ["key", "seq", "sum"],
            values: (r) => [r.key, r.seq, r.sum],
            gidPrefix,
            commitTable,
            batchSize: 50,
          }),
        ),
        sinkUid: "pg-out",
      });
      const result = await env.execute(name);
      assert.equal(result.restarts, faults.restarts, result.summary);
    });
    const got = (await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key, seq`))
      .map(sumRecordOf);
    assertSameRows(got, expectedRows());
    const prepared = await sql.unsafe(
      "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1)",
      [`weir:${gidPrefix}:`],
    );
    assert.deepEqual(prepared.map((r) => r.gid), [], "gids of the sink left prepared");
    const committed = await sql.unsafe(
      `SELECT count(*)::int AS n FROM ${commitTable} WHERE gid_prefix = $1`,
      [gidPrefix],
    );
    assert.ok(Number(committed[0]!.n) >= 2, "the commit table records the committed transactions");
  } finally {
    for (const { gid } of await sql.unsafe("SELECT gid FROM pg_prepared_xacts")) {
      await sql.unsafe(`ROLLBACK PREPARED '${gid}'`);
    }
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`DROP TABLE IF EXISTS ${commitTable}`);
    await sql.end();
  }
}

Deno.test("a job writing through the PostgreSQL prepared-transaction sink commits each row exactly once across two induced failures", async () => {
  await runAndCheck("postgres prepared sink exactly-once", {
    lists: twoFailureSplits(2, 4),
    restarts: 2,
  });
});

Deno.test("a PostgreSQL prepared-transaction job commits each row exactly once when it crashes between pre-commit and commit and then loses a completion notification", async () => {
  const fired: string[] = [];
  await runAndCheck("postgres prepared sink crash before commit", {
    lists: keyedSplits(SINK_JOB_SPLITS),
    restarts: 2,
    install: crashBeforeCommitThenLoseNotification(fired),
  });
  assert.equal(fired.length, 2, `faults fired: ${fired.join(", ")}`);
});

Deno.test("a PostgreSQL prepared-transaction job rolls back what a sink subtask prepared for a checkpoint that never completed", async () => {
  const fired: string[] = [];
  await runAndCheck("postgres prepared sink crash after pre-commit", {
    lists: keyedSplits(SINK_JOB_SPLITS),
    restarts: 1,
    // The writer prepares its transaction at the barrier of checkpoint >= 2, then the subtask
    // dies before acknowledging: the checkpoint never completes, and the gid lingers until the
    // restore rolls it back (else its rows would stay locked, and a replay would write them again).
    wrap: (sink) => ({
      kind: "v2",
      deliveryGuarantee: sink.deliveryGuarantee,
      createCommitter: (context) => sink.createCommitter!(context),
      checkCommittable: (raw) => sink.checkCommittable!(raw),
      createWriter: async (context) => {
        const writer = await sink.createWriter(context);
        return {
          write: (value, ctx) => writer.write(value, ctx),
          flush: (endOfInput) => writer.flush(endOfInput),
          close: () => writer.close(),
          prepareCommit: async (checkpointId) => {
            const committables = await writer.prepareCommit!(checkpointId);
            if (
              fired.length === 0 && context.attempt === 0 && checkpointId >= 2 &&
              committables.length > 0
            ) {
              fired.push(`after pre-commit of ${committables[0]!.gid}`);
              throw new Error(`induced failure after pre-commit of checkpoint ${checkpointId}`);
            }
            return committables;
          },
        };
      },
    }),
  });
  assert.equal(fired.length, 1, `faults fired: ${fired.join(", ")}`);
});
