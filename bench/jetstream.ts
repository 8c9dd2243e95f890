/**
 * Benchmark: JetStream source → keyed job → transactional JetStream sink,
 * exactly-once with a checkpoint every 1 s, in local mode, beside the same
 * job with a blackhole sink, interleaved in one run.
 *
 *     deno task bench:jetstream                       # 5M records per run, 3 rounds
 *     deno run -A --v8-flags=--expose-gc bench/jetstream.ts --records 2000000 --rounds 5
 *
 * ## The job
 *
 * The input stream is filled once, before the rounds, with `--records`
 * records `{ id, key, amount }` (12 bytes each: three unsigned 32-bit
 * big-endian integers; `key = id % --keys`) in record batches of about
 * `--batch-bytes`, non-transactional. Each run reads it from the start with
 * a bounded `JetStreamSource` (read-committed, parallelism 1), keys it by
 * `key`, keeps a running total of `amount` per key in `ValueState`, passes
 * each record on, and writes it:
 *
 * - `transactional`: through `JetStreamSink` (exactly-once, batches of
 *   `--batch-bytes`) to a fresh output stream and transaction bucket;
 * - `blackhole`: to a sink function that counts and checksums.
 *
 * Both enable exactly-once checkpoints every 1 s (`--checkpoint-ms`) on
 * local storage. `--only transactional|blackhole` runs one variant (to
 * profile it with `--cpu-prof`; no ratio then). NATS is `--server URL` (default `WEIR_TEST_NATS_URL`, else
 * `nats://127.0.0.1:4222`); the flag is not `--nats`, which would ask
 * `execute()` for cluster mode.
 *
 * ## Checks
 *
 * Every run is checked before its figures count (untimed, before the next
 * run): the blackhole's count and checksum, and for the transactional sink
 * the output stream read committed (`readCommitted`, bounded): its record
 * count and checksum (the sum of `id * 2654435761 + amount` mod 2^32 over
 * the records) must equal the input's, else the benchmark ends with an
 * error naming both values (exit code 1). The job's keyed totals are
 * checked too: per key, the sum of its records' amounts.
 *
 * ## Figures
 *
 * Records per wall second of `execute()` (job start to the final commit),
 * and per CPU-second of this process; medians over the rounds, the ratio
 * is the median of per-round ratios (transactional / blackhole). The NATS
 * server runs on the same cores, and the load averages before and after
 * are printed (the machine may be shared). The last line is
 * `RESULT records=… eps=… blackhole_eps=… ratio=… eps_cpu=… blackhole_eps_cpu=… ratio_cpu=… rounds=…`.
 * Nothing is asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { headers as natsHeaders, jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { JetStreamSink, JetStreamSource, readCommitted } from "../connectors/jetstream/mod.ts";
import { RECORD_BATCH_HEADER, RecordBatchBuilder } from "../connectors/jetstream/record_batch.ts";
import { AsyncPublisher } from "../connectors/jetstream/publisher.ts";
import { formatRate, formatRatio, runRounds, type Sample } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";

/** A benchmark record. */
interface Bill {
  readonly id: number;
  readonly key: number;
  readonly amount: number;
}

/** Bytes of an encoded {@linkcode Bill}. */
const BILL_BYTES = 12;

/** The checksum term of one record: `id * 2654435761 + amount` mod 2^32. */
function term(id: number, amount: number): number {
  return (Math.imul(id, 2654435761) + amount) >>> 0;
}

function amountOf(id: number): number {
  return (id * 7919) % 1000;
}

/** One shared buffer: the sink copies a record's bytes into its batch before the next call. */
const scratch = new Uint8Array(BILL_BYTES);

function serialize(b: Bill): Uint8Array {
  writeBill(scratch, 0, b.id, b.key, b.amount);
  return scratch;
}

function writeBill(out: Uint8Array, o: number, id: number, key: number, amount: number): void {
  out[o] = id >>> 24;
  out[o + 1] = id >>> 16;
  out[o + 2] = id >>> 8;
  out[o + 3] = id;
  out[o + 4] = key >>> 24;
  out[o + 5] = key >>> 16;
  out[o + 6] = key >>> 8;
  out[o + 7] = key;
  out[o + 8] = amount >>> 24;
  out[o + 9] = amount >>> 16;
  out[o + 10] = amount >>> 8;
  out[o + 11] = amount;
}

function u32(d: Uint8Array, o: number): number {
  return ((d[o]! << 24) >>> 0) + (d[o + 1]! << 16) + (d[o + 2]! << 8) + d[o + 3]!;
}

function deserialize(d: Uint8Array): Bill {
  if (d.byteLength !== BILL_BYTES) {
    throw new RangeError(`A bill must be ${BILL_BYTES} bytes: current length is ${d.byteLength}`);
  }
  return { id: u32(d, 0), key: u32(d, 4), amount: u32(d, 8) };
}

/** Keeps a running total per key and passes each record on. */
class RunningTotal implements KeyedProcessFunction<number, Bill, Bill> {
  private total!: ValueState<number>;
  open(ctx: RuntimeContext): void {
    this.total = ctx.getState(new ValueStateDescriptor<number>("total"));
  }
  processElement(bill: Bill, _ctx: KeyedProcessContext<number>, out: Collector<Bill>): void {
    this.total.update((this.total.value() ?? 0) + bill.amount);
    out.collect(bill);
  }
}

