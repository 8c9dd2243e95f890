/**
 * Benchmark (a) of cluster mode: one data channel between two processes,
 * raw core NATS against a Weir channel, in the same run.
 *
 *     deno task bench:cluster                      # both cluster benchmarks
 *     deno run -A bench/cluster_channel.ts [--records 10000000] [--rounds 3] [--window 8]
 *         [--buffer-size 2048] [--credits 8] [--nats URL] [--cpu-prof DIR]
 *
 * The same records, `{ key: i % 10000, value: i }` for `i` in `0..records-1`,
 * go from one Deno process to another:
 *
 * 1. **raw**: a publisher process makes the objects, packs 1000 records per
 *    message (an 8-byte header, sequence number and count as uint32, then
 *    key and value as float64 per record: 16 bytes a record) and publishes
 *    them on core NATS; a subscriber process checks the sequence number,
 *    unpacks every record into an object and counts. The subscriber grants
 *    credits (`--window` messages in flight, returned in batches of half of
 *    it, as Weir's input gate does), so nothing is lost to a slow consumer.
 * 2. **weir**: `bench/jobs/channel_job.ts` on a coordinator and two worker
 *    processes with one slot each: the source subtask (a sequence source and
 *    a chained map making the objects) runs on one worker, the counting sink
 *    on the other, across one `rebalance()` channel (buffers of 2048
 *    records, 8 credits per channel: Weir's defaults, which `--buffer-size`
 *    and `--credits` change). The benchmark checks from the subtasks'
 *    reports that they ran in the two worker processes, and that the sink
 *    counted every record once (count and sum of values).
 *
 * 3. **ports**: the same job on a second cluster (its own private NATS
 *    server) of one worker process with two slots: the source and the sink
 *    run in two slot threads of that process, and the channel goes through
 *    a `MessagePort` (`runtime/actor/port_transport.ts`) instead of NATS.
 *    The benchmark checks that both ran in that one process. Weir over
 *    NATS against Weir over ports, in the same run, is the ratio
 *    `ports / weir`.
 *
 * Both check that the receiving side counted every record once: `records`
 * records whose values sum to `records * (records - 1) / 2`, and for Weir
 * that the sending side made them; a mismatch ends the benchmark with an
 * error naming the expected and the counted values (exit code 1).
 *
 * Timing, for both: from the first record made by the sending side to the
 * last record counted by the receiving side, in wall-clock time of the
 * same host. It excludes process start-up, connecting, and, for Weir,
 * submission, deployment (slot threads loading the job module) and the
 * final checkpoint after the last record; those are printed separately as
 * the job's wall time. CPU time is that of every process of the run
 * (`readCpu()` of `_rounds.ts`: the publisher and subscriber, or the job
 * client, the coordinator and the workers; the NATS server when it is the
 * benchmark's own), start-up included, so records per CPU-second are a
 * little pessimistic for all. Raw, Weir and ports run interleaved for
 * `--rounds` rounds (raw, Weir, ports, raw, ...); figures are medians over
 * the rounds, and the ratio Weir/raw, the median of the per-round ratios,
 * is the one to compare (target >= 50%). The last line is `RESULT raw_eps=…
 * weir_eps=… raw_eps_cpu=… weir_eps_cpu=… ratio=… ratio_cpu=… ports_eps=…
 * ports_eps_cpu=… ports_ratio=… ports_ratio_cpu=… rounds=…` (`ports_ratio`:
 * ports / Weir over NATS). Nothing is asserted on timing. Every run's
 * CPU time covers both clusters and their NATS servers (the idle cluster's
 * heartbeats add a little to each).
 *
 * Without `--nats`, the benchmark starts its own nats-server (with JetStream,
 * for the checkpoint bucket) on a free port and stops it at the end. With
 * `--cpu-prof DIR`, the worker processes write V8 CPU profiles there, and
 * the benchmark prints their top self-time functions.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { connect } from "../runtime/actor/nats_deps.ts";
import { Proc } from "../tests/_cluster.ts";
import {
  BenchCluster,
  benchNats,
  cpuScope,
  parseResultLine,
  printCpuProfiles,
  runDeno,
  waitOrKill,
} from "./_cluster_bench.ts";
import { formatRate, formatRatio, type Rounds, runRounds, type Sample } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { readReports, wallClockMs } from "./jobs/_report.ts";

const SELF = fileURLToPath(import.meta.url);
const JOB = fileURLToPath(new URL("./jobs/channel_job.ts", import.meta.url));
/** Records per raw message. */
const BATCH = 1000;
/** Bytes of a raw message's header: sequence number and record count, uint32 each. */
const HEADER = 8;
/** Bytes of a raw record: key and value, float64 each. */
const RECORD = 16;

