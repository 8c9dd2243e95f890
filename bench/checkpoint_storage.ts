/**
 * Benchmark: writing and reading one state blob of 10 MB and of 100 MB
 * through `LocalDirectoryCheckpointStorage` and through
 * `ObjectStoreCheckpointStorage`, in the same run.
 *
 *     deno run -A bench/checkpoint_storage.ts
 *     deno run -A bench/checkpoint_storage.ts --nats nats://127.0.0.1:4222 --rounds 5
 *
 * Each round writes (`writeState`) then reads (`readState`) each size with
 * each storage: the local directory (a temporary directory: write to a temp
 * file, fsync, rename, fsync the directory), the Object Store with native
 * SHA-256 (what `ObjectStoreCheckpointStorage.open` selects), and the Object
 * Store with the client's pure-JS SHA-256, for comparison. Figures are
 * medians over the rounds, in ms and MB/s (1 MB = 10^6 bytes); the ratios
 * are the Object Store's time over the local directory's. The blob is random
 * bytes, made once per size. The bucket and the directory are removed at
 * the end. NATS shares the machine's cores with this process.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { connect, jetstreamApi, objApi } from "../runtime/actor/nats_deps.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import {
  type CheckpointStorage,
  LocalDirectoryCheckpointStorage,
} from "../runtime/checkpoint/storage.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    nats: { type: "string", default: "nats://127.0.0.1:4222" },
    rounds: { type: "string", default: "3" },
  },
});
const rounds = Number(args.values.rounds);
const SIZES = [10_000_000, 100_000_000];

interface Variant {
  readonly name: string;
  readonly storage: CheckpointStorage;
  readonly sha256?: objApi.Sha256Backend;
}

function randomBlob(bytes: number): Uint8Array {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 65_536) {
    crypto.getRandomValues(data.subarray(i, Math.min(i + 65_536, bytes)));
  }
  return data;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const nc = await connect({ servers: args.values.nats });
const bucket = `weir-bench-${crypto.randomUUID().slice(0, 8)}`;
const dir = await Deno.makeTempDir({ prefix: "weir-bench-storage-" });
try {
  const objectStore = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
  const variants: Variant[] = [
    { name: "local directory", storage: new LocalDirectoryCheckpointStorage({ directory: dir }) },
    { name: "object store (native SHA-256)", storage: objectStore, sha256: "native" },
    { name: "object store (JS SHA-256)", storage: objectStore, sha256: "js" },
  ];
  console.log(
    `checkpoint storage: ${rounds} rounds, medians; NATS ${args.values.nats}, Deno ${Deno.version.deno}`,
  );
  for (const bytes of SIZES) {
    const blob = randomBlob(bytes);
    const puts = new Map<string, number[]>();
    const gets = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (const v of variants) {
        objApi.setSha256Backend(v.sha256 ?? "native");
        const jobId = `bench-${round}`;
        let handle: Awaited<ReturnType<CheckpointStorage["writeState"]>> | undefined;
        const put = await time(async () => {
          handle = await v.storage.writeState(jobId, 1, "state#0", blob);
        });
        let read: Uint8Array | undefined;
        const get = await time(async () => {
          read = await v.storage.readState(jobId, handle!);
        });
        if (read?.byteLength !== bytes) {
          throw new Error(`${v.name}: read ${read?.byteLength} bytes`);
        }
        await v.storage.discardJob(jobId);
        (puts.get(v.name) ?? puts.set(v.name, []).get(v.name)!).push(put);
        (gets.get(v.name) ?? gets.set(v.name, []).get(v.name)!).push(get);
      }
    }
    const mb = bytes / 1e6;
    const localPut = median(puts.get(variants[0]!.name)!);
    const localGet = median(gets.get(variants[0]!.name)!);
    console.log(`\n${mb} MB blob`);
    console.log(
      `  ${"storage".padEnd(32)}${"put ms".padStart(9)}${"MB/s".padStart(8)}${
        "get ms".padStart(9)
      }` +
        `${"MB/s".padStart(8)}${"put/local".padStart(11)}${"get/local".padStart(11)}`,
    );
    for (const v of variants) {
      const put = median(puts.get(v.name)!);
      const get = median(gets.get(v.name)!);
      console.log(
        `  ${v.name.padEnd(32)}${put.toFixed(0).padStart(9)}${
          (mb / (put / 1000)).toFixed(0).padStart(8)
        }` +
          `${get.toFixed(0).padStart(9)}${(mb / (get / 1000)).toFixed(0).padStart(8)}` +
          `${(put / localPut).toFixed(1).padStart(10)}x${
            (get / localGet).toFixed(1).padStart(10)
          }x`,
      );
    }
  }
} finally {
  objApi.setSha256Backend("native");
  await (await jetstreamApi.jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`).catch(() => {});
  await nc.close();
  await Deno.remove(dir, { recursive: true });
}
