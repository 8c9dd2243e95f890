/**
 * The side-by-side with the libraries a TypeScript developer would pick
 * instead of Weir: the Nexmark queries q1, q2, q3, dedup and a keyed count
 * per auction (`records.ts`), each run by
 *
 * - `loop`: the hand-written loop (`loop.ts`), the ceiling;
 * - `weir`: Weir in local mode, exactly-once, a checkpoint every 1 s
 *   (`weir.ts`);
 * - `most`: `@most/core` with a `Map` (`most.ts`);
 * - `rxjs`: RxJS (`rxjs.ts`);
 * - `node-stream`: `node:stream` in object mode (`node_stream.ts`);
 *
 * all fed by the same `NexmarkGenerator` (events `0..N-1`, default config).
 *
 *     deno task bench:peers [--events 3000000] [--rounds 3] [--query q1,dedup]
 *
 * ## Rounds and figures
 *
 * For each query, `--rounds` rounds (default 3) run every implementation
 * once in the order above (`runRounds` of `../_rounds.ts`, a garbage
 * collection before each run), so load changes on this shared machine fall
 * on all of them. The figure is **events per CPU second** (events / CPU time
 * of the run, this process's threads: the peers and the local-mode engine
 * run here), the median over the rounds; ratios are medians of the per-round
 * ratios: against the loop, and Weir's against the fastest peer (the peer
 * with the highest median events per CPU second). Events per wall second are
 * printed per run and in the `RESULT` lines. The load (`/proc/loadavg`) is
 * printed before and after. With the default 3M events most Weir runs last
 * over a second and take one to four periodic checkpoints besides the final
 * one (q1, the fastest, sometimes only the final one); each Weir run's line
 * says how many.
 *
 * ## The check
 *
 * In every round, each implementation's output count and checksum
 * (`records.ts`) must equal the loop's; the harness throws, naming the
 * query, round and implementation, before printing any figure otherwise.
 *
 * ## Output
 *
 * One line per run, then a markdown table, then per query
 * `RESULT query=… events=… output=… loop_eps_per_core=… weir_eps_per_core=…
 * most_eps_per_core=… rxjs_eps_per_core=… node_stream_eps_per_core=…
 * weir_ratio=… most_ratio=… rxjs_ratio=… node_stream_ratio=…
 * fastest_peer=… weir_vs_fastest_peer=… rounds=N`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { expectEqual, resultLine } from "../_result.ts";
import { runRounds, type Sample } from "../_rounds.ts";
import { runLoop } from "./loop.ts";
import { runMost } from "./most.ts";
import { runNodeStream } from "./node_stream.ts";
import { type Digest, isPeerQueryName, PEER_QUERY_NAMES, type PeerQueryName } from "./records.ts";
import { runRxjs } from "./rxjs.ts";
import { runWeir, type WeirRun } from "./weir.ts";

export { PEER_QUERY_NAMES, type PeerQueryName } from "./records.ts";

/** The implementations, in the order each round runs them. */
export const IMPLEMENTATIONS = ["loop", "weir", "most", "rxjs", "node-stream"] as const;
/** One of {@linkcode IMPLEMENTATIONS}. */
export type Implementation = typeof IMPLEMENTATIONS[number];
/** The implementations other than the loop and Weir. */
export const PEERS = ["most", "rxjs", "node-stream"] as const;

const RUN: Readonly<
  Record<Implementation, (q: PeerQueryName, events: number) => Promise<Digest> | Digest>
> = {
  loop: runLoop,
  weir: (q, n) => runWeir(q, n),
  most: runMost,
  rxjs: runRxjs,
  "node-stream": runNodeStream,
};

/** One query's figures (medians over the rounds). */
export interface PeerQueryResult {
  /** The query. */
  readonly query: PeerQueryName;
  /** Events per run. */
  readonly events: number;
  /** Output records (equal for every implementation). */
  readonly output: number;
  /** Rounds run. */
  readonly rounds: number;
  /** Median events per CPU second, per implementation. */
  readonly epsPerCore: Readonly<Record<Implementation, number>>;
  /** Median events per wall second, per implementation. */
  readonly eps: Readonly<Record<Implementation, number>>;
  /** Median over rounds of (events per CPU second / the loop's), per implementation. */
  readonly ratio: Readonly<Record<Implementation, number>>;
  /** The peer with the highest median events per CPU second. */
  readonly fastestPeer: typeof PEERS[number];
  /** Median over rounds of Weir's events per CPU second / the fastest peer's. */
  readonly weirVsFastestPeer: number;
}

