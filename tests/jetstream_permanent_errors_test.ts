/**
 * A JetStream sink job whose target cannot take its records (the stream
 * does not exist; a record's subject is not one the stream stores) fails
 * once, at attempt 0, naming the stream (and the subject with the stream's
 * subjects), under the default restart strategy (fixed delay, unlimited):
 * `connectors/jetstream/subject_check.ts`.
 *
 * @module
 */

import { JetStreamSink } from "../connectors/jetstream/sink.ts";
import { CONNECTION, uniqueName, withJetStream } from "../connectors/jetstream/_test_kit.ts";
import { type Sink, StreamExecutionEnvironment } from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";
import { assertFailsOnce, guardRestarts } from "./_permanent_kit.ts";

const RECORDS = Array.from({ length: 20 }, (_, id) => ({ id }));

function runInto(sink: Sink<{ id: number }>, jobName: string, parts: string[]) {
  return withTempDir((checkpoints) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(1)
      .enableCheckpointing(50, { directory: checkpoints });
    env.fromCollection(RECORDS).sinkTo(guardRestarts(sink)).uid("out");
    return assertFailsOnce(env, jobName, parts);
  });
}

for (const deliveryGuarantee of ["exactly-once", "at-least-once"] as const) {
  Deno.test(`${deliveryGuarantee === "exactly-once" ? "an" : "a"} ${deliveryGuarantee} JetStream sink job into a stream that does not exist fails once, naming it`, async () => {
    const stream = uniqueName("weir-missing");
    await runInto(
      new JetStreamSink({
        connection: CONNECTION,
        stream,
        subject: `${stream}.out`,
        deliveryGuarantee,
      }),
      `jetstream missing stream ${deliveryGuarantee}`,
      [stream, "10059"],
    );
  });

  Deno.test(`${deliveryGuarantee === "exactly-once" ? "an" : "a"} ${deliveryGuarantee} JetStream sink job publishing to a subject its stream does not store fails once, naming both`, async () => {
    await withJetStream(async ({ stream, bucket }) => {
      const subject = `elsewhere-${stream}.out`;
      await runInto(
        new JetStreamSink({
          connection: CONNECTION,
          stream,
          subject,
          deliveryGuarantee,
          txnBucket: bucket,
        }),
        `jetstream subject not stored ${deliveryGuarantee}`,
        [subject, `["${stream}.>"]`, "JetStreamSubjectNotStoredError"],
      );
    });
  });
}
