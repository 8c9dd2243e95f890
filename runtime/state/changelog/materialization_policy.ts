/**
 * When a {@linkcode ChangelogKeyedStateBackend} materializes (FLIP-158's
 * periodic materialization, `state.backend.changelog.periodic-materialize.interval`,
 * plus a size trigger): a pure decision over the facts of one checkpoint's
 * synchronous part. Performs no I/O.
 *
 * A checkpoint either **appends** (references the current materialization
 * and every changelog segment since it, uploading only the new segment) or
 * **materializes** (uploads a full canonical snapshot of the inner backend,
 * after which older segments are no longer referenced). It materializes when
 *
 * 1. there is no valid chain to append to (after a restore at another
 *    key-group range, or from private handles that retention deletes with
 *    their checkpoint);
 * 2. `intervalMs` passed since the last materialization; or
 * 3. the segments since it exceed `maxChangelogRatio` × the
 *    materialization's size (so a restore replays at most that much), and
 *    at least `minChangelogBytes` (so a small state does not materialize at
 *    every checkpoint);
 *
 * and no materialization is in flight (a checkpoint taken meanwhile appends
 * to the old chain, which stays valid whatever happens to the new one).
 *
 * @module
 */

/** The materialization triggers. */
export interface MaterializationOptions {
  /** Materialize when this much time passed since the last one, ms; `Infinity` never by time. */
  readonly intervalMs: number;
  /** Materialize when changelog bytes > this × materialized bytes; `Infinity` never by size. */
  readonly maxChangelogRatio: number;
  /** The size trigger needs at least this many changelog bytes. */
  readonly minChangelogBytes: number;
}

/** Defaults: every 10 min (Flink's), or when the changelog outgrows the materialization, or 1 MiB on a small state. */
export const DEFAULT_MATERIALIZATION: MaterializationOptions = Object.freeze({
  intervalMs: 600_000,
  maxChangelogRatio: 1,
  minChangelogBytes: 1 << 20,
});

/** What the backend knows at a checkpoint's synchronous part. */
export interface MaterializationFacts {
  /** The backend's clock, ms. */
  readonly now: number;
  /** When the current materialization was captured (or the backend created / restored), ms. */
  readonly lastMaterializedAt: number;
  /** Bytes of the current materialization (0 for none: the empty state). */
  readonly materializedBytes: number;
  /** Bytes of the segments since it, this checkpoint's included. */
  readonly changelogBytes: number;
  /** Whether the chain (materialization + segments) can be referenced by this checkpoint. */
  readonly chainValid: boolean;
  /** Whether a materialization was captured and is still being written. */
  readonly inFlight: boolean;
}

/** The outcome: append a segment, or materialize (with why). */
export type MaterializationDecision =
  | { readonly action: "append" }
  | { readonly action: "materialize"; readonly reason: "no-valid-chain" | "interval" | "size" };

/**
 * Decides whether this checkpoint materializes (see the module docs).
 * @returns `materialize` with its reason, or `append`.
 */
export function decideMaterialization(
  facts: MaterializationFacts,
  options: MaterializationOptions,
): MaterializationDecision {
  if (!facts.chainValid) return { action: "materialize", reason: "no-valid-chain" };
  if (facts.inFlight) return { action: "append" };
  if (facts.now - facts.lastMaterializedAt >= options.intervalMs) {
    return { action: "materialize", reason: "interval" };
  }
  if (
    facts.changelogBytes >= options.minChangelogBytes &&
    facts.changelogBytes > options.maxChangelogRatio * facts.materializedBytes
  ) {
    return { action: "materialize", reason: "size" };
  }
  return { action: "append" };
}

/**
 * Checks materialization options given by a user.
 * @throws {RangeError} naming the option and its current value when
 * `intervalMs` or `minChangelogBytes` is not a number ≥ 0 or
 * `maxChangelogRatio` is not > 0.
 */
export function checkMaterializationOptions(options: Partial<MaterializationOptions>): void {
  for (const name of ["intervalMs", "minChangelogBytes"] as const) {
    const v = options[name];
    if (v !== undefined && !(typeof v === "number" && v >= 0)) {
      throw new RangeError(
        `Changelog materialization option '${name}' must be a number >= 0: current value is ${v}`,
      );
    }
  }
  const ratio = options.maxChangelogRatio;
  if (ratio !== undefined && !(typeof ratio === "number" && ratio > 0)) {
    throw new RangeError(
      `Changelog materialization option 'maxChangelogRatio' must be a number > 0: current value is ${ratio}`,
    );
  }
}
