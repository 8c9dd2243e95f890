/**
 * A NATS outage is reported as one, not as lost workers: while the
 * coordinator's own NATS connection is down (`ClusterCoordinator.connectionLost`),
 * no heartbeat can reach it, so it declares no worker lost; once the
 * connection is back (`connectionRestored`) it forgets the workers until
 * their next heartbeat. A second coordinator on the same bus, told of no
 * outage, is the control: it does declare the silent worker lost, so the
 * first one had the time to.
 *
 * @module
 */

import assert from "node:assert/strict";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { encode } from "../runtime/actor/codec.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { ClusterCoordinator } from "../runtime/cluster/cluster_coordinator.ts";
import { type Heartbeat, HEARTBEAT_SUBJECT } from "../runtime/cluster/cluster_protocol.ts";
import { waitUntil } from "./_wait.ts";

Deno.test("a coordinator whose NATS connection is down declares no worker lost; once it is back it waits for heartbeats", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-outage-" });
  const bus = new InProcessBus();
  const transports = [bus.connect(), bus.connect(), bus.connect()] as const;
  const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
  const make = (i: 0 | 1) =>
    new ClusterCoordinator({
      transport: transports[i],
      storage,
      checkpointBucket: "unused",
      heartbeatTimeoutMs: 200,
    });
  const outage = make(0);
  const control = make(1);
  outage.start();
  control.start();
  try {
    const heartbeat: Heartbeat = {
      workerId: "w-outage",
      host: "test",
      pid: 1,
      instance: crypto.randomUUID(),
      slots: ["w-outage-s0"],
      slotThreads: 0,
      sentAt: Date.now(),
    };
    transports[2].publish(HEARTBEAT_SUBJECT, encode(heartbeat));
    const workers = (c: ClusterCoordinator) => c.overview().workers.map((w) => w.workerId);
    await waitUntil(() => workers(outage).length === 1 && workers(control).length === 1, {
      timeoutMs: 30_000,
      missing: () => "the heartbeat did not register the worker with both coordinators",
    });
    outage.connectionLost();
    // The worker goes silent (as during a NATS outage): the control declares it lost.
    await waitUntil(() => workers(control).length === 0, {
      timeoutMs: 30_000,
      missing: () => "the control coordinator never declared the silent worker lost",
    });
    assert.deepEqual(workers(outage), ["w-outage"]);
    outage.connectionRestored();
    assert.deepEqual(workers(outage), []);
    transports[2].publish(HEARTBEAT_SUBJECT, encode({ ...heartbeat, sentAt: Date.now() }));
    await waitUntil(() => workers(outage).length === 1, {
      timeoutMs: 30_000,
      missing: () => "the worker's next heartbeat did not register it again",
    });
  } finally {
    await outage.close();
    await control.close();
    for (const t of transports) await t.close();
    await Deno.remove(dir, { recursive: true });
  }
});
