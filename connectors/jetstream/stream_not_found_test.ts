import assert from "node:assert/strict";
import { errors, headers, jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { TXN_HEADER, txnIdOf } from "./protocol.ts";
import type { SourceReader } from "../../runtime/api/source.ts";
import { classifyFailure, SuppressRestartsError } from "../../runtime/failure.ts";
import {
  JobFailedError,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { CollectingSink } from "../../testing.ts";
import { RecordingReaderOutput } from "../testing/reader_output.ts";
import { waitUntil } from "../../tests/_wait.ts";
import { withTempDir } from "../../tests/_job_kit.ts";
import { JetStreamSource, type JetStreamSplit } from "./source.ts";
import { JetStreamSubjectDiscoverer } from "./split_discovery.ts";
import { isStreamNotFound, JetStreamStreamNotFoundError } from "./stream_not_found.ts";
import {
  CONNECTION,
  publishJson,
  startReader,
  type TestJetStream,
  uniqueName,
  withJetStream,
} from "./_test_kit.ts";

const WAIT_MS = 30_000;

function source(t: TestJetStream, stream = t.stream): JetStreamSource<number> {
  return new JetStreamSource<number>({
    connection: CONNECTION,
    stream,
    txnBucket: t.bucket,
    isolation: "read_uncommitted",
  });
}

/** Polls `r` until it throws (30 s at most) and returns what it threw. */
async function pollUntilThrows(
  r: SourceReader<number, JetStreamSplit>,
  out: RecordingReaderOutput<number>,
): Promise<unknown> {
  let thrown: unknown;
  await waitUntil(() => {
    try {
      r.pollNext(out);
      return false;
    } catch (error) {
      thrown = error;
      return true;
    }
  }, {
    timeoutMs: WAIT_MS,
    missing: () => `the reader still runs after ${out.records.length} records`,
  });
  return thrown;
}

function assertStreamNotFound(error: unknown, stream: string, doing: RegExp): void {
  assert.ok(error instanceof JetStreamStreamNotFoundError, String(error));
  assert.ok(error instanceof SuppressRestartsError);
  assert.equal(error.stream, stream);
  assert.match(error.message, doing);
  assert.match(error.message, new RegExp(`the stream ${stream} does not exist`));
  assert.ok(isStreamNotFound(error.cause), "the server's error is the cause");
}

async function deleteStream(t: TestJetStream): Promise<void> {
  const jsm = await jetstreamApi.jetstreamManager(t.nc);
  await jsm.streams.delete(t.stream);
}

Deno.test("isStreamNotFound holds for JetStream API error 10059, also wrapped, and for nothing NATS being down throws", () => {
  const notFound = new jetstreamApi.JetStreamApiError({
    code: 404,
    err_code: 10059,
    description: "stream not found",
  });
  assert.equal(isStreamNotFound(notFound), true);
  assert.equal(isStreamNotFound(new Error("Cannot read", { cause: notFound })), true);
  const consumerNotFound = new jetstreamApi.JetStreamApiError({
    code: 404,
    err_code: 10014,
    description: "consumer not found",
  });
  for (
    const error of [
      consumerNotFound,
      new errors.TimeoutError(),
      new errors.NoRespondersError("$JS.API.STREAM.INFO.x"),
      new errors.ClosedConnectionError(),
      new Error("stream not found"),
      undefined,
      "stream not found",
    ]
  ) {
    assert.equal(isStreamNotFound(error), false, String(error));
  }
});

Deno.test("enumerating the splits of a stream that does not exist fails without restarts, naming the stream", async () => {
  await withJetStream(async (t) => {
    const missing = uniqueName("weir-test-missing");
    const error = await source(t, missing).enumerateSplits({ parallelism: 1 }).then(
      () => assert.fail("enumerateSplits resolved"),
      (e: unknown) => e,
    );
    assertStreamNotFound(error, missing, /Cannot enumerate the splits of stream/);
  });
});

Deno.test("subject discovery in a stream that does not exist fails without restarts, naming the stream and filter", async () => {
  const missing = uniqueName("weir-test-missing");
  const discoverer = new JetStreamSubjectDiscoverer({
    connection: CONNECTION,
    stream: missing,
    filterSubject: `${missing}.*`,
  });
  try {
    const error = await discoverer.discoverSplits().then(
      () => assert.fail("discoverSplits resolved"),
      (e: unknown) => e,
    );
    assertStreamNotFound(error, missing, new RegExp(`matching ${missing}\\.\\*`));
  } finally {
    await discoverer.close();
  }
});

Deno.test("a reader restored on a deleted stream fails without restarts, naming the stream", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1, 2, 3]);
    const src = source(t);
    const splits = await src.enumerateSplits({ parallelism: 1 });
    await deleteStream(t);
    const r = await startReader(src, splits, "numbers");
    try {
      const error = await pollUntilThrows(r, new RecordingReaderOutput<number>());
      assertStreamNotFound(error, t.stream, new RegExp(`^Cannot read in stream ${t.stream}:`));
    } finally {
      await r.close?.();
    }
  });
});

