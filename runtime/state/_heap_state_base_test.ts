import assert from "node:assert/strict";
import { HeapListState } from "./_heap_states.ts";
import { KeyContext, newTable } from "./_heap_state_base.ts";

/** A list state over a 4-key-group table, with its key context set to key "k" in group 2. */
function listOnTable() {
  const table = newTable("l", "list", 4, false, "ProcessingTime");
  const ctx = new KeyContext();
  ctx.key = "k";
  ctx.stateKey = "k";
  ctx.keyGroup = 2;
  ctx.index = 2;
  return { table, ctx, list: new HeapListState<string>(table, ctx) };
}

Deno.test("removing a namespace's last entry removes the namespace's map and key group slot", () => {
  const { table, list } = listOnTable();
  list.setCurrentNamespace("w1");
  list.add("x");
  list.setCurrentNamespace("w2");
  list.add("y");
  assert.deepEqual([...table.nsMaps[2]!.keys()], ["w1", "w2"]);
  list.clear();
  assert.deepEqual([...table.nsMaps[2]!.keys()], ["w1"]);
  list.mergeNamespaces("w3", ["w1"]);
  assert.deepEqual([...table.nsMaps[2]!.keys()], ["w3"]);
  list.setCurrentNamespace("w3");
  list.update([]);
  assert.equal(table.nsMaps[2], undefined);
  assert.deepEqual(table.maps, [undefined, undefined, undefined, undefined]);
});

Deno.test("the default namespace is stored in the key group's plain map", () => {
  const { table, list } = listOnTable();
  list.add("x");
  assert.deepEqual([...table.maps[2]!], [["k", ["x"]]]);
  assert.equal(table.nsMaps[2], undefined);
});
