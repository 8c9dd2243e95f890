/**
 * Breaker tests of the file sink on a full disk: a 64 KiB tmpfs mounted for
 * the test (needs root and mount rights; the test is ignored where a tmpfs
 * cannot be mounted). The failure must name the part file, and after the
 * restart nothing of the failed attempt is left, no part file is finished,
 * and once space is back the replay commits every record once.
 *
 * @module
 */

import assert from "node:assert/strict";
import { FileSink } from "../connectors/file/file_sink.ts";
import { lineEncoder } from "../connectors/file/row_encoders.ts";
import { CommitRequestImpl } from "../runtime/task/operators/sink_commit.ts";
import type { WriterInitContext } from "../runtime/api/sink_v2.ts";
import type { FileSinkWriterState } from "../connectors/file/file_sink_state.ts";

/** Mounts a tmpfs of `size` at a fresh directory; undefined when this process cannot. */
function mountTmpfs(size: string): string | undefined {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return undefined;
  const dir = Deno.makeTempDirSync({ prefix: "weir_breaker_tmpfs_" });
  try {
    const out = new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    if (out.success) return dir;
  } catch {
    // no mount binary
  }
  Deno.removeSync(dir);
  return undefined;
}

const mounted = mountTmpfs("64k");

function context(attempt: number): WriterInitContext<FileSinkWriterState> {
  return {
    subtaskIndex: 0,
    parallelism: 1,
    attempt,
    uid: "out",
    jobId: "breaker-file",
    restoredCheckpointId: undefined,
    restoredState: [],
    checkpointingMode: "exactly-once",
  };
}

Deno.test({
  name:
    "a file sink on a full disk fails naming the part file, leaves nothing after the restart, and commits every record once when space is back",
  ignore: mounted === undefined,
  async fn() {
    const dir = `${mounted}/out`;
    try {
      const sink = new FileSink<string>({ path: dir, encoder: lineEncoder() });
      const records = Array.from({ length: 1000 }, (_, i) => `${"x".repeat(100)}${i}`);
      const writer = await sink.createWriter(context(0));
      try {
        await assert.rejects(
          async () => {
            for (const r of records) await writer.write(r, { timestamp: undefined });
            await writer.flush(false);
            await writer.prepareCommit!(1);
          },
          /Cannot write \d+ bytes to part file '.*\/out\/\.part-out-0-0\.txt\.inprogress\.[0-9a-f]{8}' .*No space left on device/,
        );
      } finally {
        await writer.close();
      }
      // The restart on the same full disk discards the failed attempt's file.
      await (await sink.createWriter(context(1))).close();
      assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), []);
      // Space is back (the records are fewer than the disk holds): the replay commits each once.
      const few = records.slice(0, 300);
      const again = await sink.createWriter(context(2));
      for (const r of few) await again.write(r, { timestamp: undefined });
      await again.flush(false);
      const committables = await again.prepareCommit!(1);
      await again.close();
      const committer = sink.createCommitter({ ...context(2), restoredCheckpointId: undefined });
      const requests = committables.map((c) =>
        new CommitRequestImpl({ checkpointId: 1, committable: c }, 0)
      );
      await committer.commit(requests as never);
      assert.deepEqual(requests.map((r) => r.seal()).map((o) => o.kind), ["committed"]);
      await committer.close();
      const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
      assert.deepEqual(names, ["part-out-0-0.txt"]); // the discarded name is free again: nothing named it
      const lines = Deno.readTextFileSync(`${dir}/${names[0]}`).split("\n").filter((l) => l !== "");
      assert.deepEqual(lines, few);
    } finally {
      new Deno.Command("umount", { args: [mounted!] }).outputSync();
      Deno.removeSync(mounted!, { recursive: true });
    }
  },
});
