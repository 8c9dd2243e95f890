/**
 * Checks a billing table against the failure-free result
 * (`expectedTotals` of `billing_input.ts`, computed from the input without
 * any engine). Pure functions over rows read back from MariaDB
 * (`billing_tables.ts`); no I/O.
 *
 * ## The counts, precisely
 *
 * For the Weir job's table (one row per account update, see
 * `billing_tables.ts`), {@linkcode checkUpdateRows}:
 *
 * - `lost`: distinct bills of the input with no row (`bill_id`) at all;
 * - `duplicated`: rows beyond the first for a bill of the input (a bill
 *   counted twice, whether by a replayed write or a copy the dedup let
 *   through);
 * - `unexpected`: rows whose `bill_id` is not in the input, or whose
 *   `account` or `amount` differ from that bill's;
 * - `inconsistent`: rows that break their account's chain: sorted by
 *   `bill_count`, each row must have `bill_count` = the previous row's + 1
 *   and `total` = the previous row's `total` + its `amount` (the first row:
 *   `bill_count` 1 and `total` = `amount`). A row breaks it when state and
 *   output got out of step, e.g. an update written again by an attempt
 *   whose state was rolled back (one row per break: a doubled row is one,
 *   the rows after it chain on);
 * - `wrongTotals`: accounts whose latest row (the largest `bill_count`,
 *   i.e. the `<table>_totals` view) does not show exactly the expected
 *   count and total, counting accounts of the input with no row and
 *   accounts in the table that are not in the input, and accounts whose
 *   latest count is held by more than one row with different totals.
 *
 * For the naive scheme's totals table (one row per account, see
 * `billing_naive.ts`), which keeps no per-bill trace,
 * {@linkcode checkTotalRows} counts contributions per account:
 * `lost` = Σ max(0, expected count − count), `duplicated` = Σ max(0, count −
 * expected count), `wrongTotals` = accounts whose count or total differs
 * (missing and extra accounts included). A loss and a duplicate in one
 * account would cancel in `lost`/`duplicated` (the scheme never loses: it
 * records the offset only after the write) but not in `wrongTotals`.
 *
 * @module
 */

import type { AccountTotal, BillMessage, ExpectedBilling } from "./billing_input.ts";
import type { TotalRow, UpdateRow } from "./billing_tables.ts";

/** What {@linkcode checkUpdateRows} found (see the module docs for each count). */
export interface BillingReport {
  /** Distinct bills in the input. */
  readonly bills: number;
  /** Rows in the table. */
  readonly rows: number;
  /** Bills of the input with no row. */
  readonly lost: number;
  /** Rows beyond the first per bill. */
  readonly duplicated: number;
  /** Rows of no bill of the input, or not matching their bill. */
  readonly unexpected: number;
  /** Rows breaking their account's chain of counts and totals. */
  readonly inconsistent: number;
  /** Accounts whose latest row is not the expected total and count. */
  readonly wrongTotals: number;
}

/** Checks the Weir job's update rows against `expected` (see the module docs). */
export function checkUpdateRows(
  rows: readonly UpdateRow[],
  expected: ExpectedBilling,
): BillingReport {
  const perBill = new Map<string, number>();
  let unexpected = 0;
  const byAccount = new Map<string, UpdateRow[]>();
  for (const row of rows) {
    const bill = expected.bills.get(row.billId);
    if (bill === undefined || bill.account !== row.account || bill.amount !== row.amount) {
      unexpected++;
    } else {
      perBill.set(row.billId, (perBill.get(row.billId) ?? 0) + 1);
    }
    const list = byAccount.get(row.account);
    if (list === undefined) byAccount.set(row.account, [row]);
    else list.push(row);
  }
  let lost = 0;
  let duplicated = 0;
  for (const id of expected.bills.keys()) {
    const n = perBill.get(id) ?? 0;
    if (n === 0) lost++;
    else duplicated += n - 1;
  }
  let inconsistent = 0;
  let wrongTotals = 0;
  for (const [account, list] of byAccount) {
    list.sort((a, b) => a.count - b.count);
    let previous = { count: 0, total: 0 };
    for (const row of list) {
      if (row.count !== previous.count + 1 || row.total !== previous.total + row.amount) {
        inconsistent++;
      }
      previous = row;
    }
    const want = expected.accounts.get(account);
    const last = list[list.length - 1]!;
    const tied = list.filter((r) => r.count === last.count);
    if (
      want === undefined || last.count !== want.count ||
      tied.some((r) => r.total !== want.total)
    ) {
      wrongTotals++;
    }
  }
  for (const account of expected.accounts.keys()) {
    if (!byAccount.has(account)) wrongTotals++;
  }
  return {
    bills: expected.bills.size,
    rows: rows.length,
    lost,
    duplicated,
    unexpected,
    inconsistent,
    wrongTotals,
  };
}

