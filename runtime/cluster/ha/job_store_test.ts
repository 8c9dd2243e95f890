import assert from "node:assert/strict";
import { connect, kvApi } from "../../actor/nats_deps.ts";
import type { SubmitRequest } from "../cluster_protocol.ts";
import { encode } from "../../actor/codec.ts";
import {
  decodeStoredJob,
  JobStore,
  JobStoreFencedError,
  MAX_STORED_SAVEPOINTS,
  type StoredJob,
} from "./job_store.ts";
import { LeaderJobRecords } from "./leader_job_records.ts";

const NATS = Deno.env.get("WEIR_TEST_NATS_URL") ?? "nats://127.0.0.1:4222";

function request(jobId: string): SubmitRequest {
  return {
    jobId,
    moduleUrl: "http://example.invalid/job.ts",
    args: ["--rate", "10"],
    graph: {
      name: "ha test",
      fingerprint: "f1",
      vertices: [],
    } as unknown as SubmitRequest["graph"],
    checkpointing: { intervalMs: 100 } as unknown as SubmitRequest["checkpointing"],
    restartStrategy: { kind: "none" } as unknown as SubmitRequest["restartStrategy"],
  };
}

function job(jobId: string, epoch: number, patch: Partial<StoredJob> = {}): StoredJob {
  return {
    request: request(jobId),
    restoreFrom: null,
    restoreSettings: { kind: "checkpoint", mode: "NO_CLAIM" },
    status: "RUNNING",
    attempt: 0,
    submittedAt: 1000,
    leaderEpoch: epoch,
    ...patch,
  };
}

async function withStore(fn: (store: JobStore, bucket: string) => Promise<void>): Promise<void> {
  const nc = await connect({ servers: NATS });
  const bucket = `weir-test-jobs-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await fn(await JobStore.open(nc, bucket), bucket);
  } finally {
    await (await new kvApi.Kvm(nc).open(bucket)).destroy().catch(() => {});
    await nc.close();
  }
}

Deno.test("JobStore writes and lists jobs in submission order, decoded whole", async () => {
  await withStore(async (store) => {
    await store.put(job("b-2", 1, { submittedAt: 2000 }));
    await store.put(job("a-1", 1, { submittedAt: 1000, latestCheckpointId: 4, attempt: 2 }));
    const { jobs, unreadable } = await store.list();
    assert.deepEqual(unreadable, []);
    assert.deepEqual(jobs.map((j) => j.request.jobId), ["a-1", "b-2"]);
    assert.equal(jobs[0]!.latestCheckpointId, 4);
    assert.equal(jobs[0]!.attempt, 2);
    assert.deepEqual(jobs[0]!.request.args, ["--rate", "10"]);
    await store.remove("a-1");
    assert.deepEqual((await store.list()).jobs.map((j) => j.request.jobId), ["b-2"]);
  });
});

Deno.test("JobStore refuses a write of a lower leader epoch than the stored record's", async () => {
  await withStore(async (store) => {
    await store.put(job("j", 2));
    await assert.rejects(
      () => store.put(job("j", 1, { status: "CANCELED" })),
      (error: unknown) =>
        error instanceof JobStoreFencedError && /leader epoch 2; this leader \(epoch 1\)/.test(
          error.message,
        ),
    );
    assert.equal((await store.list()).jobs[0]!.status, "RUNNING");
    await store.put(job("j", 3, { status: "FINISHED" })); // a higher epoch may
    assert.equal((await store.list()).jobs[0]!.status, "FINISHED");
  });
});

Deno.test("JobStore lists a record it cannot decode apart, naming the bucket and key", async () => {
  await withStore(async (store, bucket) => {
    const nc = await connect({ servers: NATS });
    try {
      const kv = await new kvApi.Kvm(nc).open(bucket);
      await kv.put("broken", new TextEncoder().encode("not msgpack of a job"));
    } finally {
      await nc.close();
    }
    await store.put(job("fine", 1));
    const { jobs, unreadable } = await store.list();
    assert.deepEqual(jobs.map((j) => j.request.jobId), ["fine"]);
    assert.equal(unreadable.length, 1);
    assert.equal(unreadable[0]!.key, "broken");
    assert.match(unreadable[0]!.error, new RegExp(`job record broken in KV bucket ${bucket}`));
  });
});

Deno.test("LeaderJobRecords writes attempts before deployment and checkpoints only when newer", async () => {
  await withStore(async (store) => {
    const records = new LeaderJobRecords({ store, epoch: 4 });
    await records.submitted({
      request: request("j"),
      restoreFrom: null,
      restoreSettings: { kind: "checkpoint", mode: "NO_CLAIM" },
      submittedAt: 5,
    });
    await records.attemptDeploying("j", 0); // already stored: nothing to write
    await records.attemptDeploying("j", 1);
    records.checkpointCompleted("j", 3);
    records.checkpointCompleted("j", 2); // older: ignored
    await records.ended("j", {
      status: "FINISHED",
      endedAt: 9,
      outcome: { t: "failed", error: { name: "Error", message: "x" } as never },
    });
    const [stored] = (await store.list()).jobs;
    assert.equal(stored!.attempt, 1);
    assert.equal(stored!.latestCheckpointId, 3);
    assert.equal(stored!.status, "FINISHED");
    assert.equal(stored!.leaderEpoch, 4);
    await assert.rejects(() => records.attemptDeploying("unknown", 1), /no record/);
  });
});

Deno.test("LeaderJobRecords keeps the latest completed savepoint operations, and a new leader reads them", async () => {
  await withStore(async (store) => {
    const records = new LeaderJobRecords({ store, epoch: 2 });
    await records.submitted({
      request: request("sp"),
      restoreFrom: null,
      restoreSettings: { kind: "checkpoint", mode: "NO_CLAIM" },
      submittedAt: 5,
    });
    for (let i = 0; i < MAX_STORED_SAVEPOINTS + 2; i++) {
      records.savepointCompleted("sp", `t${i}`, `nats-object-store://b/savepoint-sp-${i}`, i);
    }
    // The job ends after its last savepoint (stop with a savepoint): the list stays.
    await records.ended("sp", {
      status: "FINISHED",
      endedAt: 9,
      outcome: { t: "failed", error: { name: "Error", message: "x" } as never },
    });
    const [stored] = (await store.list()).jobs;
    const kept = stored!.savepoints ?? [];
    assert.equal(kept.length, MAX_STORED_SAVEPOINTS);
    assert.deepEqual(kept[0], {
      triggerId: "t2",
      location: "nats-object-store://b/savepoint-sp-2",
      completedAt: 2,
    });
    assert.equal(kept.at(-1)!.triggerId, `t${MAX_STORED_SAVEPOINTS + 1}`);
  });
});

Deno.test("decodeStoredJob refuses a malformed savepoint list, naming the record", () => {
  const data = encode({ ...job("bad-sp", 1), savepoints: [{ triggerId: 7 }] });
  assert.throws(
    () => decodeStoredJob(data, "bad-sp", "weir-jobs"),
    /job record bad-sp in KV bucket weir-jobs: savepoints must be a list of \{triggerId, location, completedAt\}/,
  );
});
