/**
 * `weir coordinator` ends on SIGTERM (and SIGINT) also when its NATS server
 * is gone: handing the lease over, suspending its jobs and closing the
 * connection are each bounded, so an operator's `kill` (or systemd's stop)
 * never leaves the process hanging on a server that will not answer.
 *
 * The test starts a nats-server of its own on a free port, a coordinator on
 * it, kills the server (SIGKILL, as a crash), then sends the coordinator
 * SIGTERM and asserts that it exits with status 0 and says what it could
 * not do. The 60 s bound is only the test's timeout (a hang fails it), not
 * a measured figure.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test({
    name: `weir coordinator exits on ${signal} after its NATS server died`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const nats = await startNatsServer({ jetstream: true });
      const suffix = crypto.randomUUID().slice(0, 8);
      const coordinator = new Proc("coordinator", [
        "run",
        "-A",
        "cli.ts",
        "coordinator",
        "--nats",
        nats.url,
        "--checkpoint-bucket",
        `sigterm-chk-${suffix}`,
        "--ha-bucket",
        `sigterm-ha-${suffix}`,
        "--jobs-bucket",
        `sigterm-jobs-${suffix}`,
        "--rest-port",
        "0",
      ]);
      try {
        await coordinator.waitFor(/weir coordinator: listening on/, 60_000);
        await nats.kill();
        // Its client notices the server is gone before the signal arrives.
        await coordinator.waitFor(/lost its NATS connection/, 60_000);
        coordinator.child.kill(signal);
        const status = await coordinator.endWithin(60_000);
        assert.equal(status.code, 0, coordinator.output);
        assert.match(coordinator.output, new RegExp(`weir coordinator: ${signal}, `));
        assert.match(
          coordinator.output,
          /weir coordinator: the NATS server is unreachable: the lease could not be released/,
          "the coordinator did not say what it could not do without NATS:\n" + coordinator.output,
        );
      } finally {
        await coordinator.kill().catch(() => {});
        await nats.stop();
      }
    },
  });
}
