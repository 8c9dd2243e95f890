/**
 * Test support for the benchmarks' smoke tests (`*_test.ts` beside each
 * benchmark): run a benchmark as `deno run` (or `deno bench`) in a child
 * process with tiny sizes, and check that it ended well and printed a
 * `RESULT` line whose figures parse. A benchmark fails (exit code 1) when
 * one of its own checks fails (a lost record, a wrong checksum), so a
 * passing smoke run means its checks ran and passed. Nothing is asserted on
 * timing.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { dirname } from "node:path";
import { parseResultFields } from "./_result.ts";

/** The repository's root directory. */
const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The shared NATS server (with JetStream) of the tests: `WEIR_TEST_NATS_URL`,
 * default (also when empty) `nats://127.0.0.1:4222`.
 */
export const TEST_NATS_URL: string = Deno.env.get("WEIR_TEST_NATS_URL") ||
  "nats://127.0.0.1:4222";

/** What a child `deno` process printed and how it ended. */
export interface BenchRun {
  /** Its exit code. */
  readonly code: number;
  /** stdout then stderr. */
  readonly output: string;
}

/**
 * Runs `deno <args...>` from the repository's root to its end.
 * @param env extra environment variables.
 */
export async function runBench(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<BenchRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd: ROOT,
    env,
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, output: text.decode(out.stdout) + text.decode(out.stderr) };
}

/**
 * The fields of `run`'s `RESULT` line, each of `numeric` a finite number.
 * @throws {Error} quoting the output when the run failed, printed no
 *   `RESULT` line, or a field of `numeric` is missing or not a finite number.
 */
export function expectResult(run: BenchRun, numeric: readonly string[]): Record<string, number> {
  if (run.code !== 0) throw new Error(`the benchmark exited with ${run.code}:\n${run.output}`);
  const fields = parseResultFields(run.output);
  const out: Record<string, number> = {};
  for (const name of numeric) {
    const value = Number(fields[name]);
    if (fields[name] === undefined || !Number.isFinite(value)) {
      throw new Error(
        `RESULT field ${name} is not a finite number: ${fields[name]}\n${run.output}`,
      );
    }
    out[name] = value;
  }
  return out;
}
