/**
 * The short chaos run with coordinator kills (`tests/chaos.ts
 * --coordinator-kills`): two coordinators (high availability), three worker
 * kills (kinds drawn at random) and two SIGKILLs of the leading coordinator, each
 * replaced by a standby; the committed output must be exactly the input,
 * with no transaction left open.
 *
 * @module
 */

import assert from "node:assert/strict";
import { runChaos } from "./chaos.ts";

const KEYS = 40;
const PER_KEY = 150;
const KILLS = 3;
const COORDINATOR_KILLS = 2;

Deno.test({
  name:
    `chaos: ${COORDINATOR_KILLS} leader coordinator kills and ${KILLS} worker kills lose, duplicate and reorder no committed record`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const result = await runChaos({
      keys: KEYS,
      perKey: PER_KEY,
      kills: KILLS,
      natsRestarts: 0,
      coordinatorKills: COORDINATOR_KILLS,
      endOfInputKill: false,
    });
    const context = `seed ${result.seed}: ${result.killsLine}; ${result.resultLine}`;
    assert.equal(result.coordinatorKills, COORDINATOR_KILLS, context);
    assert.equal(result.report.records, KEYS * PER_KEY, context);
    assert.equal(result.report.lost, 0, context);
    assert.equal(result.report.duplicated, 0, context);
    assert.equal(result.report.outOfOrder, 0, context);
    assert.equal(result.report.violations, 0, context);
    assert.equal(result.report.unexpected, 0, context);
    assert.equal(result.openTransactions, 0, context);
    assert.equal(result.plannedKills, KILLS, context);
  },
});
