/**
 * A submission whose settings the coordinator cannot use (here a restart
 * strategy with a negative number of attempts, which a client built with
 * `RestartStrategies` would have refused) is refused at once with an
 * `InvalidConfigurationError` naming the job and the setting, and nothing
 * runs; before, the coordinator threw while answering and the client waited
 * for a reply that never came.
 *
 * @module
 */

import assert from "node:assert/strict";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { decode, encode } from "../runtime/actor/codec.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { ClusterCoordinator } from "../runtime/cluster/cluster_coordinator.ts";
import {
  SUBMIT_SUBJECT,
  type SubmitReply,
  type SubmitRequest,
} from "../runtime/cluster/cluster_protocol.ts";
import type { RestartStrategyConfig } from "../runtime/cluster/restart_strategy.ts";
import { summarizeJobGraph } from "../runtime/graph/job_graph_summary.ts";
import { StreamExecutionEnvironment } from "../mod.ts";

Deno.test("the coordinator refuses a submission with an invalid restart strategy at once, naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-refusal-" });
  const bus = new InProcessBus();
  const coordinatorTransport = bus.connect();
  const client = bus.connect();
  const coordinator = new ClusterCoordinator({
    transport: coordinatorTransport,
    storage: new LocalDirectoryCheckpointStorage({ directory: dir }),
    checkpointBucket: "unused",
  });
  coordinator.start();
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection([1, 2, 3]).uid("numbers").print().uid("out");
    const jobId = `refused-${crypto.randomUUID().slice(0, 8)}`;
    const request: SubmitRequest = {
      jobId,
      moduleUrl: "file:///refused.ts",
      args: [],
      graph: summarizeJobGraph(env.getJobGraph("refused")),
      checkpointing: {
        intervalMs: 0,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      restartStrategy: { type: "fixed-delay", attempts: -1, delayMs: 0 } as RestartStrategyConfig,
    };
    const reply = decode(
      (await client.request(SUBMIT_SUBJECT, encode(request), { timeoutMs: 30_000 })).data,
    ) as SubmitReply;
    assert.equal(reply.ok, false, JSON.stringify(reply));
    const error = reply.ok ? "" : reply.error;
    assert.match(error, /^InvalidConfigurationError: job refused-\w+ 'refused' has an invalid/);
    assert.match(error, /'attempts' must be a non-negative integer: current value is -1/);
    assert.equal(coordinator.overview().jobs.some((j) => j.jobId === jobId), false);
  } finally {
    await coordinator.close();
    await coordinatorTransport.close();
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});
