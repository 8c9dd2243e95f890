/**
 * Garbage-collection pauses of the latency benchmark's worker processes,
 * from V8's `--trace-gc` lines (`bench/latency.ts --gc-trace` starts the
 * workers with `DENO_V8_FLAGS=--trace-gc`). Each line names its isolate
 * (`[pid:0x…]`): a worker process has its main isolate and one per slot
 * thread, and a pause stops only its own isolate.
 *
 * Pure: it parses text.
 *
 * @module
 */

/** The pauses of one isolate. */
export interface IsolatePauses {
  /** `<pid>:<isolate address>`. */
  readonly isolate: string;
  /** Pauses by kind (`Scavenge`, `Mark-Compact`, …), in ms, in order. */
  readonly pauses: Map<string, number[]>;
}

const LINE =
  /^\[(\d+:0x[0-9a-f]+)\]\s+\d+ ms: ([A-Za-z -]+?) [\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms/gm;

/**
 * The pauses in `traceOutput` (V8 `--trace-gc` lines mixed with anything
 * else, which is skipped), per isolate.
 */
export function parseGcTrace(traceOutput: string): IsolatePauses[] {
  const byIsolate = new Map<string, Map<string, number[]>>();
  for (const m of traceOutput.matchAll(LINE)) {
    let kinds = byIsolate.get(m[1]!);
    if (kinds === undefined) byIsolate.set(m[1]!, kinds = new Map());
    const kind = m[2]!.trim();
    let list = kinds.get(kind);
    if (list === undefined) kinds.set(kind, list = []);
    list.push(Number(m[3]));
  }
  return [...byIsolate].map(([isolate, pauses]) => ({ isolate, pauses }));
}

/**
 * One line per isolate that paused: per kind, the count, total, and max
 * pause in ms, and how many pauses exceeded `longMs`.
 */
export function describeGcPauses(isolates: readonly IsolatePauses[], longMs = 10): string {
  if (isolates.length === 0) return "GC: no --trace-gc lines";
  return isolates.map(({ isolate, pauses }) => {
    const kinds = [...pauses].map(([kind, ms]) => {
      const total = ms.reduce((a, b) => a + b, 0);
      const long = ms.filter((x) => x > longMs).length;
      return `${kind} ${ms.length}x, ${total.toFixed(0)} ms, max ${
        Math.max(...ms).toFixed(1)
      } ms, ${long} > ${longMs} ms`;
    });
    return `GC ${isolate}: ${kinds.join("; ")}`;
  }).join("\n  ");
}
