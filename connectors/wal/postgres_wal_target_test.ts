/**
 * The PostgreSQL target against the shared server at 127.0.0.1:5432, in
 * tables with unique names dropped afterwards.
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { type CommitOutcome, CommitRequestImpl } from "../../runtime/task/operators/sink_commit.ts";
import type { CommitterInitContext } from "../../runtime/api/sink_v2.ts";
import type { WalCommitId } from "./types.ts";
import {
  PostgresCheckpointCommitter,
  type PostgresConnectionOptions,
  PostgresWalTarget,
  WalTargetRejectedError,
} from "./postgres_wal_target.ts";
import { WriteAheadSink } from "./wal_sink.ts";
import type { WalCommittable } from "./wal_committable.ts";

const CONNECTION: PostgresConnectionOptions = {
  host: "127.0.0.1",
  port: 5432,
  user: "postgres",
  database: "postgres",
};

interface Bill {
  readonly id: number;
  readonly account: string;
}

const context: CommitterInitContext = {
  subtaskIndex: 0,
  parallelism: 1,
  attempt: 0,
  uid: "bills-wal",
  jobId: "job-pg",
  restoredCheckpointId: undefined,
};

/** Runs `body` with a fresh bills table and committer table, dropping both afterwards. */
async function withTables(
  body: (names: { table: string; committerTable: string; sql: postgres.Sql }) => Promise<void>,
  check = "",
): Promise<void> {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `wal_bills_${suffix}`;
  const committerTable = `wal_committed_${suffix}`;
  const sql = postgres({ ...CONNECTION, max: 2, onnotice: () => {} });
  await sql.unsafe(`CREATE TABLE ${table} (id integer NOT NULL, account text NOT NULL ${check})`);
  try {
    await body({ table, committerTable, sql });
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
    await sql.end({ timeout: 0 });
  }
}

function batch(checkpointId: number, ids: readonly number[], part = 0): WalCommittable<Bill> {
  return {
    jobId: "job-pg",
    attempt: 0,
    subtask: 0,
    checkpointId,
    part,
    values: ids.map((id) => ({ id, account: `a${id % 3}` })),
  };
}

async function commitAll(
  sink: WriteAheadSink<Bill>,
  committables: readonly WalCommittable<Bill>[],
): Promise<CommitOutcome[]> {
  const committer = await sink.createCommitter(context);
  try {
    const requests = committables.map((c) =>
      new CommitRequestImpl({ checkpointId: c.checkpointId, committable: c }, 0)
    );
    await committer.commit(requests as never);
    return requests.map((r) => r.seal());
  } finally {
    await committer.close();
  }
}

async function ids(sql: postgres.Sql, table: string): Promise<number[]> {
  const rows = await sql.unsafe(`SELECT id FROM ${table} ORDER BY id`);
  return rows.map((r) => Number(r.id));
}

/** A write-ahead sink of bills into `table` through a PostgresWalTarget, 7 rows per statement. */
function walSinkInto(table: string, committerTable: string): WriteAheadSink<Bill> {
  return new WriteAheadSink<Bill>({
    target: new PostgresWalTarget<Bill>({
      connection: CONNECTION,
      table,
      committerTable,
      columns: ["id", "account"],
      toRow: (bill) => bill,
      maxRowsPerStatement: 7,
    }),
  });
}

Deno.test("PostgresWalTarget writes each batch once, however often it is committed", async () => {
  await withTables(async ({ table, committerTable, sql }) => {
    const sink = walSinkInto(table, committerTable);
    const ids50 = Array.from({ length: 50 }, (_, i) => i);
    const first = [batch(1, ids50.slice(0, 30)), batch(1, ids50.slice(30), 1)];
    assert.deepEqual((await commitAll(sink, first)).map((o) => o.kind), ["committed", "committed"]);
    // A restore commits the same committables again, plus a later one.
    assert.deepEqual(
      (await commitAll(sink, [...first, batch(2, [100])])).map((o) => o.kind),
      ["already-committed", "already-committed", "committed"],
    );
    assert.deepEqual(await ids(sql, table), [...ids50, 100]);
    const recorded = await sql.unsafe(
      `SELECT sink_id, job_id, attempt, subtask, checkpoint_id, part, value_count FROM ${committerTable} ORDER BY checkpoint_id, part`,
    );
    assert.deepEqual(
      recorded.map((
        r,
      ) => [
        r.sink_id,
        r.job_id,
        r.attempt,
        r.subtask,
        Number(r.checkpoint_id),
        r.part,
        r.value_count,
      ]),
      [
        ["bills-wal", "job-pg", 0, 0, 1, 0, 30],
        ["bills-wal", "job-pg", 0, 0, 1, 1, 20],
        ["bills-wal", "job-pg", 0, 0, 2, 0, 1],
      ],
    );
  });
});

