/**
 * How many inputs each fuzz test draws: `WEIR_FUZZ_RUNS` when set (the
 * `deno task fuzz` run sets 100 000), else a small default for
 * `deno task test`. Fuzz tests are named `… fuzz …` and live in
 * `*_fuzz_test.ts` files beside the decoder they fuzz.
 *
 * @module
 */

/** The number of inputs per fuzz property (Fast-check's `numRuns`).
 * @param defaultRuns used when `WEIR_FUZZ_RUNS` is unset (default 1000).
 * @throws {RangeError} when `WEIR_FUZZ_RUNS` is not a positive integer.
 */
export function fuzzRuns(defaultRuns = 1000): number {
  const raw = Deno.env.get("WEIR_FUZZ_RUNS");
  if (raw === undefined) return defaultRuns;
  const runs = Number(raw);
  if (!Number.isSafeInteger(runs) || runs < 1) {
    throw new RangeError(`WEIR_FUZZ_RUNS must be a positive integer: current value is '${raw}'`);
  }
  return runs;
}