/** What the raw subscriber prints on its `RESULT` line. */
interface RawSubscriberResult {
  readonly records: number;
  readonly checksum: number;
  readonly firstMs: number;
  readonly lastMs: number;
}

/** Little-endian uint32 as 4 bytes (a credit grant). */
function u32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, true);
  return out;
}

/** The raw publisher: packs and publishes against credits; prints the time of its first record. */
async function rawPublisher(url: string, subject: string, records: number): Promise<void> {
  const nc = await connect({ servers: url, name: "bench-raw-publisher" });
  let credits = 0;
  let wake: (() => void) | undefined;
  nc.subscribe(`${subject}.credit`, {
    callback: (_error, msg) => {
      credits += new DataView(msg.data.buffer, msg.data.byteOffset, 4).getUint32(0, true);
      wake?.();
    },
  });
  await nc.flush();
  nc.publish(`${subject}.start`);
  let firstMs = 0;
  let seq = 0;
  for (let i = 0; i < records;) {
    if (credits === 0) {
      await new Promise<void>((resolve) => wake = resolve);
      wake = undefined;
      continue;
    }
    if (seq === 0) firstMs = wallClockMs();
    const n = Math.min(BATCH, records - i);
    const batch: { key: number; value: number }[] = new Array(n);
    for (let j = 0; j < n; j++) batch[j] = { key: (i + j) % 10_000, value: i + j };
    const bytes = new Uint8Array(HEADER + RECORD * n);
    const view = new DataView(bytes.buffer);
    view.setUint32(0, seq, true);
    view.setUint32(4, n, true);
    for (let j = 0, at = HEADER; j < n; j++, at += RECORD) {
      const r = batch[j]!;
      view.setFloat64(at, r.key, true);
      view.setFloat64(at + 8, r.value, true);
    }
    nc.publish(`${subject}.data`, bytes);
    seq++;
    credits--;
    i += n;
  }
  await nc.flush();
  console.log(`RESULT ${JSON.stringify({ firstMs, messages: seq })}`);
  await nc.close();
}

/** The raw subscriber: checks sequence numbers, unpacks to objects, counts, grants credits. */
async function rawSubscriber(
  url: string,
  subject: string,
  records: number,
  window: number,
): Promise<void> {
  const nc = await connect({ servers: url, name: "bench-raw-subscriber" });
  const creditBatch = Math.max(1, Math.floor(window / 2));
  let expectedSeq = 0;
  let count = 0;
  let checksum = 0;
  let firstMs = 0;
  let lastMs = 0;
  let unreturned = 0;
  let failure: Error | undefined;
  const { promise: done, resolve } = Promise.withResolvers<void>();
  nc.subscribe(`${subject}.start`, {
    callback: () => nc.publish(`${subject}.credit`, u32(window)),
  });
  nc.subscribe(`${subject}.data`, {
    callback: (_error, msg) => {
      const d = msg.data;
      const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
      const seq = view.getUint32(0, true);
      if (seq !== expectedSeq) {
        failure ??= new Error(
          `raw subscriber on ${subject}.data: expected ${expectedSeq}, got ${seq}`,
        );
        resolve();
        return;
      }
      expectedSeq++;
      if (count === 0) firstMs = wallClockMs();
      const n = view.getUint32(4, true);
      const batch: { key: number; value: number }[] = new Array(n);
      for (let j = 0, at = HEADER; j < n; j++, at += RECORD) {
        batch[j] = { key: view.getFloat64(at, true), value: view.getFloat64(at + 8, true) };
      }
      for (let j = 0; j < n; j++) {
        count++;
        checksum += batch[j]!.value;
      }
      if (++unreturned >= creditBatch) {
        nc.publish(`${subject}.credit`, u32(unreturned));
        unreturned = 0;
      }
      if (count >= records) {
        lastMs = wallClockMs();
        resolve();
      }
    },
  });
  await nc.flush();
  console.log("READY");
  await done;
  await nc.close();
  if (failure) throw failure;
  const result: RawSubscriberResult = { records: count, checksum, firstMs, lastMs };
  console.log(`RESULT ${JSON.stringify(result)}`);
}

/** One measurement: records/s, and what else to print. */
interface Measurement {
  readonly recordsPerSecond: number;
  readonly note: string;
}

/** Expected checksum: 0 + 1 + ... + (records - 1). */
function expectedChecksum(records: number): number {
  return (records * (records - 1)) / 2;
}

