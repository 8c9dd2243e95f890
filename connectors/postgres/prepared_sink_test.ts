/**
 * PostgresPreparedSink's writer and committer against a private PostgreSQL
 * server (one per file, `tests/_postgres_server.ts`), with real faults: a
 * terminated backend mid-transaction, lingering prepared transactions of a
 * crashed incarnation, a server restart between prepare and commit, a
 * transaction rolled back behind the sink's back.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import {
  type Committer,
  type DeliveryGuarantee,
  DeliveryGuaranteeError,
  type SinkWriter,
} from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { startPostgresServer } from "../../tests/_postgres_server.ts";
import { waitUntil } from "../../tests/_wait.ts";
import { commitRequests, committerContext, uniqueName, writerContext } from "./_test_kit.ts";
import type { PostgresCommittable } from "./committable.ts";
import { PreparedTransactionsDisabledError, PreparedTransactionVanishedError } from "./errors.ts";
import { parseGid } from "./gid.ts";
import { PostgresPreparedSink } from "./prepared_sink.ts";

interface Rec {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

/** What a step may set of a sink's options on top of `sinkFor`'s. */
interface SinkOverrides {
  readonly batchSize?: number;
  readonly deliveryGuarantee?: DeliveryGuarantee;
  readonly commitTableRetentionMs?: number;
}

const CONTEXT = { timestamp: undefined };
const SHARED_URL = "postgres://postgres@127.0.0.1:5432/postgres";

function records(from: number, to: number): Rec[] {
  const out: Rec[] = [];
  for (let id = from; id <= to; id++) out.push({ id, key: `k${id % 7}`, amount: id * 1.5 });
  return out;
}

async function writeAll(writer: SinkWriter<Rec, PostgresCommittable, never>, recs: Rec[]) {
  for (const r of recs) await writer.write(r, CONTEXT);
}

