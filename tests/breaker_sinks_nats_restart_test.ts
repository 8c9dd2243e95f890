/**
 * Breaker tests of the JetStream exactly-once sink against a private NATS
 * server that is SIGKILLed and restarted mid-batch (records of an open
 * transaction published, more in its open batches) and mid-commit (after
 * the pre-commit, before the committer's commit). Each incarnation of the
 * sink subtask is driven as the sink operator drives a SinkV2; a crash
 * closes the writer and committer without committing anything.
 *
 * @module
 */

import assert from "node:assert/strict";
import { JetStreamSink } from "../connectors/jetstream/sink.ts";
import type { JetStreamTxn } from "../connectors/jetstream/producer.ts";
import { readCommitted } from "../connectors/jetstream/reader.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";
import type { CommitRequest, Committer, SinkWriter } from "../runtime/api/sink_v2.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";

const NO_TIMESTAMP = { timestamp: undefined };
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** One incarnation of sink subtask 0 of 1. */
interface Incarnation {
  readonly writer: SinkWriter<number, JetStreamTxn, never>;
  readonly committer: Committer<JetStreamTxn>;
}

/** Commits `pending` in one round; returns the errors signalled (retries count as errors). */
async function commitAll(
  committer: Committer<JetStreamTxn>,
  pending: readonly { checkpointId: number; committable: JetStreamTxn }[],
): Promise<Error[]> {
  const errors: Error[] = [];
  const requests: CommitRequest<JetStreamTxn>[] = pending.map((p) => ({
    ...p,
    numberOfRetries: 0,
    signalFailedWithKnownReason: (e) => errors.push(e),
    signalFailedWithUnknownReason: (e) => errors.push(e),
    retryLater: () => errors.push(new Error(`commit of ${p.committable.id} to be retried`)),
    updateAndRetryLater: () =>
      errors.push(new Error(`commit of ${p.committable.id} to be retried`)),
    signalAlreadyCommitted: () => {},
  }));
  await committer.commit(requests);
  return errors;
}