async function measureRaw(url: string, records: number, window: number): Promise<Measurement> {
  const subject = `bench_raw_${crypto.randomUUID().slice(0, 8)}`;
  const common = ["--nats", url, "--subject", subject, "--records", String(records)];
  const subscriber = new Proc("raw subscriber", [
    "run",
    "-A",
    SELF,
    "--raw-peer",
    "subscriber",
    "--window",
    String(window),
    ...common,
  ]);
  try {
    await subscriber.waitFor(/READY/);
    const publisherOut = await runDeno("raw publisher", [
      "run",
      "-A",
      SELF,
      "--raw-peer",
      "publisher",
      ...common,
    ]);
    const status = await waitOrKill(subscriber, 60_000);
    if (status.code !== 0) throw new Error(`raw subscriber failed:\n${subscriber.output}`);
    const pub = parseResultLine<{ firstMs: number }>(publisherOut);
    const sub = parseResultLine<RawSubscriberResult>(subscriber.output);
    expectEqual("raw: records the subscriber counted", records, sub.records);
    expectEqual("raw: checksum of the subscriber", expectedChecksum(records), sub.checksum);
    const seconds = (sub.lastMs - pub.firstMs) / 1000;
    return {
      recordsPerSecond: records / seconds,
      note: `${seconds.toFixed(2)} s first record packed -> last unpacked`,
    };
  } finally {
    await subscriber.kill("SIGTERM");
  }
}

/** What a Weir run is given. */
interface WeirRunOptions {
  readonly url: string;
  readonly records: number;
  /** Records per buffer (Weir's default 2048). */
  readonly bufferSize: number;
  /** Credits per channel (Weir's default 8). */
  readonly credits: number;
}

/**
 * Runs the channel job on `cluster` and checks its reports; `sameProcess`:
 * the source and the sink must have run in one worker process (the ports
 * variant), else in two.
 */
