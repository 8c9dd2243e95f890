/**
 * The progress of a job action the dashboard started (cancel, trigger a
 * savepoint, stop with a savepoint) as the text it shows in
 * `[data-testid="action-progress"]`. Pure: the answers of
 * `GET /jobs/:jobid/savepoints/:triggerid` (Flink's
 * `AsynchronousOperationResult`) in, a phase out.
 *
 * @module
 */

import type { SavepointStatus } from "./api_types.ts";

/** The actions of the job page (Flink's web UI: Cancel Job, Trigger Savepoint, Stop). */
export type JobAction = "cancel" | "savepoint" | "stop";

/** Where an action stands: running (poll again), done with its text, or failed. */
export type ActionPhase =
  | { readonly kind: "running"; readonly text: string }
  | { readonly kind: "done"; readonly text: string }
  | { readonly kind: "failed"; readonly text: string };

/** The phase right after the request was sent. */
export function startedPhase(action: JobAction): ActionPhase {
  return {
    kind: "running",
    text: action === "cancel"
      ? "Cancelling…"
      : action === "savepoint"
      ? "Savepoint in progress…"
      : "Stopping with savepoint…",
  };
}

/**
 * The phase of a savepoint or stop operation from its status: in progress,
 * completed with a location (`Savepoint completed: <path>`), or completed
 * with a failure cause (`Failed: <cause>`).
 * @example
 * ```ts
 * import { savepointPhase } from "./operation.ts";
 * savepointPhase("savepoint", { status: { id: "COMPLETED" }, operation: { location: "s/1" } }).text;
 * // "Savepoint completed: s/1"
 * ```
 */
export function savepointPhase(action: "savepoint" | "stop", s: SavepointStatus): ActionPhase {
  if (s.status.id !== "COMPLETED") return startedPhase(action);
  const failure = s.operation?.["failure-cause"];
  if (failure !== undefined) {
    const trace = failure["stack-trace"] ?? "";
    const first = trace.split("\n")[0] ?? "";
    return { kind: "failed", text: `Failed: ${first || failure.class || "unknown cause"}` };
  }
  const where = s.operation?.location ?? "(no location reported)";
  return {
    kind: "done",
    text: action === "stop" ? `Stopped with savepoint: ${where}` : `Savepoint completed: ${where}`,
  };
}

/** The phase of a cancel from the job's state: done once it is `CANCELED` or otherwise ended. */
export function cancelPhase(jobState: string): ActionPhase {
  if (jobState === "CANCELED") return { kind: "done", text: "Job cancelled" };
  if (jobState === "FINISHED" || jobState === "FAILED") {
    return { kind: "done", text: `Job ended ${jobState} before the cancel took effect` };
  }
  return startedPhase("cancel");
}

/** The phase of a request refused or failed (`Failed: <message>`). */
export function failedPhase(message: string): ActionPhase {
  return { kind: "failed", text: `Failed: ${message}` };
}

/** The confirmation question of an action. */
export function confirmQuestion(action: JobAction, jobName: string): string {
  return action === "cancel"
    ? `Cancel job "${jobName}"? Its subtasks stop without a savepoint.`
    : action === "savepoint"
    ? `Trigger a savepoint of job "${jobName}"? The job keeps running.`
    : `Stop job "${jobName}" with a final savepoint? It ends FINISHED.`;
}
