/**
 * Unaligned checkpoints under SIGKILLs in cluster mode: the exactly-once
 * audit job of the chaos run (`chaos.ts`) on a coordinator and two
 * workers, with `unalignedCheckpoints` and a 20 ms aligned-checkpoint
 * timeout (checkpoints start aligned, so kills armed during alignment still
 * fire, and switch to unaligned, storing in-flight data as channel state),
 * and 6 planned worker kills (external SIGKILLs, during alignment, after
 * the sink's pre-commit and before its commit). The committed output must
 * be exactly the input (the output of a run without failures), record by
 * record: none lost, duplicated or out of order per key, no transaction
 * left open.
 *
 * @module
 */

import assert from "node:assert/strict";
import { runChaos } from "./chaos.ts";

const KEYS = 50;
const PER_KEY = 200;
const KILLS = 6;

Deno.test({
  name:
    `unaligned checkpoints: ${KILLS} worker kills lose, duplicate and reorder no committed record`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const result = await runChaos({
      keys: KEYS,
      perKey: PER_KEY,
      kills: KILLS,
      natsRestarts: 0,
      unalignedTimeoutMs: 20,
    });
    const context = `seed ${result.seed}: ${result.killsLine}; ${result.resultLine}`;
    assert.equal(result.report.records, KEYS * PER_KEY, context);
    assert.equal(result.report.lost, 0, context);
    assert.equal(result.report.duplicated, 0, context);
    assert.equal(result.report.outOfOrder, 0, context);
    assert.equal(result.report.violations, 0, context);
    assert.equal(result.report.unexpected, 0, context);
    assert.equal(result.openTransactions, 0, context);
    assert.equal(
      result.plannedKills,
      KILLS,
      `${context}: ${result.plannedKills} of ${KILLS} planned kills made`,
    );
    assert.ok(result.restarts >= 1, context);
  },
});
