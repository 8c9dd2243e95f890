import assert from "node:assert/strict";
import { stopCoordinator } from "./servers.ts";

/** Runs `fn` with `console.error` captured; returns what it printed. */
async function capturingStderr(fn: () => Promise<void>): Promise<string> {
  const original = console.error;
  const lines: string[] = [];
  console.error = (...args: unknown[]) => lines.push(args.join(" "));
  try {
    await fn();
  } finally {
    console.error = original;
  }
  return lines.join("\n");
}

Deno.test("stopCoordinator bounds a step that never settles, reports it and runs the next steps", async () => {
  const calls: string[] = [];
  const never = new Promise<void>(() => {});
  const printed = await capturingStderr(() =>
    stopCoordinator({
      stopRest: () => Promise.resolve(void calls.push("rest")),
      stop: (release) => {
        calls.push(`stop release=${release}`);
        return never; // a KV write to a server that never answers
      },
      closeTransport: () => Promise.resolve(void calls.push("drain")),
      closeConnection: () => Promise.resolve(void calls.push("close")),
      natsDown: () => false,
      leaseMs: 3000,
      stepMs: 20,
    })
  );
  assert.deepEqual(calls, ["rest", "stop release=true", "drain"]);
  assert.match(printed, /weir coordinator: could not leave the leader election: DeadlineError/);
});

Deno.test("stopCoordinator with NATS unreachable neither releases the lease nor drains", async () => {
  const calls: string[] = [];
  const printed = await capturingStderr(() =>
    stopCoordinator({
      stopRest: () => Promise.resolve(void calls.push("rest")),
      stop: (release) => Promise.resolve(void calls.push(`stop release=${release}`)),
      closeTransport: () => Promise.resolve(void calls.push("drain")),
      closeConnection: () => Promise.resolve(void calls.push("close")),
      natsDown: () => true,
      leaseMs: 3000,
    })
  );
  assert.deepEqual(calls, ["rest", "stop release=false", "close"]);
  assert.match(printed, /the lease could not be released \(a standby takes over once it expires/);
});