Deno.test("PostgresPreparedSink against a private PostgreSQL server", async (t) => {
  const server = await startPostgresServer();
  console.log(`private PostgreSQL started in ${server.startupMs.toFixed(0)} ms`);
  const admin = postgres(server.url, { max: 2, onnotice: () => {} });
  const commitTable = uniqueName("weir_commits");
  const tables: string[] = [];
  const newTable = async () => {
    const table = uniqueName("weir_prepared");
    tables.push(table);
    await admin.unsafe(`CREATE TABLE ${table} (id int PRIMARY KEY, key text, amount float8)`);
    return table;
  };
  /** A sink writing into `table` under `gidPrefix`: batches of 100 rows, exactly-once, unless `more` says otherwise. */
  const sinkFor = (table: string, gidPrefix: string, more: SinkOverrides = {}) =>
    new PostgresPreparedSink<Rec>({
      url: server.url,
      table,
      columns: ["id", "key", "amount"],
      values: (r) => [r.id, r.key, r.amount],
      gidPrefix,
      commitTable,
      batchSize: 100,
      ...more,
    });
  /**
   * Runs `body` with a fresh table and gid prefix, a sink over them and its
   * writer and committer (attempt 0, subtask 0 of 1), closing both after.
   */
  const withFreshSink = async (
    more: SinkOverrides,
    body: (fresh: {
      table: string;
      prefix: string;
      writer: SinkWriter<Rec, PostgresCommittable, never>;
      committer: Committer<PostgresCommittable>;
    }) => Promise<void>,
  ) => {
    const table = await newTable();
    const prefix = uniqueName("p");
    const sink = sinkFor(table, prefix, more);
    const committer = await sink.createCommitter(committerContext());
    const writer = await sink.createWriter(writerContext());
    try {
      await body({ table, prefix, writer, committer });
    } finally {
      await writer.close();
      await committer.close();
    }
  };
  const ids = async (table: string) =>
    (await admin.unsafe(`SELECT id FROM ${table} ORDER BY id`)).map((r) => Number(r.id));
  const preparedGids = async (gidPrefix: string) =>
    (await admin.unsafe(
      "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1) ORDER BY gid",
      [`weir:${gidPrefix}:`],
    )).map((r) => String(r.gid));
  try {
    await t.step(
      "rows become visible only when the committer commits the prepared transaction",
      async () => {
        await withFreshSink({}, async ({ table, prefix, writer, committer }) => {
          await writeAll(writer, records(1, 250)); // two full batches go out during write
          await writer.flush(false);
          assert.deepEqual(await ids(table), [], "nothing is visible before the commit");
          const committables = await writer.prepareCommit!(1);
          assert.equal(committables.length, 1);
          assert.equal(committables[0]!.rows, 250);
          const parsed = parseGid(committables[0]!.gid);
          assert.equal(parsed.kind, "weir");
          assert.deepEqual(await preparedGids(prefix), [committables[0]!.gid]);
          assert.deepEqual(await ids(table), [], "nothing is visible while prepared");
          assert.deepEqual(
            await writer.prepareCommit!(2),
            [],
            "a checkpoint without rows prepares nothing",
          );
          const requests = commitRequests(1, committables);
          await committer.commit(requests);
          assert.deepEqual(requests.map((r) => r.signal.kind), ["committed"]);
          assert.deepEqual(await ids(table), records(1, 250).map((r) => r.id));
          assert.deepEqual(await preparedGids(prefix), []);
          const again = commitRequests(1, committables, 1);
          await committer.commit(again);
          assert.deepEqual(again.map((r) => r.signal.kind), ["already-committed"]);
        });
      },
    );

    await t.step(
      "a prepared transaction rolled back behind the sink's back fails the commit without restarts, naming its gid",
      async () => {
        await withFreshSink({}, async ({ table, writer, committer }) => {
          await writeAll(writer, records(1, 10));
          const [committable] = await writer.prepareCommit!(3);
          await admin.unsafe(`ROLLBACK PREPARED '${committable!.gid}'`);
          const requests = commitRequests(3, [committable!]);
          await committer.commit(requests);
          const signal = requests[0]!.signal;
          assert.equal(signal.kind, "known-failure");
          if (signal.kind !== "known-failure") return;
          assert.ok(signal.error instanceof PreparedTransactionVanishedError);
          assert.ok(signal.error instanceof SuppressRestartsError);
          assert.match(
            signal.error.message,
            new RegExp(`'${committable!.gid}' of checkpoint 3 has vanished`),
          );
          assert.deepEqual(await ids(table), []);
        });
      },
    );

    await t.step(
      "a writer whose backend is terminated mid-transaction fails, and nothing it wrote is visible",
      async () => {
        const table = await newTable();
        const prefix = uniqueName("p");
        const sink = sinkFor(table, prefix, { batchSize: 10 });
        const writer = await sink.createWriter(writerContext());
        try {
          await writeAll(writer, records(1, 25));
          await writer.flush(false); // all 25 rows sent in the open transaction, none in flight
          const backends = await admin.unsafe(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'weir PostgresPreparedSink%' " +
              "AND state = 'idle in transaction'",
          );
          assert.equal(backends.length, 1, "one writer connection is in a transaction");
          await admin.unsafe("SELECT pg_terminate_backend($1)", [backends[0]!.pid]);
          let first: unknown;
          try {
            await writeAll(writer, records(26, 40));
            await writer.prepareCommit!(1);
          } catch (error) {
            first = error;
          }
          assert.ok(first instanceof Error, "the writer fails after its backend was terminated");
          assert.match(
            first.message,
            /(was lost with 25 rows in a transaction not yet prepared|INSERT of \d+ rows into .* failed: .*; the transaction with its \d+ rows is rolled back)/,
          );
          await assert.rejects(
            async () => await writer.write(records(41, 41)[0]!, CONTEXT),
            (e: unknown) => e === first,
            "every later call fails with the first failure",
          );
          assert.deepEqual(await ids(table), [], "no row was autocommitted");
          assert.deepEqual(await preparedGids(prefix), []);
        } finally {
          await writer.close();
        }
        const next = await sink.createWriter(writerContext({ attempt: 1 }));
        const committer = await sink.createCommitter(committerContext({ attempt: 1 }));
        try {
          await writeAll(next, records(1, 40));
          const requests = commitRequests(1, await next.prepareCommit!(1));
          await committer.commit(requests);
          assert.deepEqual(await ids(table), records(1, 40).map((r) => r.id));
        } finally {
          await next.close();
          await committer.close();
        }
      },
    );

    await t.step(
      "a restore commits the restored gids and rolls back the later ones a crashed incarnation left prepared",
      async () => {
        const table = await newTable();
        const prefix = uniqueName("p");
        const otherPrefix = uniqueName("q");
        const sink = sinkFor(table, prefix);
        const other = sinkFor(table, otherPrefix);
        // incarnation 0 at parallelism 2: subtask 1 prepares checkpoints 1 and 2, then crashes
        const crashed = await sink.createWriter(writerContext({ subtaskIndex: 1, parallelism: 2 }));
        await writeAll(crashed, records(1, 5));
        const [first] = await crashed.prepareCommit!(1);
        await writeAll(crashed, records(6, 9));
        const [second] = await crashed.prepareCommit!(2);
        await writeAll(crashed, records(10, 12)); // open, not prepared: dies with the connection
        await crashed.close();
        // another sink's prepared transaction must survive everything below
        const foreign = await other.createWriter(writerContext());
        await writeAll(foreign, records(100, 101));
        const [foreignGid] = await foreign.prepareCommit!(7);
        await foreign.close();
        assert.deepEqual(await preparedGids(prefix), [first!.gid, second!.gid].sort());

        // incarnation 1 at parallelism 1 restores checkpoint 1: owner 1 % 1 == subtask 0
        const committer = await sink.createCommitter(committerContext({ restoredCheckpointId: 1 }));
        const requests = commitRequests(1, [first!]);
        await committer.commit(requests);
        const writer = await sink.createWriter(
          writerContext({ restoredCheckpointId: 1, attempt: 1 }),
        );
        try {
          assert.deepEqual(requests.map((r) => r.signal.kind), ["committed"]);
          assert.deepEqual(
            await preparedGids(prefix),
            [],
            "checkpoint 2's transaction was rolled back",
          );
          assert.deepEqual(await preparedGids(otherPrefix), [foreignGid!.gid]);
          assert.deepEqual(await ids(table), records(1, 5).map((r) => r.id));
          await writeAll(writer, records(6, 12));
          await committer.commit(commitRequests(2, await writer.prepareCommit!(2)));
          assert.deepEqual(await ids(table), records(1, 12).map((r) => r.id));
        } finally {
          await writer.close();
          await committer.close();
        }
        // a fresh start of the other sink rolls back all of its prefix
        const fresh = await other.createWriter(writerContext());
        await fresh.close();
        assert.deepEqual(await preparedGids(otherPrefix), []);
        assert.deepEqual(await ids(table), records(1, 12).map((r) => r.id));
      },
    );

    await t.step(
      "a restored gid with a checkpoint id up to the restored one is left for the committer that holds it",
      async () => {
        const table = await newTable();
        const prefix = uniqueName("p");
        const sink = sinkFor(table, prefix);
        const crashed = await sink.createWriter(writerContext({ subtaskIndex: 0, parallelism: 2 }));
        await writeAll(crashed, records(1, 3));
        const [held] = await crashed.prepareCommit!(4);
        await crashed.close();
        // restored at parallelism 2 from checkpoint 4: subtask 0's writer starts before subtask 1's committer commits
        const writer = await sink.createWriter(
          writerContext({ subtaskIndex: 0, parallelism: 2, restoredCheckpointId: 4, attempt: 1 }),
        );
        await writer.close();
        assert.deepEqual(await preparedGids(prefix), [held!.gid]);
        const committer = await sink.createCommitter(
          committerContext({ subtaskIndex: 1, parallelism: 2, restoredCheckpointId: 4 }),
        );
        try {
          await committer.commit(commitRequests(4, [held!]));
        } finally {
          await committer.close();
        }
        assert.deepEqual(await ids(table), [1, 2, 3]);
      },
    );

    await t.step(
      "prepared transactions survive a server restart between prepare and commit",
      async () => {
        await withFreshSink({}, async ({ table, writer, committer }) => {
          await writeAll(writer, records(1, 30));
          const committables = await writer.prepareCommit!(1);
          await server.restart("immediate");
          let requests = commitRequests(1, committables);
          await waitUntil(async () => {
            requests = commitRequests(1, committables, requests[0]!.numberOfRetries + 1);
            await committer.commit(requests);
            return requests[0]!.signal.kind !== "retry-later";
          }, {
            timeoutMs: 30_000,
            missing: () => `commit still retried: ${requests[0]!.signal.kind}`,
          });
          assert.equal(requests[0]!.signal.kind, "committed");
          assert.deepEqual(await ids(table), records(1, 30).map((r) => r.id));
          await assert.rejects(async () => {
            await writeAll(writer, records(31, 40));
            await writer.prepareCommit!(2);
          }, /was lost/);
        });
      },
    );

    await t.step(
      "a sink restored at-least-once from an exactly-once checkpoint commits its gids and rolls back the lingering ones",
      async () => {
        const table = await newTable();
        const prefix = uniqueName("p");
        const exactly = sinkFor(table, prefix);
        const crashed = await exactly.createWriter(writerContext());
        await writeAll(crashed, records(1, 3));
        const [restored] = await crashed.prepareCommit!(1);
        await writeAll(crashed, records(4, 6));
        await crashed.prepareCommit!(2); // never completes
        await crashed.close();
        const atLeastOnce = sinkFor(table, prefix, { deliveryGuarantee: "at-least-once" });
        const committer = await atLeastOnce.createCommitter(
          committerContext({ restoredCheckpointId: 1 }),
        );
        const requests = commitRequests(1, [restored!]);
        await committer.commit(requests);
        const writer = await atLeastOnce.createWriter(
          writerContext({ restoredCheckpointId: 1, attempt: 1 }),
        );
        try {
          assert.deepEqual(requests.map((r) => r.signal.kind), ["committed"]);
          assert.deepEqual(await preparedGids(prefix), [], "checkpoint 2's gid was rolled back");
          await writeAll(writer, records(4, 6));
          await writer.flush(false);
          assert.deepEqual(await ids(table), records(1, 6).map((r) => r.id));
        } finally {
          await writer.close();
          await committer.close();
        }
      },
    );

    await t.step(
      "the committer deletes its prefix's commit-table rows past the retention, and only those",
      async () => {
        await withFreshSink(
          { commitTableRetentionMs: 60_000 },
          async ({ prefix, writer, committer }) => {
            for (const [gidPrefix, gid] of [[prefix, "old"], ["other", "old-of-other"]]) {
              await admin.unsafe(
                `INSERT INTO ${commitTable} (gid_prefix, gid, checkpoint_id, prepared_at) ` +
                  `VALUES ($1, $2, 1, now() - interval '2 minutes')`,
                [gidPrefix!, gid!],
              );
            }
            await writeAll(writer, records(1, 2));
            const committables = await writer.prepareCommit!(1);
            await committer.commit(commitRequests(1, committables));
            const left = await admin.unsafe(
              `SELECT gid FROM ${commitTable} WHERE gid_prefix IN ($1, 'other') ORDER BY gid`,
              [prefix],
            );
            assert.deepEqual(left.map((r) => r.gid), ["old-of-other", committables[0]!.gid].sort());
          },
        );
      },
    );

    await t.step("the sink refuses a guarantee it does not know", () => {
      assert.throws(
        () =>
          new PostgresPreparedSink<Rec>({
            url: server.url,
            table: "t",
            columns: ["id"],
            values: (r) => [r.id],
            gidPrefix: "x",
            deliveryGuarantee: "twice" as "none",
          }),
        (e: unknown) =>
          e instanceof DeliveryGuaranteeError &&
          /deliveryGuarantee must be one of "none", "at-least-once", "exactly-once": current value is "twice"/
            .test(e.message),
      );
    });
  } finally {
    // a failed step may leave prepared transactions, whose locks would block the DROPs
    for (const { gid } of await admin.unsafe("SELECT gid FROM pg_prepared_xacts")) {
      await admin.unsafe(`ROLLBACK PREPARED '${gid}'`);
    }
    for (const table of [...tables, commitTable]) {
      await admin.unsafe(`DROP TABLE IF EXISTS ${table}`);
    }
    await admin.end();
    await server.stop();
  }
});

