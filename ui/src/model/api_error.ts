/**
 * Errors of REST calls as the dashboard reports them. The REST API answers
 * errors in Flink's shape `{"errors": ["message", ...]}`; a body in another
 * shape (a proxy's HTML page, plain text) is shown trimmed. Pure.
 *
 * @module
 */

/**
 * A REST call that did not answer 2xx: the HTTP status, the route and the
 * message taken from the body. `status` 0 is a network failure (the
 * coordinator is down or unreachable).
 */
export class ApiError extends Error {
  /** The HTTP status, 0 when the request did not get an answer. */
  readonly status: number;
  /** The route asked, e.g. `/jobs/overview`. */
  readonly path: string;
  /**
   * An error answer (or no answer) of route `path`.
   * @param status the HTTP status (0: no answer)
   * @param path the route asked
   * @param message the reason, from the answer's body
   */
  constructor(status: number, path: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.path = path;
  }
}

/**
 * The message of an error answer: the `errors` of Flink's error shape
 * joined with "; ", else the body's text (at most 300 characters), else
 * the HTTP status.
 * @example
 * ```ts
 * import { errorMessage } from "./api_error.ts";
 * errorMessage(404, '{"errors": ["Job abc not found"]}'); // "Job abc not found"
 * ```
 */
export function errorMessage(status: number, body: string): string {
  try {
    const json: unknown = JSON.parse(body);
    if (typeof json === "object" && json !== null && "errors" in json) {
      const errors = (json as { errors: unknown }).errors;
      if (Array.isArray(errors) && errors.length > 0) {
        return errors.map((e) => typeof e === "string" ? e : JSON.stringify(e)).join("; ");
      }
    }
  } catch {
    // not JSON: fall through to the text.
  }
  const text = body.trim().replace(/\s+/g, " ");
  if (text !== "") return text.length > 300 ? `${text.slice(0, 300)}…` : text;
  return `HTTP ${status}`;
}

/** The banner text of an error: `<message> (HTTP <status> on <path>)`, or a network failure. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) {
    return e.status === 0
      ? `Cannot reach the coordinator (${e.path}): ${e.message}`
      : `${e.message} (HTTP ${e.status} on ${e.path})`;
  }
  return e instanceof Error ? e.message : String(e);
}
