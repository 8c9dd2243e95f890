/**
 * The short chaos run of `deno task test` for incremental checkpoints on
 * the SQLite backend (the changelog backend over SQLite; FLIP-158): the
 * exactly-once audit job on a coordinator and two workers, checkpoints
 * every 500 ms and a materialization at least every 500 ms (so
 * materializations and the retention of shared blobs happen during the
 * faults), 4 planned worker kills (one external SIGKILL, and one each
 * during alignment, after the sink's pre-commit and before its commit; all
 * must be made) and one more armed at the final checkpoint when it comes in
 * time. The committed output must be exactly the input, no transaction left
 * open, and with `retainOnFinish` the checkpoint bucket must hold only the
 * retained checkpoint and the shared blobs its metadata refers to, none
 * missing. The long runs: `deno run -A tests/chaos.ts --state-backend sqlite
 * --incremental …` (see `tests/chaos.ts`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { runChaos } from "./chaos.ts";

const KEYS = 50;
const PER_KEY = 200;
const KILLS = 4;

Deno.test({
  name:
    `chaos, sqlite + incremental checkpoints: ${KILLS} worker kills lose, duplicate and reorder no committed record, and leave only the retained checkpoint's blobs`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const result = await runChaos({
      keys: KEYS,
      perKey: PER_KEY,
      kills: KILLS,
      natsRestarts: 0,
      checkpointIntervalMs: 500,
      stateBackend: "sqlite",
      incremental: true,
      materializationIntervalMs: 500,
      retainOnFinish: true,
    });
    const l = result.leftovers;
    const context = `seed ${result.seed}: ${result.killsLine}; ${result.resultLine}; ` +
      `${l.objects.length} objects, retained ${JSON.stringify(l.retained)}, unreferenced shared ` +
      `${l.unreferencedShared.join(",")}, missing ${l.missing.join(",")}, stray ${
        l.strayCheckpointObjects.join(",")
      }`;
    assert.equal(result.report.records, KEYS * PER_KEY, context);
    assert.equal(result.report.lost, 0, context);
    assert.equal(result.report.duplicated, 0, context);
    assert.equal(result.report.outOfOrder, 0, context);
    assert.equal(result.report.violations, 0, context);
    assert.equal(result.report.unexpected, 0, context);
    assert.equal(result.openTransactions, 0, context);
    assert.equal(result.plannedKills, KILLS, `${context}: ${result.plannedKills} of ${KILLS} made`);
    for (const kind of ["alignment", "after-snapshot", "before-commit"] as const) {
      assert.ok(result.kills[kind] >= 1, `${context}: no ${kind} kill`);
    }
    assert.ok(result.restarts >= 1, context);
    assert.equal(l.jobs.length, 1, context);
    const retained = Object.values(l.retained)[0] ?? [];
    assert.ok(retained.length >= 1, `${context}: the checkpoint is retained`);
    assert.ok(
      l.objects.some((o) => o.includes("/shared/")),
      `${context}: the retained incremental checkpoint refers to shared blobs`,
    );
    assert.deepEqual(l.missing, [], context);
    assert.deepEqual(l.unreferencedShared, [], context);
    assert.deepEqual(l.strayCheckpointObjects, [], context);
  },
});