Deno.test("PostgresWalTarget leaves neither values nor its record when a statement fails mid-batch", async () => {
  // The CHECK fails on the third statement (ids 15, 99), after the committer row and 14 values.
  await withTables(async ({ table, committerTable, sql }) => {
    const sink = walSinkInto(table, committerTable);
    const [outcome] = await commitAll(sink, [
      batch(1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 99]),
    ]);
    assert.equal(outcome?.kind, "failed-known");
    const error = (outcome as { error: Error }).error;
    assert.ok(error.cause instanceof WalTargetRejectedError);
    assert.equal(error.cause.sqlState, "23514");
    assert.match(
      error.message,
      /checkpoint 1 part 0 of sink 'bills-wal' into table 'wal_bills_\w+': PostgreSQL refused it \(SQLSTATE 23514\)/,
    );
    assert.deepEqual(await ids(sql, table), []);
    assert.equal((await sql.unsafe(`SELECT 1 FROM ${committerTable}`)).length, 0);
  }, ", CHECK (id < 50)");
});

Deno.test("PostgresWalTarget writes a batch once when two incarnations commit it at the same time", async () => {
  await withTables(async ({ table, committerTable, sql }) => {
    const target = new PostgresWalTarget<Bill>({
      connection: CONNECTION,
      table,
      committerTable,
      columns: ["id", "account"],
      toRow: (bill) => bill,
    });
    const [a, b] = await Promise.all([target.open(context), target.open(context)]);
    try {
      const { values, ...id } = batch(3, [1, 2, 3]);
      const outcomes = await Promise.all([
        a!.sendValuesOnce(values, id),
        b!.sendValuesOnce(values, id),
      ]);
      assert.deepEqual(outcomes.sort(), ["already-committed", "sent"]);
      assert.deepEqual(await ids(sql, table), [1, 2, 3]);
    } finally {
      await a!.close();
      await b!.close();
    }
  });
});

Deno.test("PostgresWalTarget refuses a row without a value for a column, and a bad configuration", async () => {
  await withTables(async ({ table, committerTable }) => {
    const target = new PostgresWalTarget<Bill>({
      connection: CONNECTION,
      table,
      committerTable,
      columns: ["id", "account"],
      toRow: (bill) => ({ id: bill.id }),
    });
    const open = await target.open(context);
    try {
      const { values, ...id } = batch(1, [4]);
      await assert.rejects(
        open.sendValuesOnce(values, id),
        (e: unknown) =>
          e instanceof WalTargetRejectedError && e.sqlState === undefined &&
          e.message.includes("the row of value 0 has no value for column 'account'"),
      );
    } finally {
      await open.close();
    }
  });
  assert.throws(
    () =>
      new PostgresWalTarget<Bill>({
        connection: CONNECTION,
        table: "t",
        columns: [],
        toRow: (b) => b,
      }),
    /'columns' must name at least one column: current value is \[\]/,
  );
  assert.throws(
    () =>
      new PostgresWalTarget<Bill>({
        connection: CONNECTION,
        table: "",
        columns: ["id"],
        toRow: (b) => b,
      }),
    /'table' must be a table or column name of 1 to 63 characters: current value is ""/,
  );
});

Deno.test("PostgresCheckpointCommitter records batches for a separate target", async () => {
  await withTables(async ({ committerTable }) => {
    const committer = await PostgresCheckpointCommitter.open(
      { connection: CONNECTION, committerTable },
      context,
    );
    try {
      const id: WalCommitId = { jobId: "job-pg", attempt: 1, subtask: 2, checkpointId: 3, part: 0 };
      assert.equal(await committer.isCheckpointCommitted(id), false);
      await committer.commitCheckpoint(id);
      await committer.commitCheckpoint(id);
      assert.equal(await committer.isCheckpointCommitted(id), true);
      assert.equal(await committer.isCheckpointCommitted({ ...id, attempt: 2 }), false);
    } finally {
      await committer.close();
    }
  });
});
