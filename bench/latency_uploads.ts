/**
 * What a checkpoint upload does to the latency of the data messages of the
 * thread that runs it: the measurement behind `runtime/cluster/checkpoint_uploads.ts`.
 *
 *     deno run -A bench/latency_uploads.ts [--nats URL] [--duration-s 64] [--blob-kib 128]
 *         [--period-ms 100]
 *
 * One thread publishes a 4 KiB message every 1 ms on one NATS connection and
 * receives it on another (as a slot thread sends and receives data buffers),
 * recording `now - stamp` in an HdrHistogram (µs). Meanwhile, every
 * `--period-ms`, it writes a `--blob-kib` state blob to an Object Store
 * bucket through `CheckpointStorage.writeState` (a subtask's checkpoint
 * upload), in one of four modes, switched every 2 s in turn (interleaved, so
 * the machine's load is shared alike):
 *
 * - `none`: no upload (the baseline);
 * - `shared`: `ObjectStoreCheckpointStorage` on this thread, on the
 *   publishing connection (the slot thread before the upload thread);
 * - `own-conn`: the same on a third connection of this thread;
 * - `thread`: a {@linkcode CheckpointUploadThread} (a Web Worker with its
 *   own connection; what slot threads do now).
 *
 * Prints p50/p99/p99.9/max per mode and each mode's p99 as a ratio of the
 * baseline's, then `RESULT <mode>_p99_ms=…`. Nothing is asserted on time.
 *
 * @module
 */

import { parseArgs } from "node:util";
import * as hdr from "npm:hdr-histogram-js@3.0.1";
import { connect, objApi } from "../runtime/actor/nats_deps.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import { CheckpointUploadThread } from "../runtime/cluster/checkpoint_uploads.ts";
import { resultLine } from "./_result.ts";
import { newLatencyHistogram } from "./jobs/keyed_sum_job.ts";

/** The modes, in the order they take turns. */
export const MODES = ["none", "shared", "own-conn", "thread"] as const;
type Mode = typeof MODES[number];

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string", default: "nats://127.0.0.1:4222" },
      "duration-s": { type: "string", default: "64" },
      "blob-kib": { type: "string", default: "128" },
      "period-ms": { type: "string", default: "100" },
    },
  });
  for (const name of ["duration-s", "blob-kib", "period-ms"] as const) {
    const v = Number(values[name]);
    if (!(v > 0)) {
      throw new RangeError(`--${name} must be positive: current value is ${values[name]}`);
    }
  }
  const durationMs = Number(values["duration-s"]) * 1000;
  const blob = new Uint8Array(Number(values["blob-kib"]) * 1024).map((_, i) => (i * 7) % 256);
  const periodMs = Number(values["period-ms"]);
  const servers = values.nats;
  const pub = await connect({ servers, name: "latency-uploads-pub" });
  const sub = await connect({ servers, name: "latency-uploads-sub" });
  const own = await connect({ servers, name: "latency-uploads-own" });
  const bucket = `weir-bench-uploads-${crypto.randomUUID().slice(0, 8)}`;
  const storages: Record<Exclude<Mode, "none" | "thread">, ObjectStoreCheckpointStorage> = {
    shared: await ObjectStoreCheckpointStorage.open({ connection: pub, bucket }),
    "own-conn": await ObjectStoreCheckpointStorage.open({ connection: own, bucket }),
  };
  const uploads = new CheckpointUploadThread({ nats: { servers }, bucket, slotId: "bench" });
  const histograms = Object.fromEntries(MODES.map((m) => [m, newLatencyHistogram()])) as Record<
    Mode,
    hdr.Histogram
  >;
  const subject = `weir_bench_uploads.${crypto.randomUUID().slice(0, 8)}`;
  sub.subscribe(subject, {
    callback: (_error, m) => {
      const view = new DataView(m.data.buffer, m.data.byteOffset, 9);
      const us = Math.round(
        (performance.timeOrigin + performance.now() - view.getFloat64(0)) * 1000,
      );
      histograms[MODES[view.getUint8(8)]!].recordValue(Math.max(1, us));
    },
  });
  await sub.flush();
  let mode: Mode = "none";
  let running = true;
  const payload = new Uint8Array(4096);
  const publishing = (async () => {
    const view = new DataView(payload.buffer);
    while (running) {
      view.setFloat64(0, performance.timeOrigin + performance.now());
      view.setUint8(8, MODES.indexOf(mode));
      pub.publish(subject, payload);
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const job = "bench-job";
  let checkpoint = 0;
  const start = performance.now();
  try {
    for (let turn = 0; performance.now() - start < durationMs; turn++) {
      mode = MODES[turn % MODES.length]!;
      const until = performance.now() + 2000;
      while (performance.now() < until) {
        checkpoint++;
        const name = `v1-0-a0-${checkpoint % 4}.keyed`;
        if (mode === "thread") await uploads.writeState(job, 1, name, blob);
        else if (mode !== "none") await storages[mode].writeState(job, 1, name, blob);
        await new Promise((r) => setTimeout(r, periodMs));
      }
    }
  } finally {
    running = false;
    await publishing;
    uploads.close();
    await (await new objApi.Objm(pub).open(bucket)).destroy().catch(() => {});
    await Promise.all([pub.close(), sub.close(), own.close()]);
  }
  const ms = (h: hdr.Histogram, p: number) => h.getValueAtPercentile(p) / 1000;
  const base = ms(histograms.none, 99);
  const fields: Record<string, number> = {};
  console.log(
    `data messages of 4 KiB every 1 ms while a ${blob.length / 1024} KiB blob is written every ` +
      `${periodMs} ms; modes interleaved every 2 s for ${durationMs / 1000} s; load average ` +
      (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" "),
  );
  for (const m of MODES) {
    const h = histograms[m];
    console.log(
      `${m}: p50 ${ms(h, 50).toFixed(2)} ms, p99 ${ms(h, 99).toFixed(2)} ms, p99.9 ` +
        `${ms(h, 99.9).toFixed(2)} ms, max ${
          (h.maxValue / 1000).toFixed(1)
        } ms (n = ${h.totalCount}); ` +
        `p99 ${(ms(h, 99) / base).toFixed(2)}x none's`,
    );
    fields[`${m.replace("-", "_")}_p99_ms`] = ms(h, 99);
  }
  console.log(resultLine(fields));
}

if (import.meta.main) await main();
