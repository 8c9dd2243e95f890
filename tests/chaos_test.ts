/**
 * The short chaos run of `deno task test` (the long one is `deno task
 * chaos`; see `tests/chaos.ts`): the exactly-once audit job on a coordinator
 * and two workers, 12 planned worker kills (external SIGKILLs, and kills
 * during alignment, after the sink's pre-commit and before its commit; all
 * 12 must be made), one more armed at the final checkpoint and one during a
 * NATS server crash with 2 s of outage (each when it comes in time); the
 * committed output must be exactly the input, with no transaction left
 * open.
 *
 * @module
 */

import assert from "node:assert/strict";
import { runChaos } from "./chaos.ts";

const KEYS = 100;
const PER_KEY = 300;
const KILLS = 12;

Deno.test({
  name:
    `chaos: ${KILLS} worker kills and a NATS restart lose, duplicate and reorder no committed record`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const result = await runChaos({
      keys: KEYS,
      perKey: PER_KEY,
      kills: KILLS,
      natsRestarts: 1,
      natsOutageMs: 2000,
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
    for (const kind of ["alignment", "after-snapshot", "before-commit"] as const) {
      assert.ok(result.kills[kind] >= 1, `${context}: no ${kind} kill`);
    }
    assert.equal(result.natsRestarts, 1, context);
    assert.ok(result.restarts >= 1, context);
  },
});