Deno.test("PostgresPreparedSink fails at start on a server with max_prepared_transactions = 0, saying what to set", async () => {
  const probe = postgres(SHARED_URL, { max: 1, onnotice: () => {} });
  let setting: string;
  try {
    setting = String(
      (await probe.unsafe("SHOW max_prepared_transactions"))[0]!.max_prepared_transactions,
    );
  } finally {
    await probe.end();
  }
  assert.equal(setting, "0", "the shared server at 5432 runs without prepared transactions");
  const sink = new PostgresPreparedSink<Rec>({
    url: SHARED_URL,
    table: "unused",
    columns: ["id"],
    values: (r) => [r.id],
    gidPrefix: uniqueName("p"),
  });
  for (
    const create of [
      () => sink.createCommitter(committerContext()),
      () => sink.createWriter(writerContext()),
    ]
  ) {
    await assert.rejects(create, (e: unknown) => {
      assert.ok(e instanceof PreparedTransactionsDisabledError);
      assert.ok(e instanceof SuppressRestartsError);
      assert.match(e.message, /127\.0\.0\.1:5432\/postgres has max_prepared_transactions = 0/);
      assert.match(e.message, /Set max_prepared_transactions in postgresql\.conf/);
      // A DataStream user is pointed at the DataStream alternative.
      assert.match(e.message, /or use PostgresUpsertSink for idempotent writes/);
      return true;
    });
  }
});

