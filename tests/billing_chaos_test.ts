/**
 * The short billing chaos run of `deno task test` (the long one is `deno
 * task billing:chaos`; see `tests/billing_chaos.ts`): the billing job
 * (dedup with event-time TTL, per-account totals, MariaDB XA sink) on a
 * coordinator and two workers, 3000 bills of which a tenth arrive twice,
 * 10 planned worker kills (external SIGKILLs, and kills during alignment,
 * after the sink's `XA PREPARE` and before its `XA COMMIT`; all 10 must be
 * made) and one more armed at the final checkpoint when it comes in time.
 * The table must hold every bill exactly once, with the failure-free
 * totals, and no XA transaction of the run may be left prepared. The naive
 * scheme runs too, under as many kills; its line is printed, and it must
 * show the doubling the seeds warn about (copies across batches at least).
 *
 * @module
 */

import assert from "node:assert/strict";
import { runBillingChaos } from "./billing_chaos.ts";

const BILLS = 3000;
const KILLS = 10;

Deno.test({
  name:
    `billing chaos: ${KILLS} worker kills leave the MariaDB table equal to the failure-free totals, bill by bill`,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const result = await runBillingChaos({
      bills: BILLS,
      accounts: 100,
      kills: KILLS,
      batchSize: 200,
    });
    const context = `seed ${result.seed}: ${result.killsLine}; ${result.checkLine}; ` +
      `${result.naive.line}; ${result.resultLine}`;
    assert.equal(result.report.bills, BILLS, context);
    assert.equal(result.report.rows, BILLS, context);
    assert.equal(result.report.lost, 0, context);
    assert.equal(result.report.duplicated, 0, context);
    assert.equal(result.report.wrongTotals, 0, context);
    assert.equal(result.report.unexpected, 0, context);
    assert.equal(result.report.inconsistent, 0, context);
    assert.equal(result.openXa, 0, context);
    assert.equal(result.copies.lost, 0, context);
    assert.equal(result.copies.duplicated, 0, context);
    assert.ok(result.copies.copies > 0, context);
    assert.equal(
      result.plannedKills,
      KILLS,
      `${context}: ${result.plannedKills} of ${KILLS} planned kills made`,
    );
    for (const kind of ["alignment", "after-snapshot", "before-commit"] as const) {
      assert.ok(result.kills[kind] >= 1, `${context}: no ${kind} kill`);
    }
    assert.ok(result.restarts >= 1, context); // an external kill may hit a worker idle since a failover
    // The naive scheme double-counts at least the copies that cross a batch boundary.
    assert.ok(result.naive.crossBatch > 0, context);
    assert.ok(result.naive.report.duplicated >= result.naive.crossBatch, context);
    assert.equal(result.naive.report.lost, 0, context);
  },
});
