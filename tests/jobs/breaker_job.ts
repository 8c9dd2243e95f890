/**
 * The job of `tests/breaker_cluster_test.ts`: records `{ k, n }` from a
 * JetStream stream, keyed by `k` across a network edge, a running count per
 * key, written to a JetStream stream with the transactional sink as
 * `{ k, n, c }` (c: the count of key k so far). Read committed, the output
 * must hold every input record exactly once, with counts 1..m per key.
 *
 *     deno run -A tests/jobs/breaker_job.ts --nats URL --source S --sink T --txn-bucket B
 *
 * Options: `--parallelism P` (2), `--bounded` (default true; `--unbounded`),
 * `--interval MS` (checkpoint interval, 200), `--timeout MS` (checkpoint
 * timeout, 60 000), `--restarts N` (fixed delay, 5), `--delay MS` (200),
 * `--rate R` (source records per second), `--dead-letter` (onMalformed
 * "dead-letter": dead letters become `{ dead: seq }` records), `--filter F`
 * (the source's `filterSubject`, e.g. `in.*`: one split per subject) and
 * `--discovery MS` (its `discoveryIntervalMs`), `--mode M` (checkpointing
 * mode, `exactly-once` by default or `at-least-once`), `--guarantee G` (the
 * sink's `deliveryGuarantee`, `exactly-once` by default).
 *
 * Faults: `--pad BYTES` (each record carries a string of that many bytes
 * across the network edge, dropped before the sink); `--exit-at N` (attempt
 * 0 calls `Deno.exit(1)` at record n = N on its slot thread);
 * `--exit-on-load` (the module calls `Deno.exit(1)` while loading on slot
 * threads); `--kill-at POINT:ID` (SIGKILL the worker process at fault point
 * POINT of checkpoint ID, attempt 0, sink vertex subtask 0).
 *
 * Large records (breaker-2): `--sink-pad BYTES` (each output record carries
 * a `pad` string of that many bytes into the sink, chained after the count)
 * and `--max-batch-bytes N` (the sink's `maxBatchBytes`). `--postgres URL
 * --table T --gid-prefix P` writes `(k, n, c)` rows into table T with the
 * PostgreSQL prepared-transaction sink (gids prefixed P) instead of the
 * JetStream sink.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  executionRole,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../../mod.ts";
import type { Collector, Sink } from "../../mod.ts";
import { PostgresPreparedSink } from "../../connectors/postgres/mod.ts";
import {
  JETSTREAM_DEAD_LETTER,
  JetStreamSink,
  JetStreamSource,
} from "../../connectors/jetstream/mod.ts";

/** An input record. */
export interface In {
  k: string;
  n: number;
  pad?: string;
}

/** An output record. */
export interface Out {
  k: string;
  n: number;
  c: number;
  dead?: number;
  pad?: string;
}

class Count implements KeyedProcessFunction<string, In, Out> {
  private count!: ValueState<number>;
  constructor(private readonly sinkPad = "") {}
  open(ctx: RuntimeContext): void {
    this.count = ctx.getState(new ValueStateDescriptor<number>("count"));
  }
  processElement(v: In, _ctx: KeyedProcessContext<string>, out: Collector<Out>): void {
    const c = (this.count.value() ?? 0) + 1;
    this.count.update(c);
    out.collect(
      this.sinkPad === "" ? { k: v.k, n: v.n, c } : { k: v.k, n: v.n, c, pad: this.sinkPad },
    );
  }
}

