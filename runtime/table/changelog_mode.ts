/**
 * Changelog modes: which kinds of change an operator's output may carry
 * (Flink's `ChangelogMode`, derived per operator by its planner's
 * `FlinkChangelogModeInferenceProgram`).
 *
 * - `append`: only `+I` (append-only; a source, a projection of an append
 *   stream, a window aggregate);
 * - `retract`: `+I`, `-U`, `+U`, `-D` (an update is a `-U`/`+U` pair);
 * - `upsert`: `+I`, `+U`, `-D` keyed by a unique key (no `-U`).
 *
 * ## Invariants
 *
 * - A stateless operator (projection, filter) has its input's mode.
 * - A non-windowed GROUP BY is updating (`retract`, or `upsert` when its
 *   sink asks for upserts) whatever its input's mode.
 * - A sink that accepts only `append` refuses an updating input at planning
 *   time, naming the operator that produces the updates
 *   ({@linkcode checkSinkMode}).
 *
 * @module
 */

/** Flink's `ChangelogMode`: `append` (`+I` only), `retract` (all four kinds) or `upsert` (no `-U`). */
export type ChangelogMode = "append" | "retract" | "upsert";

/** An error in a query found while it is planned: unsupported SQL, an unknown column, a mode mismatch. */
export class PlanningError extends Error {
  /** Always `"PlanningError"`. */
  override readonly name = "PlanningError";
}

/** The short names Flink's `EXPLAIN CHANGELOG_MODE` prints for a mode. */
export function changelogModeString(mode: ChangelogMode): string {
  switch (mode) {
    case "append":
      return "[I]";
    case "retract":
      return "[I,UB,UA,D]";
    case "upsert":
      return "[I,UA,D]";
  }
}

/** Whether a mode carries updates (anything but `append`). */
export function isUpdating(mode: ChangelogMode): boolean {
  return mode !== "append";
}

/**
 * Checks a sink's accepted mode against what its input produces.
 *
 * @param sink names the sink for the message (e.g. `toDataStream` or `print table 'out'`).
 * @param accepts what the sink accepts: `append` only, or updates too.
 * @param input the input's mode.
 * @param producer names the operator whose output first carries updates
 *   (from the plan), for the message.
 * @throws {PlanningError} when an append-only sink would get updates:
 *   `toDataStream doesn't support consuming update changes which is
 *   produced by node GroupAggregate(groupBy=[user], select=[user, COUNT(url) AS cnt])`.
 */
export function checkSinkMode(
  sink: string,
  accepts: "append" | "updates",
  input: ChangelogMode,
  producer: string | undefined,
): void {
  if (accepts === "append" && isUpdating(input)) {
    throw new PlanningError(
      `${sink} doesn't support consuming update changes which is produced by node ${
        producer ?? "(unknown)"
      }; use toChangelogStream or a sink that accepts updates`,
    );
  }
}