/** Options of {@linkcode runPeerQuery}. */
export interface RunPeerQueryOptions {
  /** The query. */
  readonly query: PeerQueryName;
  /** Events per run, a positive integer. */
  readonly events: number;
  /** Rounds (default 3). */
  readonly rounds?: number;
  /** Where the per-run lines go (default `console.log`). */
  readonly log?: (line: string) => void;
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * Runs `options.rounds` interleaved rounds of every implementation of
 * `options.query`, checking each run's output against the loop's.
 * @returns the medians and ratios.
 * @throws {RangeError} when `events` is not a positive integer (naming it
 *   and its value), or `rounds` is not.
 * @throws {Error} when an implementation's count or checksum differs from
 *   the loop's in a round (naming query, round, implementation, both values).
 */
export async function runPeerQuery(options: RunPeerQueryOptions): Promise<PeerQueryResult> {
  const { query, events } = options;
  if (!(Number.isSafeInteger(events) && events > 0)) {
    throw new RangeError(
      `Cannot run the peers' ${query} as 'events' must be a positive integer: current value is ${events}`,
    );
  }
  const count = options.rounds ?? 3;
  const log = options.log ?? console.log;
  const rounds = await runRounds<Digest>({
    rounds: count,
    before: collectGarbage,
    variants: IMPLEMENTATIONS.map((name) => ({
      name,
      run: async ({ round, earlier }) => {
        const digest = await RUN[name](query, events);
        const loop = earlier[0]?.value;
        if (loop !== undefined) {
          const what = `peers ${query}, ${events} events, round ${round}: ${name}'s output`;
          expectEqual(`${what} count (expected: the loop's)`, loop.count, digest.count);
          expectEqual(`${what} checksum (expected: the loop's)`, loop.checksum, digest.checksum);
        }
        return digest;
      },
    })),
    onSample: (s) => log(describe(query, events, s, count)),
  });
  const perCore = (s: Sample<Digest>) => events / (s.cpuMs / 1000);
  const perWall = (s: Sample<Digest>) => events / (s.wallMs / 1000);
  const record = (f: (i: Implementation) => number) =>
    Object.fromEntries(IMPLEMENTATIONS.map((i) => [i, f(i)])) as Record<Implementation, number>;
  const epsPerCore = record((i) => rounds.median(i, perCore));
  const fastestPeer = [...PEERS].sort((a, b) => epsPerCore[b] - epsPerCore[a])[0]!;
  return {
    query,
    events,
    output: rounds.samples("loop")[0]!.value.count,
    rounds: count,
    epsPerCore,
    eps: record((i) => rounds.median(i, perWall)),
    ratio: record((i) => rounds.ratio(i, "loop", perCore).medianOfRatios),
    fastestPeer,
    weirVsFastestPeer: rounds.ratio("weir", fastestPeer, perCore).medianOfRatios,
  };
}

const millions = (eps: number) => `${(eps / 1e6).toFixed(2)}M`;

function describe(query: PeerQueryName, events: number, s: Sample<Digest>, rounds: number) {
  const checkpoints = (s.value as Partial<WeirRun>).checkpoints;
  return `${query} round ${s.round}/${rounds} ${s.variant}: output ${s.value.count}, ` +
    `${(s.wallMs / 1000).toFixed(2)} s, CPU ${(s.cpuMs / 1000).toFixed(2)} s, ` +
    `${millions(events / (s.cpuMs / 1000))} events per CPU s` +
    (checkpoints === undefined ? "" : `, ${checkpoints} checkpoints (the final one included)`);
}

/** The markdown table of events per CPU second and ratios. */
export function peersTable(results: readonly PeerQueryResult[]): string {
  const head = `| query | ${
    IMPLEMENTATIONS.map((i) => `${i} events/CPU s (× loop)`).join(" | ")
  } | weir / fastest peer |`;
  const rule = `|---|${IMPLEMENTATIONS.map(() => "---:").join("|")}|---:|`;
  const rows = results.map((r) =>
    `| ${r.query} | ${
      IMPLEMENTATIONS.map((i) => `${millions(r.epsPerCore[i])} (${r.ratio[i].toFixed(2)})`)
        .join(" | ")
    } | ${r.weirVsFastestPeer.toFixed(2)} (${r.fastestPeer}) |`
  );
  return [head, rule, ...rows].join("\n");
}

const field = (i: Implementation) => i.replace("-", "_");

/** The `RESULT` fields of one query's figures. */
export function peerResultFields(r: PeerQueryResult): Record<string, number | string> {
  const out: Record<string, number | string> = {
    query: r.query,
    events: r.events,
    output: r.output,
  };
  for (const i of IMPLEMENTATIONS) out[`${field(i)}_eps_per_core`] = r.epsPerCore[i];
  for (const i of IMPLEMENTATIONS) out[`${field(i)}_eps`] = r.eps[i];
  for (const i of IMPLEMENTATIONS) if (i !== "loop") out[`${field(i)}_ratio`] = r.ratio[i];
  out.fastest_peer = r.fastestPeer;
  out.weir_vs_fastest_peer = r.weirVsFastestPeer;
  out.rounds = r.rounds;
  return out;
}

async function loadAverage(): Promise<string> {
  try {
    return (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      events: { type: "string", default: "3000000" },
      rounds: { type: "string", default: "3" },
      query: { type: "string", default: PEER_QUERY_NAMES.join(",") },
    },
  });
  const queries = values.query.split(",").map((q) => {
    if (!isPeerQueryName(q)) {
      throw new Error(`Unknown --query '${q}': expected one of ${PEER_QUERY_NAMES.join(", ")}`);
    }
    return q;
  });
  const events = Number(values.events);
  const rounds = Number(values.rounds);
  console.log(
    `Peers side by side: ${events} events per run, ${rounds} interleaved rounds ` +
      `(${IMPLEMENTATIONS.join(", ")}; medians), Weir local mode, exactly-once, checkpoint ` +
      `every 1000 ms; load average ${await loadAverage()}`,
  );
  const results: PeerQueryResult[] = [];
  for (const query of queries) results.push(await runPeerQuery({ query, events, rounds }));
  console.log(`load average after: ${await loadAverage()}`);
  console.log(peersTable(results));
  for (const r of results) console.log(resultLine(peerResultFields(r)));
}

if (import.meta.main) await main();