async function withServer(body: (server: NatsServerHandle, stream: string) => Promise<void>) {
  const server = await startNatsServer({ jetstream: true });
  const stream = `breaker-restart-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const nc = await connectNats({ servers: server.url });
    const jsm = await jetstreamApi.jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    await nc.close();
    await body(server, stream);
  } finally {
    await server.stop();
  }
}

Deno.test("a JetStream exactly-once sink commits every record once when NATS is SIGKILLed mid-batch and mid-commit", async () => {
  await withServer(async (server, stream) => {
    const sink = new JetStreamSink<number>({
      connection: { servers: server.url },
      stream,
      subject: (n) => `${stream}.${n % 3}`,
      maxBatchBytes: 64,
    });
    let attempt = 0;
    const start = async (restored?: {
      checkpointId: number;
      pending: { checkpointId: number; committable: JetStreamTxn }[];
    }): Promise<Incarnation> => {
      const ctx = {
        subtaskIndex: 0,
        parallelism: 1,
        attempt: attempt++,
        uid: "out",
        jobId: "breaker-restart",
        restoredCheckpointId: restored?.checkpointId,
      };
      const committer = await sink.createCommitter!(ctx);
      if (restored && restored.pending.length > 0) {
        const errors = await commitAll(
          committer,
          restored.pending.map((p) => ({
            ...p,
            committable: sink.checkCommittable(p.committable),
          })),
        );
        assert.deepEqual(errors, [], "the restore commits the restored transactions");
      }
      const writer = await sink.createWriter({
        ...ctx,
        restoredState: [],
        checkpointingMode: "exactly-once",
      });
      return { writer, committer };
    };
    const crash = async (i: Incarnation) => {
      await Promise.resolve(i.writer.close()).catch(() => {});
      await Promise.resolve(i.committer.close()).catch(() => {});
    };
    const checkpoint = async (i: Incarnation, n: number) => {
      await i.writer.flush(false);
      return (await i.writer.prepareCommit!(n)).map((committable) => ({
        checkpointId: n,
        committable: structuredClone(committable),
      }));
    };

    // Incarnation 1: checkpoint 1 of 0..99 completes; 100..199 go out, then NATS is killed mid-batch.
    let run = await start();
    for (const v of range(0, 100)) await run.writer.write(v, NO_TIMESTAMP);
    const first = await checkpoint(run, 1);
    assert.deepEqual(await commitAll(run.committer, first), []);
    for (const v of range(100, 200)) await run.writer.write(v, NO_TIMESTAMP);
    await server.kill();
    await server.restart();
    await crash(run);

    // Incarnation 2, restored from checkpoint 1: replays 100..199; NATS is killed after the
    // pre-commit of checkpoint 2, before its commit.
    run = await start({ checkpointId: 1, pending: [] });
    for (const v of range(100, 200)) await run.writer.write(v, NO_TIMESTAMP);
    const second = await checkpoint(run, 2);
    await server.kill();
    await server.restart();
    await crash(run);

    // Incarnation 3, restored from checkpoint 2: its restore commits checkpoint 2's transaction.
    run = await start({ checkpointId: 2, pending: second });
    for (const v of range(200, 250)) await run.writer.write(v, NO_TIMESTAMP);
    const third = await checkpoint(run, 3);
    assert.deepEqual(await commitAll(run.committer, third), []);
    await crash(run);

    const read: number[] = [];
    for await (
      const r of readCommitted({ connection: { servers: server.url }, stream, bounded: true })
    ) read.push(JSON.parse(new TextDecoder().decode(r.data)));
    assert.deepEqual(read.sort((a, b) => a - b), range(0, 250));
  });
});

Deno.test("a JetStream exactly-once writer that outlives a NATS SIGKILL mid-batch commits its records once, or fails and a restore commits them once", async () => {
  await withServer(async (server, stream) => {
    const sink = new JetStreamSink<number>({
      connection: { servers: server.url },
      stream,
      subject: (n) => `${stream}.${n % 3}`,
      maxBatchBytes: 64,
    });
    const ctx = (attempt: number, restoredCheckpointId?: number) => ({
      subtaskIndex: 0,
      parallelism: 1,
      attempt,
      uid: "out",
      jobId: "breaker-restart",
      restoredCheckpointId,
    });
    const writerCtx = (attempt: number) => ({
      ...ctx(attempt),
      restoredState: [],
      checkpointingMode: "exactly-once" as const,
    });
    let committer = await sink.createCommitter!(ctx(0));
    let writer = await sink.createWriter(writerCtx(0));
    let failure: unknown;
    try {
      for (const v of range(0, 50)) await writer.write(v, NO_TIMESTAMP);
      await server.kill();
      await server.restart();
      for (const v of range(50, 100)) await writer.write(v, NO_TIMESTAMP);
      await writer.flush(false);
      const pending = (await writer.prepareCommit!(1)).map((committable) => ({
        checkpointId: 1,
        committable,
      }));
      assert.deepEqual(await commitAll(committer, pending), []);
    } catch (error) {
      failure = error; // the attempt fails; a fresh restore writes everything again
    } finally {
      await Promise.resolve(writer.close()).catch(() => {});
      await Promise.resolve(committer.close()).catch(() => {});
    }
    if (failure !== undefined) {
      committer = await sink.createCommitter!(ctx(1));
      writer = await sink.createWriter(writerCtx(1));
      try {
        for (const v of range(0, 100)) await writer.write(v, NO_TIMESTAMP);
        await writer.flush(false);
        const pending = (await writer.prepareCommit!(1)).map((committable) => ({
          checkpointId: 1,
          committable,
        }));
        assert.deepEqual(await commitAll(committer, pending), []);
      } finally {
        await writer.close();
        await committer.close();
      }
    }
    const read: number[] = [];
    for await (
      const r of readCommitted({ connection: { servers: server.url }, stream, bounded: true })
    ) read.push(JSON.parse(new TextDecoder().decode(r.data)));
    assert.deepEqual(read.sort((a, b) => a - b), range(0, 100), `after ${failure ?? "no failure"}`);
  });
});