async function measureWeir(
  cluster: BenchCluster,
  o: WeirRunOptions,
  sameProcess: boolean,
): Promise<Measurement> {
  const { url, records } = o;
  const dir = await Deno.makeTempDir({ prefix: "weir-bench-channel-" });
  try {
    const out = await runDeno("channel job", [
      "run",
      "-A",
      JOB,
      "--nats",
      url,
      "--records",
      String(records),
      "--report",
      dir,
      "--buffer-size",
      String(o.bufferSize),
      "--credits",
      String(o.credits),
    ]);
    const result = parseResultLine<{
      durationMs: number;
      restarts: number;
      metrics: Record<string, { name: string; backPressuredTimeMsPerSecond: number }>;
    }>(out);
    const backPressure = Object.values(result.metrics)
      .find((m) => /sequence/.test(m.name))?.backPressuredTimeMsPerSecond ?? 0;
    const reports = await readReports(dir);
    const source = reports.find((r) => r.role === "source");
    const sink = reports.find((r) => r.role === "sink");
    if (source === undefined || sink === undefined || reports.length !== 2) {
      throw new Error(`expected one source and one sink report, got ${JSON.stringify(reports)}`);
    }
    const workers = cluster.workers.map((_, i) => cluster.workerPid(i));
    const placed = sameProcess
      ? source.pid === sink.pid && workers.includes(source.pid)
      : source.pid !== sink.pid && workers.includes(source.pid) && workers.includes(sink.pid);
    if (!placed) {
      throw new Error(
        `the source ran in pid ${source.pid} and the sink in pid ${sink.pid}: expected ` +
          `${sameProcess ? "both in" : "one in each of"} the worker process(es) ` +
          workers.join(" and "),
      );
    }
    expectEqual("weir: records the source made", records, source.records);
    expectEqual("weir: checksum of the source", expectedChecksum(records), source.checksum);
    expectEqual("weir: records the sink counted", records, sink.records);
    expectEqual("weir: checksum of the sink", expectedChecksum(records), sink.checksum);
    expectEqual("weir: restarts of the job", 0, result.restarts);
    const seconds = (sink.lastMs - source.firstMs) / 1000;
    return {
      recordsPerSecond: records / seconds,
      note: `${seconds.toFixed(2)} s first record made (pid ${source.pid}) -> last counted ` +
        `(pid ${sink.pid}); source back-pressured ${backPressure.toFixed(0)} ms/s; ` +
        `job wall time incl. deployment and final checkpoint ` +
        `${(result.durationMs / 1000).toFixed(2)} s`,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      records: { type: "string", default: "10000000" },
      rounds: { type: "string", default: "3" },
      window: { type: "string", default: "8" },
      "buffer-size": { type: "string", default: "2048" },
      credits: { type: "string", default: "8" },
      "cpu-prof": { type: "string" },
      "raw-peer": { type: "string" },
      subject: { type: "string" },
    },
  });
  const records = Number(values.records);
  const window = Number(values.window);
  if (values["raw-peer"] !== undefined) {
    const url = values.nats!;
    const subject = values.subject!;
    if (values["raw-peer"] === "publisher") return await rawPublisher(url, subject, records);
    return await rawSubscriber(url, subject, records, window);
  }
  const nats = await benchNats(values.nats);
  const cpuProfileDir = values["cpu-prof"];
  const cluster = new BenchCluster({ nats: nats.url, workers: 2, slots: 1, cpuProfileDir });
  // A cluster needs a NATS server (or account) to itself: the ports cluster gets a private one.
  const portsNats = await benchNats(undefined);
  const portsCluster = new BenchCluster({ nats: portsNats.url, workers: 1, slots: 2 });
  const weirRun = {
    records,
    bufferSize: Number(values["buffer-size"]),
    credits: Number(values.credits),
  };
  const eps = (s: Sample<Measurement>) => s.value.recordsPerSecond;
  const epsCpu = (s: Sample<Measurement>) => records / (s.cpuMs / 1000);
  let rounds: Rounds<Measurement>;
  try {
    await cluster.start();
    await portsCluster.start();
    console.log(
      `${records} records {key, value} per run; NATS ${nats.url}` +
        `${nats.private ? " (private server)" : ""}; coordinator + 2 workers x 1 slot; ports: ` +
        `private NATS ${portsNats.url}, coordinator + 1 worker x 2 slots; ` +
        cpuScope(nats),
    );
    rounds = await runRounds<Measurement>({
      rounds: Number(values.rounds),
      variants: [
        { name: "raw", run: () => measureRaw(nats.url, records, window) },
        { name: "weir", run: () => measureWeir(cluster, { ...weirRun, url: nats.url }, false) },
        {
          name: "ports",
          run: () => measureWeir(portsCluster, { ...weirRun, url: portsNats.url }, true),
        },
      ],
      onSample: (s) =>
        console.log(
          `round ${s.round}: ${s.variant.padEnd(4)} ${formatRate(eps(s))}, ` +
            `${formatRate(epsCpu(s), "records/CPU-s")} (${s.value.note}; ` +
            `${(s.cpuMs / 1000).toFixed(2)} s CPU in ${(s.wallMs / 1000).toFixed(2)} s)`,
        ),
    });
  } catch (error) {
    console.error(cluster.logs());
    console.error(portsCluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await portsCluster.stop();
    await nats.stop();
    await portsNats.stop();
  }
  const ratio = rounds.ratio("weir", "raw", eps);
  const portsRatio = rounds.ratio("ports", "weir", eps);
  const portsRatioCpu = rounds.ratio("ports", "weir", epsCpu);
  const ratioCpu = rounds.ratio("weir", "raw", epsCpu);
  const rate = (variant: string) =>
    `${formatRate(rounds.median(variant, eps))}, ` +
    formatRate(rounds.median(variant, epsCpu), "records/CPU-s");
  console.log(
    `medians over ${rounds.count} interleaved rounds; every run's count and checksum checked:`,
  );
  console.log(`raw core NATS, ${BATCH} records/message, window ${window}: ${rate("raw")}`);
  console.log(
    `weir channel between two workers, buffers of ${values["buffer-size"]} records, ` +
      `${values.credits} credits: ${rate("weir")}`,
  );
  console.log(`weir / raw, wall: ${formatRatio(ratio)} (target >= 0.5)`);
  console.log(`weir / raw, CPU:  ${formatRatio(ratioCpu)}`);
  console.log(
    `weir channel between two slot threads of one worker, through a MessagePort: ${rate("ports")}`,
  );
  console.log(`ports / weir over NATS, wall: ${formatRatio(portsRatio)}`);
  console.log(`ports / weir over NATS, CPU:  ${formatRatio(portsRatioCpu)}`);
  console.log(resultLine({
    raw_eps: rounds.median("raw", eps),
    weir_eps: rounds.median("weir", eps),
    raw_eps_cpu: rounds.median("raw", epsCpu),
    weir_eps_cpu: rounds.median("weir", epsCpu),
    ratio: ratio.medianOfRatios,
    ratio_cpu: ratioCpu.medianOfRatios,
    ports_eps: rounds.median("ports", eps),
    ports_eps_cpu: rounds.median("ports", epsCpu),
    ports_ratio: portsRatio.medianOfRatios,
    ports_ratio_cpu: portsRatioCpu.medianOfRatios,
    rounds: rounds.count,
  }));
  if (cpuProfileDir !== undefined) await printCpuProfiles(cpuProfileDir);
}

if (import.meta.main) await main();
