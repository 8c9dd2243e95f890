/**
 * State larger than the JS heap (issue 10): a child process with its V8
 * heap capped at {@linkcode HEAP_CAP_MB} MiB keeps {@linkcode KEYS} keys of
 * ValueState in the SQLite keyed state backend (cache of 20 000 entries),
 * then counts them, scans them all through `keys()` and reads every 997th
 * back (`_large_state_main.ts`). As a control, the same keys in the heap
 * backend under the same cap run out of memory: the cap is real, and the
 * state does not fit under it (the heap backend holds about 29 bytes per
 * key of this state, measured, so {@linkcode KEYS} keys need about
 * 28 MiB beside the runtime's own heap).
 *
 * ## Sizes
 *
 * The issue asks for 20M keys. They take 3 minutes of CPU (write, count,
 * scan, check; 26 minutes of wall time on the shared 2-core machine),
 * beyond a CI test's budget, so CI runs 1M keys under a 32 MiB cap;
 * `WEIR_SQLITE_LARGE_KEYS` and `WEIR_SQLITE_LARGE_HEAP_MB` override both.
 * Under that cap the heap backend's control kept 500 000 keys and ran out
 * of memory at 700 000 (measured with `_large_state_main.ts --backend
 * heap`), so 1M keys are 1.4 times past where it fails; should the heap
 * backend become leaner than that, the control's assertion fails and says
 * so, and {@linkcode KEYS} must grow. The SQLite child took 38 s of wall
 * time (8 s of CPU) for 1M keys under a 24 MiB cap, peak JS heap used
 * 26.4 MiB, against 2 m 41 s of wall time for the former 2M keys on the same
 * loaded machine. The 20M run, made once:
 *
 *     deno run -A --v8-flags=--max-old-space-size=64 runtime/state/sqlite/_large_state_main.ts \
 *       --keys 20000000 --cache 20000
 *
 * printed `20000000 keys: written in 1138.0 s (17574 keys/s), scanned in
 * 413.4 s, 20061 reads checked in 6.7 s; database 498.0 MiB; peak JS heap
 * used 56.3 MiB` (the heap backend would hold about 560 MiB).
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

/** Keys kept in CI. */
const KEYS = Number(Deno.env.get("WEIR_SQLITE_LARGE_KEYS") || 1_000_000);
/** The child's V8 heap cap, MiB. */
const HEAP_CAP_MB = Number(Deno.env.get("WEIR_SQLITE_LARGE_HEAP_MB") || 32);

const MAIN = fileURLToPath(new URL("./_large_state_main.ts", import.meta.url));

async function runChild(backend: "sqlite" | "heap", dir: string): Promise<Deno.CommandOutput> {
  return await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--v8-flags=--max-old-space-size=${HEAP_CAP_MB}`,
      MAIN,
      "--keys",
      String(KEYS),
      "--cache",
      "20000",
      "--backend",
      backend,
      "--dir",
      dir,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test(`the SQLite backend keeps ${KEYS} keys in a process whose JS heap is capped at ${HEAP_CAP_MB} MiB; the heap backend cannot`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-sqlite-large-" });
  try {
    const sqlite = await runChild("sqlite", dir);
    const out = new TextDecoder().decode(sqlite.stdout) + new TextDecoder().decode(sqlite.stderr);
    assert.equal(sqlite.code, 0, out);
    assert.match(out, new RegExp(`RESULT keys=${KEYS} `));
    console.log(out.trim());
    assert.deepEqual([...Deno.readDirSync(dir)], [], "the database is deleted on dispose");

    const heap = await runChild("heap", dir);
    const heapOut = new TextDecoder().decode(heap.stdout) + new TextDecoder().decode(heap.stderr);
    assert.notEqual(heap.code, 0, `the heap backend kept the keys under the cap:\n${heapOut}`);
    assert.match(
      heapOut,
      /heap out of memory|Allocation failed|out of memory/i,
      heapOut.slice(-2000),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