Deno.test("PostgresPreparedSink at-least-once inserts in autocommit at every barrier, and none only full batches, on a server without prepared transactions", async () => {
  const admin = postgres(SHARED_URL, { max: 1, onnotice: () => {} });
  const table = uniqueName("weir_autocommit");
  await admin.unsafe(`CREATE TABLE ${table} (id int NOT NULL)`);
  const count = async () =>
    Number((await admin.unsafe(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n);
  try {
    for (const deliveryGuarantee of ["at-least-once", "none"] as const) {
      await admin.unsafe(`TRUNCATE ${table}`);
      const sink = new PostgresPreparedSink<Rec>({
        url: SHARED_URL,
        table,
        columns: ["id"],
        values: (r) => [r.id],
        gidPrefix: uniqueName("p"),
        batchSize: 4,
        deliveryGuarantee,
      });
      const committer = await sink.createCommitter(committerContext());
      const writer = await sink.createWriter(writerContext());
      try {
        await writeAll(writer, records(1, 6)); // one full batch of 4 goes out at once
        assert.equal(await count(), 4, `${deliveryGuarantee}: the full batch`);
        await writer.flush(false);
        assert.deepEqual(await writer.prepareCommit!(1), [], "no committables");
        assert.equal(
          await count(),
          deliveryGuarantee === "at-least-once" ? 6 : 4,
          `${deliveryGuarantee}: after a barrier`,
        );
        await writer.flush(true);
        assert.equal(await count(), 6, `${deliveryGuarantee}: at the end of input`);
      } finally {
        await writer.close();
        await committer.close();
      }
    }
  } finally {
    await admin.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await admin.end();
  }
});
