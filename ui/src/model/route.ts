/**
 * The dashboard's hash routes: `#/` (overview), `#/jobs/<jobId>` (the job's
 * graph), `#/jobs/<jobId>/checkpoints` and `#/jobs/<jobId>/exceptions`.
 * Pure: parsing and building the hash strings.
 *
 * @module
 */

/** A page of the dashboard. */
export type Route =
  | { readonly page: "overview" }
  | { readonly page: "job"; readonly jobId: string; readonly tab: JobTab }
  | { readonly page: "not-found"; readonly hash: string };

/** The tabs of a job page. */
export type JobTab = "graph" | "checkpoints" | "exceptions";

/**
 * The route of a `location.hash` (with or without its `#`). An empty hash
 * is the overview; anything unknown is `not-found`, naming the hash.
 * @example
 * ```ts
 * import { parseRoute } from "./route.ts";
 * parseRoute("#/jobs/abc/checkpoints"); // { page: "job", jobId: "abc", tab: "checkpoints" }
 * ```
 */
export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "");
  if (path === "" || path === "/") return { page: "overview" };
  const parts = path.replace(/^\//, "").replace(/\/$/, "").split("/");
  if (parts[0] === "jobs" && parts[1] !== undefined && parts[1] !== "") {
    const jobId = decodeURIComponent(parts[1]);
    if (parts.length === 2) return { page: "job", jobId, tab: "graph" };
    if (parts.length === 3 && (parts[2] === "checkpoints" || parts[2] === "exceptions")) {
      return { page: "job", jobId, tab: parts[2] };
    }
  }
  return { page: "not-found", hash };
}

/** The hash of a job page's tab: `#/jobs/<id>` for the graph, `#/jobs/<id>/<tab>` otherwise. */
export function jobHash(jobId: string, tab: JobTab = "graph"): string {
  const base = `#/jobs/${encodeURIComponent(jobId)}`;
  return tab === "graph" ? base : `${base}/${tab}`;
}
