import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { withTempDir } from "../tests/_job_kit.ts";
import { CONNECTION, uniqueName } from "../connectors/jetstream/_test_kit.ts";
import { deleteStreams } from "../tests/_chaos_kit.ts";
import { BILLING_UIDS, buildBillingPipeline } from "./billing.ts";
import {
  checkCopyIds,
  checkTotalRows,
  checkUpdateRows,
  naiveFailureFreeTotals,
} from "./billing_check.ts";
import { sumBatch } from "./billing_naive.ts";
import {
  type AccountUpdate,
  BillDeduplicator,
  BillFormatError,
  DUPLICATE_BILLS,
  parseBill,
} from "./billing_functions.ts";
import { type Bill, billingInput, expectedTotals, publishBillingInput } from "./billing_input.ts";
import type { UpdateRow } from "./billing_tables.ts";

function rowsOf(updates: readonly AccountUpdate[]): UpdateRow[] {
  return updates.map((u) => ({
    account: u.account,
    count: u.count,
    total: u.total,
    billId: u.billId,
    amount: u.amount,
  }));
}

Deno.test("billingInput publishes each copy 1 to 5 minutes of event time after its bill, in the bill's partition", () => {
  const messages = [...billingInput("s", { bills: 20_000, seed: 7 })];
  const lastBillTime = Math.max(...messages.map((m) => m.bill.time));
  const firstAt = new Map<string, { index: number; subject: string; time: number }>();
  const lastTimeBefore: number[] = [];
  let newest = -Infinity;
  let copies = 0;
  messages.forEach((m, index) => {
    lastTimeBefore.push(newest);
    if (!m.duplicate) {
      assert.ok(m.bill.time > newest, `bill ${m.bill.billId} is in event-time order`);
      newest = m.bill.time;
      firstAt.set(m.bill.billId, { index, subject: m.subject, time: m.bill.time });
      return;
    }
    copies++;
    const first = firstAt.get(m.bill.billId);
    assert.ok(first !== undefined, `copy of ${m.bill.billId} comes after its bill`);
    assert.equal(m.subject, first.subject);
    const lag = lastTimeBefore[index]! - first.time;
    const tail = lastTimeBefore[index] === lastBillTime; // the log ended before the copy was due
    assert.ok(
      (tail || lag >= 60_000 - 100) && lag <= 300_000,
      `copy of ${m.bill.billId} lags ${lag} ms`,
    );
  });
  assert.equal(messages.length, 20_000 + copies);
  assert.ok(copies > 1800 && copies < 2200, `${copies} copies of 20000 bills`);
  assert.deepEqual(
    [...billingInput("s", { bills: 50, seed: 7 })],
    [...billingInput("s", { bills: 50, seed: 7 })],
    "the same seed gives the same input",
  );
});

Deno.test("billingInput refuses a shape out of range, naming the field and its value", () => {
  assert.throws(
    () => [...billingInput("s", { bills: 0 })],
    /'bills' must be a positive integer: current value is 0/,
  );
  assert.throws(
    () => [...billingInput("s", { bills: 5, duplicateRatio: 1.5 })],
    /'duplicateRatio' must be in \[0, 1\]: current value is 1.5/,
  );
});

Deno.test("parseBill decodes a bill and names the field that is wrong", () => {
  const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  const bill: Bill = { billId: "b1", account: "acct-1", amount: 250, time: 1000 };
  assert.deepEqual(parseBill(enc({ ...bill, extra: true })), bill);
  assert.throws(
    () => parseBill(enc({ ...bill, amount: 2.5 })),
    (e: unknown) =>
      e instanceof BillFormatError &&
      e.message === "Invalid bill: field 'amount' must be a safe integer ≥ 1: current value is 2.5",
  );
  assert.throws(() => parseBill(enc({ ...bill, account: "" })), /field 'account'/);
  assert.throws(() => parseBill(enc([1])), /must be a JSON object/);
  assert.throws(() => parseBill(new Uint8Array([0xff])), /not valid UTF-8/);
});

