import assert from "node:assert/strict";
import { COMMANDS, usage } from "../cli.ts";

Deno.test("weir --help lists every option of the coordinator's and the worker's usage lines", () => {
  const text = usage();
  for (const name of ["coordinator", "worker"]) {
    const help = COMMANDS[name]!.help;
    // The usage block: from "usage:" to the first blank line.
    const block = help.slice(0, help.indexOf("\n\n"));
    const flags = [...block.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0])
      .filter((f) => f !== "--nats"); // listed under "NATS options"
    assert.ok(flags.length > 0, name);
    for (const flag of flags) {
      assert.ok(text.includes(flag), `weir --help leaves out ${name}'s ${flag}:\n${text}`);
    }
  }
});
