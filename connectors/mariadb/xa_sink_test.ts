import assert from "node:assert/strict";
import type { SinkV2, SinkWriter } from "../../runtime/api/sink_v2.ts";
import {
  cleanupPrefix,
  committerContext,
  preparedOf,
  RecordingRequest,
  rows,
  sql,
  TEST_CONNECTION,
  uniqueName,
  writerContext,
} from "./_test_kit.ts";
import { mariaDbXaSink } from "./xa_sink.ts";
import type { XaCommittable } from "./xa_committable.ts";
import { XaTransactionLostError } from "./xa_committer.ts";
import { committableXid } from "./xa_committable.ts";
import { CheckpointOrderError, XaSinkWriter } from "./xa_writer.ts";
import { FencedWriterError } from "./fence.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { xidSql } from "./xid.ts";
import { openConnection } from "./connection.ts";

interface Row {
  readonly id: number;
  readonly name: string;
}

const ctx = { timestamp: undefined };

/** A table, an XA sink on it with its own prefix and commit log, and cleanup. */
async function fixture(
  label: string,
  options: { batchSize?: number; deliveryGuarantee?: "exactly-once" | "at-least-once" | "none" } =
    {},
) {
  const table = uniqueName(`xa_${label}`);
  const prefix = uniqueName("p");
  const commitLogTable = uniqueName("xa_log");
  await sql(`CREATE TABLE \`${table}\` (id INT PRIMARY KEY, name VARCHAR(32)) ENGINE=InnoDB`);
  const sink = mariaDbXaSink<Row>({
    connection: TEST_CONNECTION,
    sql: `INSERT INTO \`${table}\` (id, name) VALUES (?, ?)`,
    parameters: (r) => [r.id, r.name],
    xidPrefix: prefix,
    commitLogTable,
    detachTimeoutMs: 2000,
    ...options,
  }) as SinkV2<Row, XaCommittable>;
  return {
    table,
    prefix,
    sink,
    async cleanup() {
      await cleanupPrefix(prefix, commitLogTable);
      await sql(`DROP TABLE IF EXISTS \`${table}\``);
    },
  };
}

async function writeAll(writer: SinkWriter<Row, XaCommittable>, from: number, to: number) {
  for (let id = from; id < to; id++) await writer.write({ id, name: `n${id}` }, ctx);
}

async function commitAll(
  sink: SinkV2<Row, XaCommittable>,
  committables: readonly XaCommittable[],
  checkpointId: number,
) {
  const committer = await sink.createCommitter!(committerContext({ uid: "u" }));
  const requests = committables.map((c) => new RecordingRequest(c, checkpointId));
  await committer.commit(requests);
  await committer.close();
  return requests.map((r) => r.signal.kind);
}