Deno.test("checkUpdateRows counts a lost bill, a doubled update and a wrong total", () => {
  const messages = [...billingInput("s", { bills: 200, accounts: 5, seed: 3 })];
  const expected = expectedTotals(messages);
  const perAccount = new Map<string, { count: number; total: number }>();
  const rows: UpdateRow[] = [];
  for (const bill of expected.bills.values()) {
    const a = perAccount.get(bill.account) ?? { count: 0, total: 0 };
    a.count++;
    a.total += bill.amount;
    perAccount.set(bill.account, a);
    rows.push({ account: bill.account, ...a, billId: bill.billId, amount: bill.amount });
  }
  const clean = checkUpdateRows(rows, expected);
  assert.deepEqual(clean, {
    bills: 200,
    rows: 200,
    lost: 0,
    duplicated: 0,
    unexpected: 0,
    inconsistent: 0,
    wrongTotals: 0,
  });
  // The last update of one account lost; a middle update of another written twice.
  const lastOf = (account: string) =>
    rows.reduce(
      (i, r, j) => r.account === account && (i < 0 || r.count > rows[i]!.count) ? j : i,
      -1,
    );
  const damaged = [...rows];
  const lostAt = lastOf("acct-0");
  damaged.splice(lostAt, 1);
  const doubled = damaged.find((r) => r.account === "acct-1" && r.count === 2)!;
  damaged.push(doubled);
  const report = checkUpdateRows(damaged, expected);
  assert.equal(report.lost, 1);
  assert.equal(report.duplicated, 1);
  assert.equal(report.wrongTotals, 1, "acct-0's latest row is one bill short");
  assert.equal(report.inconsistent, 1, "acct-1's chain repeats count 2 once");
});

Deno.test("the dedup forgets a bill once event time moved past its TTL, and keeps it before", async () => {
  // Watermark = a bill's time - 1, emitted with each bill (punctuated). A filler bill of the same
  // time goes before each bill of interest, so its access sees that watermark whether the
  // watermark of a bill reaches the dedup before or after the bill itself.
  const punctuated = WatermarkStrategy.forGenerator<Bill>(() => ({
    onEvent(_e, ts, output) {
      output.emitWatermark(ts - 1);
    },
    onPeriodicEmit() {},
  })).withTimestampAssigner((b) => b.time);
  const at = (billId: string, time: number): Bill => ({ billId, account: "x", amount: 1, time });
  const a = at("a", 1_000);
  const b = at("b", 20_000);
  const items = [
    at("f0", 1_000),
    a, // accessed at watermark 999
    at("f1", 20_000),
    b, // accessed at watermark 19 999
    at("f2", 25_000),
    a, // watermark 24 999 < 999 + 30 000: still known, a copy
    at("f3", 32_000),
    a, // watermark 31 999 ≥ 999 + 30 000: forgotten, passes as new
    b, // watermark 31 999 < 19 999 + 30 000: still known, a copy
  ];
  const sink = new CollectingSink<string>();
  const copies = new CollectingSink<string>();
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
  const deduped = env.fromSource(TestSource.of(items), punctuated, "bills").uid("bills")
    .keyBy((bill) => bill.billId)
    .process(new BillDeduplicator(30_000)).uid("dedup");
  deduped.map((bill) => bill.billId).uid("ids").sinkTo(sink).uid("out");
  deduped.getSideOutput(DUPLICATE_BILLS).map((bill) => bill.billId).uid("copy-ids")
    .sinkTo(copies).uid("copies");
  await withTempDir(async (dir) => {
    env.enableCheckpointing(60_000, { directory: dir });
    await env.execute("dedup ttl");
  });
  assert.deepEqual(sink.committed(), ["f0", "a", "f1", "b", "f2", "f3", "a"]);
  assert.deepEqual(copies.committed(), ["a", "b"]);
});