/** What a run produced. */
interface Outcome {
  readonly variant: "transactional" | "blackhole";
  /** The blackhole's count and checksum, or the output stream to read. */
  readonly count: number;
  readonly checksum: number;
  readonly output: string | undefined;
  readonly bucket: string | undefined;
  readonly checkpoints: number;
}

interface Setup {
  readonly servers: string;
  readonly input: string;
  readonly records: number;
  readonly checksum: number;
  readonly batchBytes: number;
  readonly checkpointMs: number;
  readonly directory: string;
}

/** Fills `input` with the records in batches of about `batchBytes`; returns their checksum. */
async function fillInput(
  servers: string,
  input: string,
  options: { records: number; keys: number; batchBytes: number },
): Promise<number> {
  const nc = await connectNats({ servers, name: "weir-bench-fill" });
  try {
    const publisher = new AsyncPublisher(nc);
    const builder = new RecordBatchBuilder(options.batchBytes + 64);
    const bill = new Uint8Array(BILL_BYTES);
    const pending: Promise<unknown>[] = [];
    let checksum = 0;
    const publish = () => {
      const headers = natsHeaders();
      headers.set(RECORD_BATCH_HEADER, String(builder.count));
      pending.push(publisher.publish(`${input}.bills`, builder.finish(), headers));
    };
    for (let id = 0; id < options.records; id++) {
      const amount = amountOf(id);
      writeBill(bill, 0, id, id % options.keys, amount);
      builder.add(bill);
      checksum = (checksum + term(id, amount)) >>> 0;
      if (builder.byteLength >= options.batchBytes) publish();
      if (pending.length >= 256) await Promise.all(pending.splice(0));
    }
    if (builder.count > 0) publish();
    await Promise.all(pending);
    publisher.close();
    return checksum;
  } finally {
    await nc.close();
  }
}

async function run(setup: Setup, variant: Outcome["variant"]): Promise<Outcome> {
  const connection = { servers: setup.servers, name: "weir-bench" };
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(setup.checkpointMs, { directory: setup.directory });
  const keyed = env.fromSource(
    new JetStreamSource<Bill>({
      connection,
      stream: setup.input,
      bounded: true,
      deserializer: deserialize,
      batchSize: 8192,
      maxBuffered: 256,
    }),
    WatermarkStrategy.noWatermarks(),
    "bills",
  ).uid("bills")
    .keyBy((b) => b.key)
    .process(new RunningTotal()).uid("totals");
  let count = 0;
  let checksum = 0;
  let output: string | undefined;
  let bucket: string | undefined;
  if (variant === "blackhole") {
    keyed.sinkTo({
      kind: "simple",
      invoke: (b: Bill) => {
        count++;
        checksum = (checksum + term(b.id, b.amount)) >>> 0;
      },
    }).uid("out");
  } else {
    const suffix = crypto.randomUUID().slice(0, 8);
    output = `weir-bench-out-${suffix}`;
    bucket = `weir-bench-txn-${suffix}`;
    const nc = await connectNats(connection);
    try {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      await jsm.streams.add({ name: output, subjects: [`${output}.>`] });
    } finally {
      await nc.close();
    }
    keyed.sinkTo(
      new JetStreamSink<Bill>({
        connection,
        stream: output,
        subject: `${output}.bills`,
        serializer: serialize,
        txnBucket: bucket,
        maxBatchBytes: setup.batchBytes,
      }),
    ).uid("out");
  }
  const result = await env.execute(`jetstream-bench-${variant}`);
  return { variant, count, checksum, output, bucket, checkpoints: result.checkpoints.completed };
}

/** Checks a run's output against the input (untimed); removes its output stream and bucket. */
async function verify(setup: Setup, outcome: Outcome): Promise<void> {
  const name = `${outcome.variant} run`;
  if (outcome.output === undefined) {
    expectEqual(`${name}: records sunk`, setup.records, outcome.count);
    expectEqual(`${name}: checksum of the records sunk`, setup.checksum, outcome.checksum);
    return;
  }
  const connection = { servers: setup.servers, name: "weir-bench-verify" };
  let count = 0;
  let checksum = 0;
  try {
    for await (
      const r of readCommitted({
        connection,
        stream: outcome.output,
        txnBucket: outcome.bucket!,
        bounded: true,
      })
    ) {
      const b = deserialize(r.data);
      count++;
      checksum = (checksum + term(b.id, b.amount)) >>> 0;
    }
  } finally {
    const nc = await connectNats(connection);
    const jsm = await jetstreamApi.jetstreamManager(nc);
    await jsm.streams.delete(outcome.output).catch(() => {});
    await jsm.streams.delete(`KV_${outcome.bucket}`).catch(() => {});
    await nc.close();
  }
  expectEqual(`${name}: records committed in stream ${outcome.output}`, setup.records, count);
  expectEqual(`${name}: checksum of the records committed`, setup.checksum, checksum);
}

