/**
 * Benchmark: writing and reading one state blob of 10 MB and of 100 MB
 * through `LocalDirectoryCheckpointStorage` and through
 * `ObjectStoreCheckpointStorage`, interleaved in one run.
 *
 *     deno run -A bench/checkpoint_storage.ts
 *     deno run -A bench/checkpoint_storage.ts --nats nats://127.0.0.1:4222 --rounds 5 \
 *       [--sizes 10000000,100000000]
 *
 * For each size, each round writes (`writeState`) then reads (`readState`)
 * the blob with each storage in turn ({@linkcode runRounds}: A B C A B C
 * ...): the local directory (a temporary directory: write to a temp file,
 * fsync, rename, fsync the directory), the Object Store with native SHA-256
 * (what `ObjectStoreCheckpointStorage.open` selects), and the Object Store
 * with the client's pure-JS SHA-256, for comparison. Every read is compared
 * byte for byte with what was written; a difference ends the benchmark with
 * an error naming the first differing offset (exit code 1). Figures are
 * medians over the rounds, in ms and MB/s (1 MB = 10^6 bytes); the ratios
 * are each Object Store's time over the local directory's, as the median of
 * the per-round ratios. The blob is random bytes, made once per size. The
 * bucket and the directory are removed at the end. NATS shares the
 * machine's cores with this process. The last line is `RESULT` with
 * `<variant>_<size>_put_ms`, `..._get_ms`, `..._put_ratio` and
 * `..._get_ratio` per Object Store variant (`native`, `js`) and size (in
 * bytes), and `rounds`.
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
import { formatRatio, runRounds, type Sample } from "./_rounds.ts";
import { resultLine } from "./_result.ts";

interface Variant {
  /** Short name, for the RESULT line. */
  readonly key: string;
  readonly name: string;
  readonly storage: CheckpointStorage;
  readonly sha256?: objApi.Sha256Backend;
}

/** One write and read: their times in ms. */
interface PutGet {
  readonly putMs: number;
  readonly getMs: number;
}

function randomBlob(bytes: number): Uint8Array {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += 65_536) {
    crypto.getRandomValues(data.subarray(i, Math.min(i + 65_536, bytes)));
  }
  return data;
}

/** @throws {Error} naming the first differing offset when `read` is not `written`. */
function expectSameBytes(what: string, written: Uint8Array, read: Uint8Array): void {
  if (read.byteLength !== written.byteLength) {
    throw new Error(`${what}: expected ${written.byteLength} bytes, got ${read.byteLength}`);
  }
  for (let i = 0; i < written.byteLength; i++) {
    if (read[i] !== written[i]) {
      throw new Error(`${what}: byte ${i} differs: expected ${written[i]}, got ${read[i]}`);
    }
  }
}

async function putGet(v: Variant, jobId: string, blob: Uint8Array): Promise<PutGet> {
  objApi.setSha256Backend(v.sha256 ?? "native");
  const t0 = performance.now();
  const handle = await v.storage.writeState(jobId, 1, "state#0", blob);
  const t1 = performance.now();
  const read = await v.storage.readState(jobId, handle);
  const t2 = performance.now();
  expectSameBytes(`${v.name}: the state read back`, blob, read);
  await v.storage.discardJob(jobId);
  return { putMs: t1 - t0, getMs: t2 - t1 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string", default: "nats://127.0.0.1:4222" },
      rounds: { type: "string", default: "3" },
      sizes: { type: "string", default: "10000000,100000000" },
    },
  });
  const sizes = values.sizes.split(",").map(Number);
  const nc = await connect({ servers: values.nats });
  const bucket = `weir-bench-${crypto.randomUUID().slice(0, 8)}`;
  const dir = await Deno.makeTempDir({ prefix: "weir-bench-storage-" });
  const result: Record<string, number> = {};
  try {
    const objectStore = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
    const variants: Variant[] = [
      {
        key: "local",
        name: "local directory",
        storage: new LocalDirectoryCheckpointStorage({ directory: dir }),
      },
      {
        key: "native",
        name: "object store (native SHA-256)",
        storage: objectStore,
        sha256: "native",
      },
      { key: "js", name: "object store (JS SHA-256)", storage: objectStore, sha256: "js" },
    ];
    console.log(
      `checkpoint storage: ${values.rounds} interleaved rounds, medians; NATS ${values.nats}, ` +
        `Deno ${Deno.version.deno}; every read compared with what was written`,
    );
    for (const bytes of sizes) {
      const blob = randomBlob(bytes);
      const rounds = await runRounds<PutGet>({
        rounds: Number(values.rounds),
        variants: variants.map((v) => ({
          name: v.name,
          run: ({ round }) => putGet(v, `bench-${bytes}-${round}`, blob),
        })),
      });
      const mb = bytes / 1e6;
      const put = (s: Sample<PutGet>) => s.value.putMs;
      const get = (s: Sample<PutGet>) => s.value.getMs;
      console.log(`\n${mb} MB blob`);
      console.log(
        `  ${"storage".padEnd(32)}${"put ms".padStart(9)}${"MB/s".padStart(8)}` +
          `${"get ms".padStart(9)}${"MB/s".padStart(8)}   put/local, get/local (per round)`,
      );
      const local = variants[0]!.name;
      for (const v of variants) {
        const p = rounds.median(v.name, put);
        const g = rounds.median(v.name, get);
        const putRatio = rounds.ratio(v.name, local, put);
        const getRatio = rounds.ratio(v.name, local, get);
        console.log(
          `  ${v.name.padEnd(32)}${p.toFixed(0).padStart(9)}` +
            `${(mb / (p / 1000)).toFixed(0).padStart(8)}${g.toFixed(0).padStart(9)}` +
            `${(mb / (g / 1000)).toFixed(0).padStart(8)}   ` +
            (v.name === local ? "-" : `${formatRatio(putRatio, 1)}, ${formatRatio(getRatio, 1)}`),
        );
        if (v.name === local) continue;
        result[`${v.key}_${bytes}_put_ms`] = p;
        result[`${v.key}_${bytes}_get_ms`] = g;
        result[`${v.key}_${bytes}_put_ratio`] = putRatio.medianOfRatios;
        result[`${v.key}_${bytes}_get_ratio`] = getRatio.medianOfRatios;
      }
    }
  } finally {
    objApi.setSha256Backend("native");
    await (await jetstreamApi.jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`)
      .catch(() => {});
    await nc.close();
    await Deno.remove(dir, { recursive: true });
  }
  console.log(resultLine({ ...result, rounds: Number(values.rounds) }));
}

if (import.meta.main) await main();