Deno.test({
  name:
    "the billing job counts every bill once per account through a failure, although a tenth of them arrive twice",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const stream = uniqueName("billing-test");
    const shape = { bills: 4000, accounts: 40, seed: 11 };
    try {
      await publishBillingInput(CONNECTION, stream, shape);
      const messages = [...billingInput(stream, shape)];
      const expected = expectedTotals(messages);
      await withTempDir(async (dir) => {
        const sink = new CollectingSink<AccountUpdate>();
        const copySink = new CollectingSink<Bill>();
        const env = StreamExecutionEnvironment.getExecutionEnvironment()
          .setParallelism(2)
          .enableCheckpointing(50, { directory: dir })
          .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
        buildBillingPipeline(
          env,
          { connection: CONNECTION, stream, recordsPerSecond: 5000 },
          { updates: sink, copies: copySink },
        );
        const sinkVertex = env.getJobGraph().vertices.find((v) =>
          v.operators.some((o) =>
            o.uid === BILLING_UIDS.sink
          )
        )!.id;
        let fired = false;
        env.setFaultInjector({
          task(point, site) {
            if (
              !fired && point === "after-snapshot" && site.vertexId === sinkVertex &&
              site.checkpointId >= 2
            ) {
              fired = true;
              throw new Error(
                `induced failure after the sink's pre-commit of checkpoint ${site.checkpointId}`,
              );
            }
          },
        });
        const result = await env.execute("billing test");
        assert.ok(fired, "the induced failure fired");
        assert.ok(result.restarts >= 1, `restarts: ${result.restarts}`);
        const report = checkUpdateRows(rowsOf(sink.committed()), expected);
        assert.deepEqual(report, {
          bills: 4000,
          rows: 4000,
          lost: 0,
          duplicated: 0,
          unexpected: 0,
          inconsistent: 0,
          wrongTotals: 0,
        });
        const copies = checkCopyIds(copySink.committed().map((b) => b.billId), expected);
        assert.deepEqual(copies, { copies: messages.length - 4000, lost: 0, duplicated: 0 });
      });
      // The seeds' in-batch dedup would have counted the copies that cross a batch boundary.
      const naive = naiveFailureFreeTotals(messages, 1000);
      const naiveCount = [...naive.values()].reduce((n, t) => n + t.count, 0);
      assert.ok(naiveCount > 4000 + 300, `in-batch dedup counts ${naiveCount} bills`);
    } finally {
      await deleteStreams(CONNECTION, [stream]);
    }
  },
});

Deno.test("the naive scheme's batch sums drop copies within a batch only, and checkTotalRows counts the rest", () => {
  const enc = (b: Bill) => new TextEncoder().encode(JSON.stringify(b));
  const a: Bill = { billId: "a", account: "x", amount: 5, time: 1 };
  const b: Bill = { billId: "b", account: "y", amount: 7, time: 2 };
  const first = sumBatch([enc(a), enc(b), enc(a)]);
  assert.equal(first.duplicates, 1);
  assert.deepEqual([...first.accounts], [["x", { count: 1, total: 5 }], ["y", {
    count: 1,
    total: 7,
  }]]);
  const second = sumBatch([enc(b)]); // b's copy in the next batch passes
  assert.deepEqual([...second.accounts], [["y", { count: 1, total: 7 }]]);

  const messages = [a, b, a, b].map((bill, i) => ({ subject: "s.p0", bill, duplicate: i >= 2 }));
  const expected = expectedTotals(messages);
  assert.deepEqual([...naiveFailureFreeTotals(messages, 3)], [
    ["x", { count: 1, total: 5 }],
    ["y", { count: 2, total: 14 }],
  ]);
  const report = checkTotalRows(
    [{ account: "y", count: 2, total: 14 }],
    { bills: expected.bills.size, accounts: expected.accounts },
  );
  assert.deepEqual(report, { bills: 2, lost: 1, duplicated: 1, wrongTotals: 2 });
});