Deno.test("the XA sink's rows stay invisible until the committer commits the prepared xid", async () => {
  const f = await fixture("visible", { batchSize: 1000 });
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 2500);
    await writer.flush(false);
    const committables = await writer.prepareCommit!(1);
    assert.equal(committables.length, 1);
    assert.equal(committables[0]!.records, 2500);
    assert.deepEqual(await rows(f.table), []);
    assert.deepEqual(await preparedOf(f.prefix), [
      `${committables[0]!.gtrid}/${committables[0]!.bqual}`,
    ]);
    assert.deepEqual(await commitAll(f.sink, committables, 1), ["committed"]);
    const committed = await rows(f.table);
    assert.equal(committed.length, 2500);
    assert.deepEqual(committed[2499], { id: 2499, name: "n2499" });
    assert.deepEqual(await preparedOf(f.prefix), []);
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("an XA writer with nothing written since the last barrier prepares no transaction", async () => {
  const f = await fixture("empty");
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    assert.deepEqual(await writer.prepareCommit!(1), []);
    await writeAll(writer, 0, 3);
    const second = await writer.prepareCommit!(2);
    assert.equal(second.length, 1);
    assert.deepEqual(await writer.prepareCommit!(3), []);
    assert.match(second[0]!.gtrid, new RegExp(`^weir:${f.prefix}:0:1$`));
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("committing an xid again after it committed is signalled as already committed", async () => {
  const f = await fixture("replay");
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 10);
    const committables = await writer.prepareCommit!(1);
    assert.deepEqual(await commitAll(f.sink, committables, 1), ["committed"]);
    assert.deepEqual(await commitAll(f.sink, committables, 1), ["already-committed"]);
    assert.equal((await rows(f.table)).length, 10);
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("a prepared xid rolled back behind the sink's back fails its commit loudly, naming it", async () => {
  const f = await fixture("lost");
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 7);
    const committables = await writer.prepareCommit!(4);
    await sql(`XA ROLLBACK ${xidSql(committableXid(committables[0]!))}`);
    const committer = await f.sink.createCommitter!(committerContext({ uid: "u" }));
    const request = new RecordingRequest(committables[0]!, 4);
    await committer.commit([request]);
    await committer.close();
    assert.equal(request.signal.kind, "failed-known");
    const error = (request.signal as { error: Error }).error;
    assert.ok(error instanceof XaTransactionLostError);
    assert.match(error.message, new RegExp(committables[0]!.gtrid));
    assert.match(error.message, /checkpoint 4 with 7 records/);
    assert.deepEqual(await rows(f.table), []);
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("a prepared xid still attached to its connection is retried later, then commits", async () => {
  const f = await fixture("attached");
  const holder = await openConnection(TEST_CONNECTION);
  try {
    // Prepare an xid of the sink's format by hand and keep its connection open.
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 2);
    const [committable] = await writer.prepareCommit!(1);
    await commitAll(f.sink, [committable!], 1);
    const xid = {
      ...committableXid(committable!),
      bqual: committable!.bqual.replace(/\.1$/, ".9"),
    };
    await holder.query(`XA START ${xidSql(xid)}`);
    await holder.query(`INSERT INTO \`${f.table}\` (id, name) VALUES (100, 'held')`);
    await holder.query(`XA END ${xidSql(xid)}`);
    await holder.query(`XA PREPARE ${xidSql(xid)}`);
    const held: XaCommittable = { gtrid: xid.gtrid, bqual: xid.bqual, records: 1 };
    assert.deepEqual(await commitAll(f.sink, [held], 2), ["retry-later"]);
    await holder.end();
    let signals: string[] = [];
    for (let i = 0; i < 50; i++) {
      signals = await commitAll(f.sink, [held], 2);
      if (signals[0] !== "retry-later") break;
    }
    assert.deepEqual(signals, ["committed"]);
    assert.deepEqual((await rows(f.table)).map((r) => r.id), [0, 1, 100]);
    await writer.close();
  } finally {
    holder.destroy();
    await f.cleanup();
  }
});

Deno.test("a writer whose connection is killed mid-transaction fails and leaves nothing behind", async () => {
  const f = await fixture("killed", { batchSize: 5 });
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" })) as XaSinkWriter<Row>;
    await writeAll(writer, 0, 12);
    const connectionId = writer.currentConnectionId;
    assert.ok(connectionId !== undefined);
    await sql(`KILL ${connectionId}`);
    await assert.rejects(async () => {
      await writeAll(writer, 12, 20);
      await writer.prepareCommit!(1);
    });
    await writer.close();
    assert.deepEqual(await rows(f.table), []);
    assert.deepEqual(await preparedOf(f.prefix), []);
  } finally {
    await f.cleanup();
  }
});

Deno.test("a restore commits the restored xid and rolls back the xids prepared after the checkpoint", async () => {
  const f = await fixture("restore");
  try {
    const first = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(first, 0, 5);
    const c1 = await first.prepareCommit!(1);
    await writeAll(first, 5, 10);
    const c2 = await first.prepareCommit!(2); // checkpoint 2 never completes
    await writeAll(first, 10, 15);
    await first.flush(false); // an open transaction at the crash
    await first.close(); // the crash
    assert.equal((await preparedOf(f.prefix)).length, 2);
    // Restore from checkpoint 1: the committer runs first, then the writer.
    assert.deepEqual(await commitAll(f.sink, c1, 1), ["committed"]);
    const second = await f.sink.createWriter(
      writerContext({ uid: "u", attempt: 1, restoredCheckpointId: 1 }),
    );
    assert.deepEqual(await preparedOf(f.prefix), []);
    assert.deepEqual((await rows(f.table)).map((r) => r.id), [0, 1, 2, 3, 4]);
    // The replay writes 5..14 again, in a transaction whose base is the restored checkpoint.
    await writeAll(second, 5, 15);
    const c3 = await second.prepareCommit!(3);
    assert.match(c3[0]!.gtrid, /:0:1$/);
    assert.notEqual(c3[0]!.bqual, c2[0]!.bqual);
    assert.deepEqual(await commitAll(f.sink, c3, 3), ["committed"]);
    assert.deepEqual(
      (await rows(f.table)).map((r) => r.id),
      Array.from({ length: 15 }, (_, i) => i),
    );
    await second.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("a fresh start rolls back every prepared xid of the sink's prefix and owner share", async () => {
  const f = await fixture("fresh");
  try {
    const owners = [];
    for (let subtask = 0; subtask < 3; subtask++) {
      const w = await f.sink.createWriter(
        writerContext({ uid: "u", subtaskIndex: subtask, parallelism: 3 }),
      );
      await writeAll(w, subtask * 10, subtask * 10 + 3);
      owners.push(...await w.prepareCommit!(1));
      await w.close();
    }
    assert.equal((await preparedOf(f.prefix)).length, 3);
    // A new job at parallelism 2: subtask 1 takes owner 1 only, subtask 0 owners 0 and 2.
    const one = await f.sink.createWriter(
      writerContext({ uid: "u", subtaskIndex: 1, parallelism: 2 }),
    );
    assert.deepEqual(
      (await preparedOf(f.prefix)).sort(),
      [owners[0]!, owners[2]!].map((c) => `${c.gtrid}/${c.bqual}`).sort(),
    );
    const zero = await f.sink.createWriter(
      writerContext({ uid: "u", subtaskIndex: 0, parallelism: 2 }),
    );
    assert.deepEqual(await preparedOf(f.prefix), []);
    assert.deepEqual(await rows(f.table), []);
    await one.close();
    await zero.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("the XA sink at least once sends its batch at every barrier in autocommit", async () => {
  const f = await fixture("alo", { deliveryGuarantee: "at-least-once" });
  try {
    assert.equal(f.sink.createCommitter, undefined);
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 4);
    assert.deepEqual(await rows(f.table), []);
    await writer.flush(false);
    assert.equal((await rows(f.table)).length, 4);
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("the XA sink with no guarantee sends at the end of input but not at a barrier", async () => {
  const f = await fixture("none", { deliveryGuarantee: "none" });
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u" }));
    await writeAll(writer, 0, 4);
    await writer.flush(false);
    assert.deepEqual(await rows(f.table), []);
    await writer.flush(true);
    assert.equal((await rows(f.table)).length, 4);
    await writer.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("mariaDbXaSink refuses an unknown guarantee, a statement it cannot batch and a bad prefix", () => {
  const base = {
    connection: TEST_CONNECTION,
    sql: "INSERT INTO t (a) VALUES (?)",
    parameters: (r: number) => [r],
  };
  assert.throws(
    () => mariaDbXaSink({ ...base, deliveryGuarantee: "twice" as never }),
    /deliveryGuarantee must be one of "none", "at-least-once", "exactly-once": current value is "twice"/,
  );
  assert.throws(
    () => mariaDbXaSink({ ...base, sql: "UPDATE t SET a = ?" }),
    /no top-level VALUES keyword/,
  );
  assert.throws(
    () => mariaDbXaSink({ ...base, xidPrefix: "has:colon" }),
    /xidPrefix must be 1 to 32 characters of \[A-Za-z0-9_.-\]: current value is "has:colon"/,
  );
  assert.throws(() => mariaDbXaSink({ ...base, batchSize: 0 }), /batchSize must be a positive/);
});

Deno.test("a record whose parameters do not match the statement's placeholders fails naming both", async () => {
  const f = await fixture("params");
  const log = uniqueName("xa_log");
  try {
    const sink = mariaDbXaSink<Row>({
      connection: TEST_CONNECTION,
      sql: `INSERT INTO \`${f.table}\` (id, name) VALUES (?, ?)`,
      parameters: (r) => [r.id],
      xidPrefix: f.prefix,
      commitLogTable: log,
    });
    const writer = await sink.createWriter(writerContext({ uid: "u" }));
    assert.throws(
      () => writer.write({ id: 1, name: "x" }, ctx),
      /parameters\(record\) must return an array of 2 values .*current value is \[1\]/,
    );
    await writer.close();
  } finally {
    await f.cleanup();
    await sql(`DROP TABLE IF EXISTS \`${log}\`, \`${log}_fence\`, \`${log}_fences\``);
  }
});

Deno.test("an XA writer refuses a barrier whose checkpoint id is not above the restored one, without restarts", async () => {
  const f = await fixture("order");
  try {
    const writer = await f.sink.createWriter(writerContext({ uid: "u", restoredCheckpointId: 5 }));
    await writeAll(writer, 0, 2);
    await assert.rejects(
      async () => await writer.prepareCommit!(3),
      (e: unknown) =>
        e instanceof CheckpointOrderError && e instanceof SuppressRestartsError &&
        /prepareCommit\(3\) came after 5/.test(e.message),
    );
    await writer.close();
    assert.deepEqual(await preparedOf(f.prefix), []);
  } finally {
    await f.cleanup();
  }
});

Deno.test("a region failover's new writer of subtask 0 fences neither subtask 1's writer of the older attempt nor is fenced by it", async () => {
  const f = await fixture("region");
  try {
    const other = await f.sink.createWriter(
      writerContext({ uid: "u", attempt: 0, subtaskIndex: 1, parallelism: 2 }),
    );
    await writeAll(other, 100, 105);
    // Region 0 restarts as attempt 1; region 1 keeps running on attempt 0.
    const restarted = await f.sink.createWriter(
      writerContext({ uid: "u", attempt: 1, subtaskIndex: 0, parallelism: 2 }),
    );
    await writeAll(restarted, 0, 5);
    assert.equal((await other.prepareCommit!(1)).length, 1);
    assert.equal((await restarted.prepareCommit!(1)).length, 1);
    // A writer of subtask 1 starting late on attempt 0 (region 1 never restarted) joins.
    const late = await f.sink.createWriter(
      writerContext({ uid: "u", attempt: 0, subtaskIndex: 1, parallelism: 2 }),
    );
    await late.close();
    await other.close();
    await restarted.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("a writer of another job takes over the fences of the subtasks its lingering scan covers", async () => {
  const f = await fixture("rescaled");
  try {
    // Job test-job ran at parallelism 2; its subtask 1 is a zombie.
    const zombie = await f.sink.createWriter(
      writerContext({ uid: "u", attempt: 0, subtaskIndex: 1, parallelism: 2 }),
    );
    await writeAll(zombie, 100, 105);
    // A resumed job at parallelism 1: its subtask 0 scans the xids of owners 0 and 1.
    const resumed = await f.sink.createWriter({
      ...writerContext({ uid: "u", attempt: 0, subtaskIndex: 0, parallelism: 1 }),
      jobId: "resumed-job",
    });
    await assert.rejects(
      async () => await zombie.prepareCommit!(1),
      (e: unknown) =>
        e instanceof FencedWriterError &&
        /a newer attempt holds the fence of subtask 1 of xid prefix/.test(e.message),
    );
    assert.deepEqual(await preparedOf(f.prefix), []);
    await zombie.close();
    await resumed.close();
  } finally {
    await f.cleanup();
  }
});

Deno.test("a writer of a replaced attempt that prepares after the new attempt took over rolls its xid back and fails", async () => {
  const f = await fixture("zombie");
  try {
    const zombie = await f.sink.createWriter(writerContext({ uid: "u", attempt: 0 }));
    await writeAll(zombie, 0, 5);
    // The next attempt restores (nothing to restore here) and scans before the zombie prepares.
    const live = await f.sink.createWriter(writerContext({ uid: "u", attempt: 1 }));
    await assert.rejects(
      async () => await zombie.prepareCommit!(1),
      (e: unknown) =>
        e instanceof FencedWriterError &&
        /a newer attempt holds the fence of subtask 0 of xid prefix .* rolled back .* prepared for checkpoint 1/
          .test(e.message),
    );
    assert.deepEqual(await preparedOf(f.prefix), []);
    // A writer of the replaced attempt that only now starts is refused at once.
    await assert.rejects(
      async () => await f.sink.createWriter(writerContext({ uid: "u", attempt: 0 })),
      (e: unknown) =>
        e instanceof FencedWriterError &&
        /attempt 1 of job test-job already holds the fence of subtask 0 of xid prefix/.test(
          e.message,
        ),
    );
    await writeAll(live, 0, 5);
    assert.equal((await live.prepareCommit!(1)).length, 1);
    await zombie.close();
    await live.close();
  } finally {
    await f.cleanup();
  }
});
