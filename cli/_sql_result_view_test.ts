import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import type { Row } from "../runtime/table/row.ts";
import { MaterializedResult, renderTable, resultView } from "./_sql_result_view.ts";

const row = (kind: Row["kind"], ...fields: (string | number | null)[]): Row => ({ kind, fields });

Deno.test("MaterializedResult folds a changelog into the multiset of rows, and refuses a retraction of nothing", () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.boolean())), (ops) => {
      const result = new MaterializedResult();
      const expected = new Map<number, number>();
      for (const [k, add] of ops) {
        const have = expected.get(k) ?? 0;
        if (add) {
          result.apply(row("INSERT", k));
          expected.set(k, have + 1);
        } else if (have > 0) {
          result.apply(row("DELETE", k));
          expected.set(k, have - 1);
        } else {
          assert.throws(() => result.apply(row("DELETE", k)), /retracts -D\(\d\)/);
        }
      }
      const got = new Map<number, number>();
      for (const [k] of result.rows()) got.set(k as number, (got.get(k as number) ?? 0) + 1);
      for (const [k, n] of expected) if (n === 0) expected.delete(k);
      assert.deepEqual(got, expected);
    }),
  );
});

Deno.test("renderTable right-aligns numbers, prints NULL as null, and says Empty set", () => {
  assert.equal(renderTable(["a"], []), "+---+\n| a |\n+---+\nEmpty set");
  assert.equal(
    renderTable(["name", "n"], [["Liz", 10], [null, 7]]),
    [
      "+------+----+",
      "| name |  n |",
      "+------+----+",
      "| Liz  | 10 |",
      "| null |  7 |",
      "+------+----+",
      "2 rows in set",
    ].join("\n").replace("|  n |", "| n  |"),
  );
});

Deno.test("the table view prints the table when it changed, at most every refreshMs, and the final one at the end", () => {
  const out: string[] = [];
  let now = 0;
  const sink = resultView(["user", "cnt"], "table", {
    write: (t) => out.push(t),
    refreshMs: 100,
    clearScreen: false,
    now: () => now,
  });
  assert.equal(sink.kind, "simple");
  sink.invoke(row("INSERT", "Mary", 1));
  now = 50;
  sink.invoke(row("UPDATE_BEFORE", "Mary", 1));
  sink.invoke(row("UPDATE_AFTER", "Mary", 2));
  assert.equal(out.length, 1, "throttled: one print within 100 ms");
  now = 150;
  sink.invoke(row("INSERT", "Bob", 1));
  assert.equal(out.length, 2);
  sink.finish();
  assert.equal(out.length, 2, "nothing changed since the last print");
  assert.ok(out[1]!.endsWith("| Mary |   2 |\n| Bob  |   1 |\n+------+-----+\n2 rows in set"));
});

Deno.test("the tableau view prints a row per change with its op, then the count", () => {
  const out: string[] = [];
  const sink = resultView(["user", "cnt"], "tableau", { write: (t) => out.push(t) });
  sink.invoke(row("INSERT", "Mary", 1));
  sink.invoke(row("DELETE", "Mary", 1));
  sink.finish();
  assert.equal(out.length, 4);
  assert.match(out[0]!, /\| op \| user {9}\| cnt {10}\|/);
  assert.match(out[1]!, /^\| \+I \| Mary {9}\| {12}1 \|$/);
  assert.match(out[2]!, /^\| -D \| Mary/);
  assert.match(out[3]!, /Received a total of 2 rows$/);
});