if (import.meta.main) {
  const text = { type: "string" } as const;
  const flag = { type: "boolean" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      source: text,
      sink: text,
      "txn-bucket": text,
      parallelism: text,
      unbounded: flag,
      interval: text,
      timeout: text,
      restarts: text,
      delay: text,
      rate: text,
      "dead-letter": flag,
      filter: text,
      discovery: text,
      pad: text,
      "exit-at": text,
      "exit-on-load": flag,
      "kill-at": text,
      mode: text,
      guarantee: text,
      "sink-pad": text,
      "max-batch-bytes": text,
      postgres: text,
      table: text,
      "gid-prefix": text,
    },
  });
  const onSlot = executionRole() === "slot";
  if (values["exit-on-load"] && onSlot) Deno.exit(1);
  const connection = { servers: values.nats! };
  const pad = Number(values.pad ?? 0);
  const exitAt = values["exit-at"] === undefined ? undefined : Number(values["exit-at"]);
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(Number(values.parallelism ?? 2))
    .enableCheckpointing(Number(values.interval ?? 200), {
      timeoutMs: Number(values.timeout ?? 60_000),
      mode: values.mode === "at-least-once" ? "at-least-once" : "exactly-once",
    })
    .setRestartStrategy(
      RestartStrategies.fixedDelay(Number(values.restarts ?? 5), Number(values.delay ?? 200)),
    );
  const source = env.fromSource(
    new JetStreamSource<In>({
      connection,
      stream: values.source!,
      txnBucket: values["txn-bucket"]!,
      bounded: !values.unbounded,
      ...(values["dead-letter"] ? { onMalformed: "dead-letter" as const } : {}),
      ...(values.rate === undefined ? {} : { recordsPerSecond: Number(values.rate) }),
      ...(values.filter === undefined ? {} : { filterSubject: values.filter }),
      ...(values.discovery === undefined ? {} : { discoveryIntervalMs: Number(values.discovery) }),
    }),
    WatermarkStrategy.noWatermarks(),
    "in",
  ).uid("in");
  const sink: Sink<Out> = values.postgres !== undefined
    ? new PostgresPreparedSink<Out>({
      url: values.postgres,
      table: values.table!,
      columns: ["k", "n", "c"],
      values: (r) => [r.k, r.n, r.c],
      gidPrefix: values["gid-prefix"]!,
    })
    : new JetStreamSink<Out>({
      connection,
      stream: values.sink!,
      subject: `${values.sink}.out`,
      txnBucket: values["txn-bucket"]!,
      ...(values["max-batch-bytes"] === undefined
        ? {}
        : { maxBatchBytes: Number(values["max-batch-bytes"]) }),
      ...(values.guarantee === undefined
        ? {}
        : { deliveryGuarantee: values.guarantee as "exactly-once" | "at-least-once" | "none" }),
    });
  let attempt = 0;
  source
    .map({
      open(ctx: RuntimeContext) {
        attempt = ctx.attempt;
      },
      map(v: In): In {
        if (exitAt !== undefined && attempt === 0 && v.n === exitAt) Deno.exit(1);
        return pad > 0 ? { ...v, pad: "x".repeat(pad) } : v;
      },
    })
    .uid("check")
    .keyBy((v) => v.k)
    .process(new Count("x".repeat(Number(values["sink-pad"] ?? 0))))
    .uid("count")
    .sinkTo(sink)
    .uid("out");
  if (values["dead-letter"]) {
    source.getSideOutput(JETSTREAM_DEAD_LETTER)
      .map((d): Out => ({ k: "", n: 0, c: 0, dead: d.seq }))
      .uid("dead")
      .sinkTo(
        new JetStreamSink<Out>({
          connection,
          stream: values.sink!,
          subject: `${values.sink}.dead`,
          txnBucket: values["txn-bucket"]!,
        }),
      )
      .uid("dead-out");
  }
  const killAt = values["kill-at"];
  if (killAt !== undefined) {
    // "<point>:<checkpoint>": SIGKILL this worker process at that fault point of that
    // checkpoint, in attempt 0, on subtask 0 of the vertex with the sink "out".
    const [point, id] = killAt.split(":");
    const sinkVertex = env.getJobGraph("breaker").vertices.find((v) =>
      v.operators.some((o) => o.uid === "out")
    )!.id;
    env.setFaultInjector({
      task(p, site) {
        if (
          p === point && site.checkpointId === Number(id) && site.attempt === 0 &&
          site.vertexId === sinkVertex && site.subtask === 0
        ) Deno.kill(Deno.pid, "SIGKILL");
      },
    });
  }
  const result = await env.execute("breaker");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