/** Whether a Weir report shows the failure-free result: every count but `bills` and `rows` 0. */
export function billingPassed(report: BillingReport): boolean {
  return report.lost === 0 && report.duplicated === 0 && report.unexpected === 0 &&
    report.inconsistent === 0 && report.wrongTotals === 0 && report.rows === report.bills;
}

/** What {@linkcode checkTotalRows} found (see the module docs). */
export interface TotalsReport {
  /** Distinct bills in the input. */
  readonly bills: number;
  /** Missing contributions, summed per account. */
  readonly lost: number;
  /** Extra contributions, summed per account. */
  readonly duplicated: number;
  /** Accounts whose count or total differs from the expected one. */
  readonly wrongTotals: number;
}

/** Checks a per-account totals table against the expected totals (see the module docs). */
export function checkTotalRows(
  rows: readonly TotalRow[],
  expected: { readonly bills: number; readonly accounts: ReadonlyMap<string, AccountTotal> },
): TotalsReport {
  let lost = 0;
  let duplicated = 0;
  let wrongTotals = 0;
  const seen = new Set<string>();
  for (const row of rows) {
    seen.add(row.account);
    const want = expected.accounts.get(row.account) ?? { count: 0, total: 0 };
    lost += Math.max(0, want.count - row.count);
    duplicated += Math.max(0, row.count - want.count);
    if (row.count !== want.count || row.total !== want.total) wrongTotals++;
  }
  for (const [account, want] of expected.accounts) {
    if (seen.has(account)) continue;
    lost += want.count;
    wrongTotals++;
  }
  return { bills: expected.bills, lost, duplicated, wrongTotals };
}

/**
 * What the naive scheme writes without any failure: the log cut into
 * batches of `batchSize` messages from the first, each deduplicated within
 * itself only, then added up per account. The excess over
 * {@linkcode ExpectedBilling.accounts} is the copies that crossed a batch
 * boundary (the seeds' "去重能力有限").
 * @throws {RangeError} unless `batchSize` is a positive integer.
 */
export function naiveFailureFreeTotals(
  messages: Iterable<BillMessage>,
  batchSize: number,
): Map<string, AccountTotal> {
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`'batchSize' must be a positive integer: current value is ${batchSize}`);
  }
  const totals = new Map<string, { count: number; total: number }>();
  let batch = new Set<string>();
  let inBatch = 0;
  for (const { bill } of messages) {
    if (inBatch === batchSize) {
      batch = new Set();
      inBatch = 0;
    }
    inBatch++;
    if (batch.has(bill.billId)) continue;
    batch.add(bill.billId);
    const t = totals.get(bill.account) ?? { count: 0, total: 0 };
    t.count++;
    t.total += bill.amount;
    totals.set(bill.account, t);
  }
  return totals;
}

/** What {@linkcode checkCopyIds} found. */
export interface CopiesReport {
  /** Copies in the input. */
  readonly copies: number;
  /** Copies of the input with no row in the copies table. */
  readonly lost: number;
  /** Rows beyond a bill's copies (doubled rows, or rows of bills without copies or not in the input). */
  readonly duplicated: number;
}

/**
 * Checks the copies table's bill ids against the input's copies: each bill
 * must have exactly as many rows as it has copies (messages beyond the
 * first), as the dedup rejects exactly those.
 */
export function checkCopyIds(ids: readonly string[], expected: ExpectedBilling): CopiesReport {
  const found = new Map<string, number>();
  for (const id of ids) found.set(id, (found.get(id) ?? 0) + 1);
  let copies = 0;
  let lost = 0;
  let duplicated = 0;
  for (const [id, want] of expected.copies) {
    copies += want;
    const got = found.get(id) ?? 0;
    lost += Math.max(0, want - got);
    duplicated += Math.max(0, got - want);
    found.delete(id);
  }
  for (const extra of found.values()) duplicated += extra;
  return { copies, lost, duplicated };
}
