/**
 * The exactly-once sink conformance suite against the transactional
 * {@linkcode JetStreamSink}: a fresh stream and transaction bucket per case
 * on the test NATS server, read back with the read-committed reader.
 *
 * @module
 */

import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { connectNats } from "../../runtime/actor/nats_connect.ts";
import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "../testing/exactly_once_sink_conformance.ts";
import { JetStreamSink } from "./sink.ts";
import { CONNECTION, readJson, uniqueName } from "./_test_kit.ts";

exactlyOnceSinkConformanceSuite("JetStreamSink", async () => {
  const nc = await connectNats(CONNECTION);
  const jsm = await jetstreamApi.jetstreamManager(nc);
  const stream = uniqueName("weir-conformance");
  const bucket = uniqueName("weir-conformance-txn");
  await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
  return {
    createSink: () =>
      new JetStreamSink<ConformanceRecord>({
        connection: CONNECTION,
        stream,
        subject: (r) => `${stream}.${r.key}`,
        txnBucket: bucket,
      }),
    readCommitted: async () =>
      (await readJson(stream, {
        txnBucket: bucket,
        isolation: "read_committed",
      })) as ConformanceRecord[],
    cleanup: async () => {
      try {
        await jsm.streams.delete(stream);
        await jsm.streams.delete(`KV_${bucket}`).catch((error) => {
          // The bucket exists once a sink opened; a case that failed earlier may not have made it.
          if (!String(error).includes("stream not found")) throw error;
        });
      } finally {
        await nc.close();
      }
    },
  };
});