/** Collects garbage before a measurement when run with `--v8-flags=--expose-gc`. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      records: { type: "string", default: "5000000" },
      rounds: { type: "string", default: "3" },
      keys: { type: "string", default: "10000" },
      "batch-bytes": { type: "string", default: String(128 * 1024) },
      "checkpoint-ms": { type: "string", default: "1000" },
      only: { type: "string" },
      server: {
        type: "string",
        default: Deno.env.get("WEIR_TEST_NATS_URL") || "nats://127.0.0.1:4222",
      },
    },
  });
  if (values.only !== undefined && values.only !== "transactional" && values.only !== "blackhole") {
    throw new RangeError(
      `--only must be transactional or blackhole: current value is ${JSON.stringify(values.only)}`,
    );
  }
  const records = positive("--records", values.records);
  const keys = positive("--keys", values.keys);
  const batchBytes = positive("--batch-bytes", values["batch-bytes"]);
  const input = `weir-bench-in-${crypto.randomUUID().slice(0, 8)}`;
  const servers = values.server;
  const nc = await connectNats({ servers, name: "weir-bench-setup" });
  const jsm = await jetstreamApi.jetstreamManager(nc);
  await jsm.streams.add({ name: input, subjects: [`${input}.>`] });
  const directory = await Deno.makeTempDir({ prefix: "weir-bench-jetstream-" });
  try {
    const loadBefore = loadAverage();
    const checksum = await fillInput(servers, input, { records, keys, batchBytes });
    const setup: Setup = {
      servers,
      input,
      records,
      checksum,
      batchBytes,
      checkpointMs: positive("--checkpoint-ms", values["checkpoint-ms"]),
      directory,
    };
    let unchecked: Outcome | undefined;
    const checkPending = async () => {
      const o = unchecked;
      unchecked = undefined;
      if (o !== undefined) await verify(setup, o);
    };
    const eps = (s: Sample<Outcome>) => records / (s.wallMs / 1000);
    const epsCpu = (s: Sample<Outcome>) => records / (s.cpuMs / 1000);
    const rounds = await runRounds<Outcome>({
      rounds: positive("--rounds", values.rounds),
      before: async () => {
        await checkPending();
        collectGarbage();
      },
      variants: (["transactional", "blackhole"] as const).filter((v) =>
        values.only === undefined || values.only === v
      ).map((variant) => ({
        name: variant,
        run: async () => unchecked = await run(setup, variant),
      })),
      onSample: (s) =>
        console.log(
          `round ${s.round}: ${s.variant.padEnd(13)} ${formatRate(eps(s))}, ` +
            `${formatRate(epsCpu(s), "records/CPU-s")} (${(s.wallMs / 1000).toFixed(2)} s wall, ` +
            `${(s.cpuMs / 1000).toFixed(2)} s CPU, ${s.value.checkpoints} checkpoint(s))`,
        ),
    });
    await checkPending();
    const m = (variant: string, f: (s: Sample<Outcome>) => number) => rounds.median(variant, f);
    if (values.only !== undefined) {
      console.log(
        `${values.only} sink only: ${formatRate(m(values.only, eps))}, ` +
          `${
            formatRate(m(values.only, epsCpu), "records/CPU-s")
          } (no RESULT line without both variants)`,
      );
      return;
    }
    const ratio = rounds.ratio("transactional", "blackhole", eps);
    const ratioCpu = rounds.ratio("transactional", "blackhole", epsCpu);
    console.log(`load average (1, 5, 15 min) before: ${loadBefore}, after: ${loadAverage()}`);
    console.log(
      `records per run: ${records} (${keys} keys, batches of ${batchBytes} bytes), rounds: ` +
        `${rounds.count} interleaved; medians; every run's count and checksum ${checksum} checked`,
    );
    console.log(
      `transactional sink: ${formatRate(m("transactional", eps))}, ` +
        formatRate(m("transactional", epsCpu), "records/CPU-s"),
    );
    console.log(
      `blackhole sink:     ${formatRate(m("blackhole", eps))}, ` +
        formatRate(m("blackhole", epsCpu), "records/CPU-s"),
    );
    console.log(`transactional / blackhole, wall: ${formatRatio(ratio)} (target >= 0.5)`);
    console.log(`transactional / blackhole, CPU:  ${formatRatio(ratioCpu)}`);
    console.log(resultLine({
      records,
      eps: m("transactional", eps),
      blackhole_eps: m("blackhole", eps),
      ratio: ratio.medianOfRatios,
      eps_cpu: m("transactional", epsCpu),
      blackhole_eps_cpu: m("blackhole", epsCpu),
      ratio_cpu: ratioCpu.medianOfRatios,
      rounds: rounds.count,
    }));
  } finally {
    await jsm.streams.delete(input).catch(() => {});
    await nc.close();
    await Deno.remove(directory, { recursive: true });
  }
}

/** The machine's load averages (`/proc/loadavg`), or "unknown": the machine is shared, say how busy it was. */
function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

function positive(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(
      `${flag} must be a positive integer: current value is ${JSON.stringify(text)}`,
    );
  }
  return n;
}

if (import.meta.main) await main();
