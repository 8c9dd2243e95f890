/**
 * The XA sink across a real process death: a writer process prepares two
 * transactions (checkpoints 1 and 2), has a third one open, and is killed
 * with SIGKILL. A restore from checkpoint 1 commits its transaction through
 * the committer and, in `createWriter`, rolls back the one prepared for
 * checkpoint 2; the open one died with the process's connection.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  cleanupPrefix,
  committerContext,
  preparedOf,
  RecordingRequest,
  rows,
  sql,
  uniqueName,
  writerContext,
} from "./_test_kit.ts";
import { checkXaCommittable } from "./xa_committable.ts";
import { mariaDbXaSink } from "./xa_sink.ts";
import { TEST_CONNECTION } from "./_test_kit.ts";

Deno.test("a restore after the writer process is SIGKILLed commits checkpoint 1's xid and rolls back checkpoint 2's", async () => {
  const table = uniqueName("xa_kill");
  const prefix = uniqueName("kill");
  const commitLogTable = uniqueName("xa_kill_log");
  await sql(`CREATE TABLE \`${table}\` (id INT NOT NULL) ENGINE=InnoDB`);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("./_crash_writer.ts", import.meta.url).pathname,
      table,
      prefix,
      commitLogTable,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        throw new Error(`the writer process ended before printing its committables: ${line}`);
      }
      line += value;
    }
    const [c1, c2] = (JSON.parse(line) as unknown[]).map(checkXaCommittable);
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    assert.deepEqual(
      (await preparedOf(prefix)).sort(),
      [c1!, c2!].map((c) => `${c.gtrid}/${c.bqual}`).sort(),
    );
    assert.deepEqual(await rows(table), []);

    const sink = mariaDbXaSink<number>({
      connection: TEST_CONNECTION,
      sql: `INSERT INTO \`${table}\` (id) VALUES (?)`,
      parameters: (id) => [id],
      xidPrefix: prefix,
      commitLogTable,
    });
    const committer = await sink.createCommitter!(
      committerContext({ uid: "kill", restoredCheckpointId: 1 }),
    );
    const request = new RecordingRequest(c1!, 1);
    await committer.commit([request]);
    assert.equal(request.signal.kind, "committed");
    const writer = await sink.createWriter(
      writerContext({ uid: "kill", attempt: 1, restoredCheckpointId: 1 }),
    );
    assert.deepEqual(await preparedOf(prefix), []);
    assert.deepEqual(
      (await rows(table)).map((r) => r.id),
      Array.from({ length: 10 }, (_, i) => i),
    );
    // Checkpoint 2's xid is gone for good: committing it would be loss, and says so.
    const late = new RecordingRequest(c2!, 2);
    await committer.commit([late]);
    assert.equal(late.signal.kind, "failed-known");
    await writer.close();
    await committer.close();
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already dead.
    }
    await child.status;
    await cleanupPrefix(prefix, commitLogTable);
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
});
