/**
 * Breaker tests of the MariaDB XA sink's restore after its commit log was
 * pruned: a savepoint or checkpoint restored after its xids' commit-log
 * rows were deleted cannot prove they committed, so the restore's commit
 * must fail loudly (without restarts, naming the xid and the retention)
 * and change nothing in the table.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { SinkV2 } from "../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../runtime/failure.ts";
import {
  cleanupPrefix,
  committerContext,
  RecordingRequest,
  rows,
  sql,
  TEST_CONNECTION,
  uniqueName,
  withConnection,
  writerContext,
} from "../connectors/mariadb/_test_kit.ts";
import { mariaDbXaSink } from "../connectors/mariadb/xa_sink.ts";
import type { XaCommittable } from "../connectors/mariadb/xa_committable.ts";
import { XaTransactionLostError } from "../connectors/mariadb/xa_committer.ts";
import { CommitLog } from "../connectors/mariadb/commit_log.ts";

interface Row {
  readonly id: number;
  readonly name: string;
}

Deno.test("a MariaDB XA restore whose committed xids' commit-log rows were pruned fails loudly without restarts and changes nothing", async () => {
  const table = uniqueName("xa_pruned");
  const prefix = uniqueName("p");
  const commitLogTable = uniqueName("xa_log");
  await sql(`CREATE TABLE \`${table}\` (id INT PRIMARY KEY, name VARCHAR(32)) ENGINE=InnoDB`);
  try {
    const sink = mariaDbXaSink<Row>({
      connection: TEST_CONNECTION,
      sql: `INSERT INTO \`${table}\` (id, name) VALUES (?, ?)`,
      parameters: (r) => [r.id, r.name],
      xidPrefix: prefix,
      commitLogTable,
      detachTimeoutMs: 2000,
    }) as SinkV2<Row, XaCommittable>;
    const writer = await sink.createWriter(writerContext({ uid: "u" }));
    for (let id = 0; id < 5; id++) {
      await writer.write({ id, name: `n${id}` }, { timestamp: undefined });
    }
    const committables = await writer.prepareCommit!(1);
    await writer.close();
    const commit = async (restoredCheckpointId: number | undefined) => {
      const committer = await sink.createCommitter!(
        committerContext(
          restoredCheckpointId === undefined ? { uid: "u" } : { uid: "u", restoredCheckpointId },
        ),
      );
      const requests = committables.map((c) => new RecordingRequest(c, 1));
      await committer.commit(requests);
      await committer.close();
      return requests.map((r) => r.signal);
    };
    assert.deepEqual((await commit(undefined)).map((s) => s.kind), ["committed"]);
    // Retention passed: every row of the prefix is pruned (retention 0 ms).
    const pruned = await withConnection((c) => new CommitLog(commitLogTable, prefix).prune(c, 0));
    assert.equal(pruned, 1);
    // The restore of checkpoint 1 (e.g. from a savepoint) commits its committable again.
    const [signal] = await commit(1);
    assert.equal(signal!.kind, "failed-known");
    const error = (signal as { error: Error }).error;
    assert.ok(error instanceof XaTransactionLostError && error instanceof SuppressRestartsError);
    assert.match(
      error.message,
      new RegExp(`${committables[0]!.gtrid}.*checkpoint 1 with 5 records`),
    );
    assert.match(error.message, /commit log's retention/);
    assert.deepEqual((await rows(table)).map((r) => r.id), [0, 1, 2, 3, 4]);
  } finally {
    await cleanupPrefix(prefix, commitLogTable);
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
});
