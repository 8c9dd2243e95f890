import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { type AggregateName, createAggregate } from "./aggregates.ts";
import { decideGroupUpdate, GroupAggregateFunction, type GroupState } from "./group_aggregate.ts";
import { TYPES } from "./types.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { KeyedProcessOperator } from "../task/operators/transform_operators.ts";
import type { KeyedProcessFunction } from "../api/functions.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { batchGroupBy, changelogOf, changeOperation } from "./_changelog_test_kit.ts";

/** The aggregates of the property: each over column `v` (NULL allowed), plus COUNT(*). */
const CALLS: { fn: AggregateName; distinct: boolean }[] = [
  { fn: "COUNT_STAR", distinct: false },
  { fn: "COUNT", distinct: false },
  { fn: "COUNT", distinct: true },
  { fn: "SUM", distinct: false },
  { fn: "AVG", distinct: false },
  { fn: "MIN", distinct: false },
  { fn: "MAX", distinct: false },
];

/** Runs the continuous GROUP BY over a changelog; returns its output changelog. */
function continuous(changes: readonly Row[], generateUpdateBefore: boolean): Row[] {
  const aggregates = CALLS.map((c) => createAggregate({ ...c, integral: true }));
  const states = new Map<string, GroupState>();
  const out: Row[] = [];
  for (const row of changes) {
    const key = row.fields[0] as string;
    const v = row.fields[1] ?? null;
    const update = decideGroupUpdate(
      aggregates,
      CALLS.map(() => v),
      [key],
      states.get(key),
      row,
      generateUpdateBefore,
    );
    if (update.state === null) states.delete(key);
    else states.set(key, update.state);
    out.push(...update.emit);
  }
  return out;
}

/** Operations: insert a row, or retract (as -D or as a -U/+U pair) the i-th live row. */
const operation = changeOperation(["a", "b", "c"], 5);

Deno.test("GroupAggregate in retract mode: its changelog applied to an empty table equals the batch GROUP BY over the final input", () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 60 }), (ops) => {
      const { live, changes } = changelogOf(ops);
      const table = new Map<string, number>();
      for (const row of continuous(changes, true)) applyChange(table, row);
      assert.deepEqual(table, batchGroupBy(live));
    }),
    { numRuns: 500 },
  );
});

Deno.test("GroupAggregate in upsert mode: its changelog upserted by key equals the batch GROUP BY over the final input", () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 60 }), (ops) => {
      const { live, changes } = changelogOf(ops);
      const byKey = new Map<string, readonly SqlValue[]>();
      for (const row of continuous(changes, false)) {
        assert.notEqual(row.kind, "UPDATE_BEFORE", "upsert mode emits no -U");
        const key = row.fields[0] as string;
        if (row.kind === "DELETE") {
          assert.ok(byKey.has(key), `-D of a key never upserted: ${formatRow(row)}`);
          byKey.delete(key);
        } else {
          byKey.set(key, row.fields);
        }
      }
      const table = new Map<string, number>();
      for (const fields of byKey.values()) applyChange(table, { kind: "INSERT", fields });
      assert.deepEqual(table, batchGroupBy(live));
    }),
    { numRuns: 500 },
  );
});

Deno.test("GroupAggregate emits the seed's clicks changelog for COUNT(url) GROUP BY user", () => {
  const users = ["Mary", "Bob", "Mary", "Liz", "Bob", "Mary"];
  const count = [createAggregate({ fn: "COUNT", distinct: false, integral: false })];
  const states = new Map<string, GroupState>();
  const out: string[] = [];
  for (const user of users) {
    const update = decideGroupUpdate(count, ["./url"], [user], states.get(user), {
      kind: "INSERT",
      fields: [user],
    }, true);
    states.set(user, update.state!);
    out.push(...update.emit.map(formatRow));
  }
  assert.equal(
    out.join(" "),
    "+I(Mary,1) +I(Bob,1) -U(Mary,1) +U(Mary,2) +I(Liz,1) -U(Bob,1) +U(Bob,2) -U(Mary,2) +U(Mary,3)",
  );
});

Deno.test("GroupAggregate emits nothing when a group's result does not change, and -D when it empties", () => {
  const max = [createAggregate({ fn: "MAX", distinct: false, integral: true })];
  let state: GroupState | undefined;
  const step = (kind: Row["kind"], v: number) => {
    const update = decideGroupUpdate(max, [v], ["k"], state, { kind, fields: ["k", v] }, true);
    state = update.state ?? undefined;
    return update.emit.map(formatRow).join(" ");
  };
  assert.equal(step("INSERT", 5), "+I(k,5)");
  assert.equal(step("INSERT", 3), "");
  assert.equal(step("DELETE", 5), "-U(k,5) +U(k,3)");
  assert.equal(step("DELETE", 3), "-D(k,3)");
  assert.equal(state, undefined);
});

Deno.test("GroupAggregate refuses a retraction for an empty group, naming the row", () => {
  const count = [createAggregate({ fn: "COUNT_STAR", distinct: false, integral: true })];
  assert.throws(
    () =>
      decideGroupUpdate(
        count,
        [null],
        ["k"],
        undefined,
        { kind: "DELETE", fields: ["k", 1] },
        true,
      ),
    /GroupAggregate got -D\(k,1\) for group \(k\), which holds no rows/,
  );
});

Deno.test("GroupAggregate with idle state retention starts an expired group again with +I and ignores a retraction of it", async () => {
  const key = { evaluate: (f: readonly SqlValue[]) => f[0] ?? null, type: TYPES.STRING, text: "k" };
  const h = await OperatorTestHarness.open((env, output) =>
    new KeyedProcessOperator({
      uid: "group-aggregate",
      name: "GroupAggregate",
      fn: new GroupAggregateFunction(
        [key],
        [{
          spec: { fn: "COUNT_STAR", distinct: false, integral: true },
          arg: null,
          text: "COUNT(*)",
        }],
        true,
        1_000,
      ) as unknown as KeyedProcessFunction<never, unknown, unknown>,
      env,
      output,
      keySelector: (r) => String((r as Row).fields[0]),
    })
  );
  h.processElement({ kind: "INSERT", fields: ["a"] }, undefined);
  h.setProcessingTime(500);
  h.processElement({ kind: "INSERT", fields: ["a"] }, undefined); // written at 500: alive until 1500
  h.setProcessingTime(1_499);
  h.processElement({ kind: "INSERT", fields: ["b"] }, undefined);
  h.setProcessingTime(1_500);
  h.processElement({ kind: "DELETE", fields: ["a"] }, undefined); // expired: ignored
  h.processElement({ kind: "INSERT", fields: ["a"] }, undefined);
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    "+I(a,1)",
    "-U(a,1)",
    "+U(a,2)",
    "+I(b,1)",
    "+I(a,1)",
  ]);
  await h.close();
});

Deno.test("GroupAggregate without state retention still refuses a retraction of an empty group", () => {
  const count = createAggregate({ fn: "COUNT_STAR", distinct: false, integral: true });
  assert.throws(
    () =>
      decideGroupUpdate([count], [null], ["a"], undefined, { kind: "DELETE", fields: ["a"] }, true),
    /GroupAggregate got -D\(a\) for group \(a\), which holds no rows/,
  );
  assert.deepEqual(
    decideGroupUpdate(
      [count],
      [null],
      ["a"],
      undefined,
      { kind: "DELETE", fields: ["a"] },
      true,
      true,
    ),
    { state: null, emit: [] },
  );
});
