/**
 * Checks that a REST answer has the fields a view reads before the view
 * reads them, so an answer of an unexpected shape (a proxy's page, another
 * server on the port, an older coordinator) shows as an error banner naming
 * the route and the field instead of breaking the page. Pure.
 *
 * @module
 */

/** The JSON kinds a field can be expected to have. */
export type JsonKind = "array" | "object" | "number" | "string" | "boolean";

/**
 * The fields an answer must have, by name; the name `""` stands for the
 * answer itself (e.g. `{ "": "array" }` for a metrics answer).
 */
export type AnswerShape = Readonly<Record<string, JsonKind>>;

/** The JSON kind of a value: `null` for null, `undefined` for a missing one. */
export function kindOf(value: unknown): JsonKind | "null" | "undefined" | "other" {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "array";
  const t = typeof value;
  return t === "object" || t === "number" || t === "string" || t === "boolean" ? t : "other";
}

/**
 * The first way `answer` differs from `shape`, as a message naming the
 * field, the kind expected and the kind found; `undefined` when it fits.
 * @example
 * ```ts
 * import { shapeMismatch } from "./answer_shape.ts";
 * shapeMismatch({ jobs: {} }, { jobs: "array" }); // "field 'jobs' is an object, not an array"
 * ```
 */
export function shapeMismatch(answer: unknown, shape: AnswerShape): string | undefined {
  for (const [field, kind] of Object.entries(shape)) {
    if (field === "") {
      const found = kindOf(answer);
      if (found !== kind) return `the answer is ${article(found)}, not ${article(kind)}`;
      continue;
    }
    if (kindOf(answer) !== "object") {
      return `the answer is ${article(kindOf(answer))}, not an object`;
    }
    const found = kindOf((answer as Record<string, unknown>)[field]);
    if (found === "undefined") return `field '${field}' is missing`;
    if (found !== kind) return `field '${field}' is ${article(found)}, not ${article(kind)}`;
  }
  return undefined;
}

function article(kind: string): string {
  if (kind === "null" || kind === "undefined") return kind;
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

/** The routes whose answers the dashboard checks, by a short name. */
export type ShapeName =
  | "overview"
  | "jobsOverview"
  | "taskManagers"
  | "job"
  | "vertex"
  | "backPressure"
  | "metrics"
  | "checkpoints"
  | "checkpointConfig"
  | "checkpoint"
  | "checkpointSubtasks"
  | "exceptions"
  | "trigger"
  | "savepoint";

/** The fields the dashboard reads of each route's answer. */
export const SHAPES: Readonly<Record<ShapeName, AnswerShape>> = {
  /** `GET /overview`. */
  overview: { taskmanagers: "number" },
  /** `GET /jobs/overview`. */
  jobsOverview: { jobs: "array" },
  /** `GET /taskmanagers`. */
  taskManagers: { taskmanagers: "array" },
  /** `GET /jobs/:jobid`. */
  job: { jid: "string", state: "string", vertices: "array" },
  /** `GET /jobs/:jobid/vertices/:vid`. */
  vertex: { subtasks: "array" },
  /** `GET /jobs/:jobid/vertices/:vid/backpressure`. */
  backPressure: { subtasks: "array" },
  /** `.../metrics`, `.../subtasks/metrics`, `.../watermarks`. */
  metrics: { "": "array" },
  /** `GET /jobs/:jobid/checkpoints`. */
  checkpoints: { counts: "object", latest: "object", history: "array" },
  /** `GET /jobs/:jobid/checkpoints/config`. */
  checkpointConfig: { "": "object" },
  /** `GET /jobs/:jobid/checkpoints/details/:cid`. */
  checkpoint: { id: "number", status: "string" },
  /** `GET /jobs/:jobid/checkpoints/details/:cid/subtasks/:vid`. */
  checkpointSubtasks: { subtasks: "array" },
  /** `GET /jobs/:jobid/exceptions`. */
  exceptions: { exceptionHistory: "object" },
  /** `POST /jobs/:jobid/savepoints` and `/stop`. */
  trigger: { "request-id": "string" },
  /** `GET /jobs/:jobid/savepoints/:triggerid`. */
  savepoint: { status: "object" },
};