Deno.test("a running reader fails without restarts, naming the stream, when its stream is deleted", async () => {
  await withJetStream(async (t) => {
    await publishJson(t.js, `${t.stream}.a`, [1, 2, 3]);
    const src = source(t);
    const r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }), "numbers");
    try {
      const out = new RecordingReaderOutput<number>();
      await waitUntil(() => {
        r.pollNext(out);
        return out.records.length === 3;
      }, { timeoutMs: WAIT_MS, missing: () => `${out.records.length} of 3 records read` });
      await deleteStream(t);
      const error = await pollUntilThrows(r, out);
      assertStreamNotFound(error, t.stream, new RegExp(`^Cannot read in stream ${t.stream}:`));
    } finally {
      await r.close?.();
    }
  });
});

Deno.test("a job whose stream is deleted while it runs fails once, without restarts, naming the stream", async () => {
  await withJetStream(async (t) => {
    await withTempDir(async (directory) => {
      await publishJson(t.js, `${t.stream}.a`, [1, 2, 3]);
      // Checkpointing on and no restart strategy set: the default restarts forever.
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(50, { directory });
      const sink = new CollectingSink<number>();
      const attempts = new Set<number>();
      env.fromSource(source(t), WatermarkStrategy.noWatermarks(), "numbers").uid("numbers")
        .map({
          open: (context: RuntimeContext) => void attempts.add(context.attempt),
          map: (n: number) => n,
        }).uid("attempts")
        .sinkTo(sink).uid("committed");
      let settled = false;
      const run = env.execute("deleted stream").then(
        () => assert.fail("an unbounded job ends only by failing"),
        (e: unknown) => e,
      ).finally(() => settled = true);
      await waitUntil(() => sink.committed().length === 3, {
        timeoutMs: WAIT_MS,
        missing: () => `${sink.committed().length} of 3 records committed`,
      });
      await deleteStream(t);
      await waitUntil(() => settled, {
        timeoutMs: WAIT_MS,
        missing: () => "the job still runs after its stream was deleted",
      });
      const error = await run;
      assert.ok(error instanceof JobFailedError, String(error));
      assert.match(error.message, /failed without restarts \(JetStreamStreamNotFoundError[;)]/);
      assert.match(error.message, new RegExp(`the stream ${t.stream} does not exist`));
      assert.deepEqual([...attempts], [0], "the job restarted");
    });
  });
});

Deno.test("a read-committed reader whose transaction bucket does not exist fails without restarts, naming the bucket", async () => {
  await withJetStream(async (t) => {
    // A transactional record: reading it committed needs its transaction's state.
    const h = headers();
    h.set(TXN_HEADER, txnIdOf("weir-missing-txn-p-0", 1, 1));
    await t.js.publish(`${t.stream}.a`, new TextEncoder().encode("1"), { headers: h });
    const bucket = uniqueName("weir-missing-txn");
    const src = new JetStreamSource<number>({
      connection: CONNECTION,
      stream: t.stream,
      txnBucket: bucket,
      isolation: "read_committed",
    });
    const r = await startReader(src, await src.enumerateSplits({ parallelism: 1 }), "numbers");
    try {
      const error = await pollUntilThrows(r, new RecordingReaderOutput<number>());
      // The feed names the transaction; its cause, the bucket: a retry cannot fix it.
      const found = classifyFailure(error);
      assert.equal(found.type, "NonRecoverableError", String(error));
      const by = found.type === "NonRecoverableError" ? found.by : undefined;
      assertStreamNotFound(
        by,
        `KV_${bucket}`,
        new RegExp(`^Cannot watch the transactions of KV bucket ${bucket}: the bucket does not`),
      );
    } finally {
      await r.close?.();
    }
  });
});
