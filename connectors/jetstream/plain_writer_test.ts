import assert from "node:assert/strict";
import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { waitUntil } from "../../tests/_wait.ts";
import { JetStreamSink } from "./sink.ts";
import { CONNECTION, initContext, readJson, withJetStream } from "./_test_kit.ts";

const NO_TIMESTAMP = { timestamp: undefined };

function writerContext() {
  return {
    ...initContext(0, 1),
    restoredCheckpointId: undefined,
    restoredState: [] as never[],
    checkpointingMode: "at-least-once" as const,
  };
}

Deno.test("an at-least-once sink's flush stores every record, in batches without transactions, visible at once", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: `${t.stream}.n`,
      deliveryGuarantee: "at-least-once",
      maxBatchBytes: 64,
      lingerMs: 60_000,
    });
    assert.equal(sink.createCommitter, undefined, "no committer without transactions");
    const writer = await sink.createWriter(writerContext());
    try {
      assert.equal(writer.prepareCommit, undefined, "no committables without transactions");
      const values = Array.from({ length: 100 }, (_, i) => i);
      for (const v of values) await writer.write(v, NO_TIMESTAMP);
      await writer.flush(false);
      // No transaction bucket exists: a read-committed reader sees them without one.
      assert.deepEqual(await readJson(t.stream, { txnBucket: t.bucket }), values);
      const info = await (await jetstreamApi.jetstreamManager(t.nc)).streams.info(t.stream);
      assert.ok(
        info.state.messages > 1 && info.state.messages < 100,
        `${info.state.messages} messages`,
      );
    } finally {
      await writer.close();
    }
  });
});

Deno.test("an at-least-once sink publishes a batch lingerMs after its first record without a flush", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<string>({
      connection: CONNECTION,
      stream: t.stream,
      subject: `${t.stream}.s`,
      deliveryGuarantee: "at-least-once",
      lingerMs: 5,
    });
    const writer = await sink.createWriter(writerContext());
    try {
      await writer.write("a", NO_TIMESTAMP);
      await writer.write("b", NO_TIMESTAMP);
      let seen: unknown[] = [];
      await waitUntil(async () => (seen = await readJson(t.stream)).length === 2, {
        timeoutMs: 30_000,
        missing: () => `${seen.length} of 2 records stored`,
      });
      assert.deepEqual(seen, ["a", "b"]);
    } finally {
      await writer.close();
    }
  });
});

Deno.test("an at-least-once flush fails, naming subject and stream, when no stream stores the subject", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: "weir-test-nowhere.y",
      deliveryGuarantee: "at-least-once",
    });
    const writer = await sink.createWriter(writerContext());
    try {
      await writer.write(1, NO_TIMESTAMP);
      await assert.rejects(
        Promise.resolve(writer.flush(false)),
        (e: Error) =>
          e.message.includes("subject weir-test-nowhere.y of stream") &&
          e.message.includes(t.stream) && e.message.includes("no stream stores the subject"),
      );
    } finally {
      await writer.close();
    }
  });
});

Deno.test("a sink with guarantee none publishes batches without awaiting the stream", async () => {
  await withJetStream(async (t) => {
    const sink = new JetStreamSink<number>({
      connection: CONNECTION,
      stream: t.stream,
      subject: `${t.stream}.n`,
      deliveryGuarantee: "none",
    });
    const writer = await sink.createWriter(writerContext());
    try {
      for (const v of [1, 2, 3]) await writer.write(v, NO_TIMESTAMP);
      await writer.flush(false);
      let seen: unknown[] = [];
      await waitUntil(async () => (seen = await readJson(t.stream)).length === 3, {
        timeoutMs: 30_000,
        missing: () => `${seen.length} of 3 records stored`,
      });
      assert.deepEqual(seen, [1, 2, 3]);
    } finally {
      await writer.close();
    }
  });
});
