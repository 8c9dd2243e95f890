import assert from "node:assert/strict";
import { defaultRestartStrategy } from "./restart_strategy_config.ts";

Deno.test("defaultRestartStrategy() bounds local jobs, not cluster jobs, and needs checkpointing", () => {
  assert.deepEqual(defaultRestartStrategy({ checkpointing: true, role: "local" }), {
    type: "fixed-delay",
    attempts: 3,
    delayMs: 1000,
  });
  assert.deepEqual(defaultRestartStrategy({ checkpointing: true, role: "client" }), {
    type: "fixed-delay",
    attempts: Number.MAX_SAFE_INTEGER,
    delayMs: 1000,
  });
  for (const role of ["local", "client", "slot"] as const) {
    assert.deepEqual(defaultRestartStrategy({ checkpointing: false, role }), { type: "none" });
  }
});
