import assert from "node:assert/strict";
import { GlobalWindows } from "./global_windows.ts";
import { NeverTrigger } from "./triggers.ts";
import { GlobalWindow } from "./window.ts";

Deno.test("GlobalWindows puts every element, with or without a timestamp, in the one global window", () => {
  const global = GlobalWindows.create();
  const context = { currentProcessingTime: () => 0 };
  assert.deepEqual(global.assignWindows("a", undefined, context), [GlobalWindow.get()]);
  assert.deepEqual(global.assignWindows("b", -5, context), [GlobalWindow.get()]);
  assert.equal(global.isEventTime(), false);
  assert.ok(global.getDefaultTrigger() instanceof NeverTrigger);
  assert.equal(global.windowFromNamespace("global"), GlobalWindow.get());
  assert.throws(() => global.windowFromNamespace(""), RangeError);
});
