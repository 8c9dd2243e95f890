/**
 * The coordinator's REST API (Flink's `WebMonitorEndpoint` routes and JSON
 * shapes, where they fit Weir), served by Hono on `Deno.serve`. Every route
 * and body is specified in `runtime/cluster/rest/openapi.yaml`.
 *
 * | Method and path | Body |
 * |---|---|
 * | `GET /overview` | workers, slots, jobs by state |
 * | `GET /taskmanagers` | the live workers: slots, free slots, time since their last heartbeat |
 * | `GET /jobs`, `GET /jobs/overview` | job ids with states; one line per job |
 * | `GET /jobs/:jobid` | job details with vertices and the plan |
 * | `GET /jobs/:jobid/plan` | the plan: vertices with their inputs and ship strategies (`plan_view.ts`) |
 * | `PATCH /jobs/:jobid?mode=cancel` | cancels the job: `202 {}` |
 * | `GET /jobs/:jobid/exceptions` | its latest failure |
 * | `GET /jobs/:jobid/vertices/:vertexid` (and `/backpressure`, `/watermarks`, `/metrics`, `/subtasks/metrics`) | one vertex |
 * | `GET /jobs/:jobid/checkpoints` (and `/config`, `/details/:checkpointid`, `/details/:checkpointid/subtasks/:vertexid`) | checkpoint statistics |
 * | `POST /jobs/:jobid/savepoints`, `POST /jobs/:jobid/stop` | `202 {"request-id"}` |
 * | `GET /jobs/:jobid/savepoints/:triggerid` | the operation's status and savepoint path |
 * | `GET /metrics` | Prometheus text (`prometheus.ts`) |
 * | `GET /`, `GET /ui/<file>` | the web dashboard: `ui/dist/index.html` and its assets (`dashboard_assets.ts`) |
 *
 * Errors are Flink's `{"errors": ["…"]}` with 400 (bad input, naming the
 * parameter or field and its value), 404 (unknown job, vertex, checkpoint,
 * trigger or route; a trigger id of an earlier leader is named so:
 * {@linkcode unknownTrigger}), 409 (the job is not running) or 503 (the coordinator
 * is taking over the leadership). With a token, every API
 * route needs `Authorization: Bearer <token>` (401 otherwise, in the same
 * `{"errors": [...]}` shape with a `WWW-Authenticate: Bearer` challenge;
 * Hono's `bearerAuth`, which compares in constant time). The dashboard's
 * static files (`/` and `/ui/*`) need no token: they hold no data, and the
 * dashboard asks for the token once its API calls answer 401.
 *
 * @module
 */

import { type Context, Hono } from "npm:hono@4.13.19";
import { bearerAuth } from "npm:hono@4.13.19/bearer-auth";
import { CoordinatorNotReadyError, type RestBackend } from "./job_facts.ts";
import {
  aggregatedSubtaskMetricsView,
  backPressureView,
  exceptionsView,
  isEnded,
  jobDetailsView,
  jobsOverviewView,
  jobsView,
  overviewView,
  taskManagersView,
  vertexMetricsView,
  vertexView,
  watermarksView,
} from "./job_views.ts";
import {
  checkpointConfigView,
  checkpointDetailsView,
  checkpointSubtasksView,
  checkpointsView,
} from "./checkpoint_views.ts";
import { newTriggerId, SavepointTriggers, triggerEpoch } from "./savepoint_triggers.ts";
import { PrometheusMetrics } from "./prometheus.ts";
import { planView } from "./plan_view.ts";
import type { ClusterOverview } from "../cluster_protocol.ts";
import { type DashboardAsset, DashboardAssets, ifNoneMatchHits } from "./dashboard_assets.ts";
import { logger } from "../../log.ts";

const log = logger("rest");

/** The version `GET /overview` reports as `flink-version` (Weir's, from `deno.json`). */
export const WEIR_VERSION = "weir-0.1.0";

/** Options of {@linkcode createRestApp}. */
export interface RestAppOptions {
  /** The coordinator. */
  readonly backend: RestBackend;
  /** When set, every API route needs `Authorization: Bearer <token>` (the dashboard's files do not). */
  readonly token?: string | undefined;
  /**
   * The directory of the built dashboard (a URL, or a file path relative to
   * the working directory); default `ui/dist/` of the repository
   * (`DEFAULT_DASHBOARD_ROOT` of `dashboard_assets.ts`).
   */
  readonly dashboardRoot?: URL | string | undefined;
}

/** Options of {@linkcode RestServer.start}. */
export interface RestServerOptions extends RestAppOptions {
  /** TCP port; 0 picks a free one (read it from `port`). */
  readonly port: number;
  /** Interface to bind. Default `"0.0.0.0"` (all). */
  readonly hostname?: string | undefined;
}

/** A client error with its HTTP status (400, 404 or 409). */
class RestError extends Error {
  override name = "RestError";
  readonly status: 400 | 404 | 409;
  constructor(status: 400 | 404 | 409, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * Builds the Hono app of the REST API (without serving it).
 * @throws {RangeError} when `token` is given but empty.
 */
export function createRestApp(options: RestAppOptions): Hono {
  const { backend, token } = options;
  if (token !== undefined && token === "") {
    throw new RangeError("the REST API's bearer token must not be empty: current value is ''");
  }
  const triggers = new SavepointTriggers();
  const prometheus = new PrometheusMetrics(backend);
  const assets = new DashboardAssets(options.dashboardRoot);
  const app = new Hono();
  if (token !== undefined) {
    const auth = bearerAuth({ token });
    app.use("*", (c, next) => isDashboardPath(c.req.path) ? next() : auth(c, next));
  }

  const facts = (c: Context) => {
    const jobId = c.req.param("jobid")!;
    const f = backend.jobFacts(jobId);
    if (f === undefined) throw new RestError(404, `Job ${jobId} not found`);
    return f;
  };
  const found = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new RestError(404, what);
    return value;
  };
  const list = (c: Context, name: string) => {
    const v = c.req.query(name);
    return v === undefined ? undefined : v.split(",").map((s) => s.trim()).filter((s) => s);
  };

  /** The slots running jobs' subtasks are placed on. */
  const usedSlots = (overview: ClusterOverview) => {
    const used = new Set<string>();
    for (const j of overview.jobs) {
      if (isEnded(j.status)) continue;
      for (const slot of backend.jobFacts(j.jobId)?.placement.values() ?? []) used.add(slot);
    }
    return used;
  };

  app.get("/overview", (c) => {
    const overview = backend.overview();
    return c.json(overviewView(overview, usedSlots(overview), WEIR_VERSION));
  });
  app.get("/taskmanagers", (c) => {
    const overview = backend.overview();
    return c.json(taskManagersView(overview, usedSlots(overview)));
  });
  app.get("/jobs", (c) => c.json(jobsView(backend.overview())));
  app.get("/jobs/overview", (c) => {
    const all = backend.overview().jobs.map((j) => backend.jobFacts(j.jobId))
      .filter((f) => f !== undefined);
    return c.json(jobsOverviewView(all, Date.now()));
  });
  app.get("/jobs/:jobid", (c) => c.json(jobDetailsView(facts(c), Date.now())));
  app.get("/jobs/:jobid/plan", (c) => {
    const f = facts(c);
    return c.json({ plan: planView(f.status.jobId, f.graph) });
  });
  app.patch("/jobs/:jobid", (c) => {
    const f = facts(c);
    const mode = c.req.query("mode") ?? "cancel";
    if (mode !== "cancel") {
      throw new RestError(
        400,
        `query parameter 'mode' must be 'cancel' (stop with a savepoint is POST ` +
          `/jobs/:jobid/stop): current value is '${mode}'`,
      );
    }
    const reply = backend.cancelJob(f.status.jobId);
    if (!reply.ok) throw new RestError(409, reply.error);
    return c.json({}, 202);
  });
  app.get("/jobs/:jobid/exceptions", (c) => c.json(exceptionsView(facts(c))));
  app.get("/jobs/:jobid/vertices/:vertexid", (c) => {
    const id = c.req.param("vertexid");
    return c.json(found(vertexView(facts(c), id, Date.now()), `Vertex ${id} not found`));
  });
  app.get("/jobs/:jobid/vertices/:vertexid/backpressure", (c) => {
    const id = c.req.param("vertexid");
    return c.json(found(backPressureView(facts(c), id, Date.now()), `Vertex ${id} not found`));
  });
  app.get("/jobs/:jobid/vertices/:vertexid/watermarks", (c) => {
    const id = c.req.param("vertexid");
    return c.json(found(watermarksView(facts(c), id), `Vertex ${id} not found`));
  });
  app.get("/jobs/:jobid/vertices/:vertexid/metrics", (c) => {
    const id = c.req.param("vertexid");
    return c.json(
      found(vertexMetricsView(facts(c), id, list(c, "get")), `Vertex ${id} not found`),
    );
  });
  app.get("/jobs/:jobid/vertices/:vertexid/subtasks/metrics", (c) => {
    const id = c.req.param("vertexid");
    const agg = list(c, "agg");
    const bad = agg?.find((a) => !["min", "max", "avg", "sum"].includes(a));
    if (bad !== undefined) {
      throw new RestError(
        400,
        `query parameter 'agg' takes min, max, avg, sum: current value has '${bad}'`,
      );
    }
    return c.json(
      found(
        aggregatedSubtaskMetricsView(facts(c), id, list(c, "get"), agg),
        `Vertex ${id} not found`,
      ),
    );
  });
  app.get("/jobs/:jobid/checkpoints", (c) => c.json(checkpointsView(facts(c))));
  app.get("/jobs/:jobid/checkpoints/config", (c) => c.json(checkpointConfigView(facts(c))));
  app.get("/jobs/:jobid/checkpoints/details/:checkpointid", (c) => {
    const id = checkpointIdOf(c);
    return c.json(
      found(checkpointDetailsView(facts(c), id), `Checkpoint ${id} not found (or no longer kept)`),
    );
  });
  app.get("/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid", (c) => {
    const id = checkpointIdOf(c);
    const vertex = c.req.param("vertexid");
    return c.json(
      found(
        checkpointSubtasksView(facts(c), id, vertex),
        `Checkpoint ${id} or vertex ${vertex} not found`,
      ),
    );
  });
  app.post("/jobs/:jobid/savepoints", async (c) => {
    const f = facts(c);
    const body = await jsonBody(c, ["target-directory", "cancel-job", "formatType"]);
    if (body["cancel-job"] !== undefined && body["cancel-job"] !== false) {
      throw new RestError(
        400,
        `field 'cancel-job' is not supported (stop the job with a savepoint with POST ` +
          `/jobs/:jobid/stop): current value is ${JSON.stringify(body["cancel-job"])}`,
      );
    }
    checkFormat(body.formatType);
    const directory = optionalString(body, "target-directory");
    return c.json(trigger(f.status.jobId, f.status.status, { directory, stop: false }), 202);
  });
  app.post("/jobs/:jobid/stop", async (c) => {
    const f = facts(c);
    const body = await jsonBody(c, ["targetDirectory", "drain", "formatType"]);
    if (body.drain !== undefined && typeof body.drain !== "boolean") {
      throw new RestError(
        400,
        `field 'drain' must be a boolean: current value is ${JSON.stringify(body.drain)}`,
      );
    }
    checkFormat(body.formatType);
    const directory = optionalString(body, "targetDirectory");
    const drain = body.drain === true;
    return c.json(trigger(f.status.jobId, f.status.status, { directory, stop: true, drain }), 202);
  });
  app.get("/jobs/:jobid/savepoints/:triggerid", (c) => {
    const jobId = c.req.param("jobid")!;
    const id = c.req.param("triggerid")!;
    const live = triggers.status(jobId, id);
    if (live !== undefined) return c.json(live);
    // Completed savepoints are in the job store, also those of an earlier leader.
    const location = backend.savepointLocation?.(jobId, id);
    if (location !== undefined) {
      return c.json({ status: { id: "COMPLETED" }, operation: { location } });
    }
    throw new RestError(404, unknownTrigger(jobId, id, backend.leaderEpoch?.() ?? 0));
  });
  app.get("/metrics", async (c) => {
    const text = await prometheus.scrape();
    return c.body(text, 200, { "Content-Type": prometheus.contentType });
  });

  app.get("/", async (c) => {
    const index = await assets.get("index.html");
    if (index === undefined) {
      throw new RestError(
        404,
        `The dashboard is not built: ${new URL("index.html", assets.root).href} is missing; ` +
          `build it with 'deno task ui:build' (the REST API answers meanwhile)`,
      );
    }
    return dashboardResponse(index, c.req.header("If-None-Match"));
  });
  app.get("/ui/:file{.+}", async (c) => {
    const name = c.req.param("file");
    const asset = await assets.get(name);
    if (asset === undefined) {
      const shown = name.length > 200 ? `${name.slice(0, 200)}… (${name.length} characters)` : name;
      throw new RestError(404, `Dashboard file ui/${shown} not found in ${assets.root.href}`);
    }
    return dashboardResponse(asset, c.req.header("If-None-Match"));
  });

  app.notFound((c) => c.json({ errors: [`Not found: ${c.req.method} ${c.req.path}`] }, 404));
  app.onError(async (error, c) => {
    if (error instanceof RestError) return c.json({ errors: [error.message] }, error.status);
    if (error instanceof CoordinatorNotReadyError) {
      // Retry-After (seconds): a takeover completes within a few; the dashboard polls anyway.
      return c.json({ errors: [error.message] }, 503, { "Retry-After": "1" });
    }
    // Hono's HTTPException (e.g. bearerAuth's 401) carries a plain-text
    // response: answered in Flink's error shape, its headers kept (the
    // WWW-Authenticate challenge).
    const res = (error as { getResponse?: () => Response }).getResponse?.();
    if (res !== undefined) {
      const text = (await res.text()).trim() || `HTTP ${res.status}`;
      const message = res.status === 401
        ? `${text}: send 'Authorization: Bearer <token>' with the token the coordinator was started with (--rest-token)`
        : text;
      const headers = new Headers(res.headers);
      headers.set("Content-Type", "application/json");
      return new Response(JSON.stringify({ errors: [message] }), { status: res.status, headers });
    }
    log.error(`REST ${c.req.method} ${c.req.path} failed: ${error.stack ?? error}`);
    return c.json({ errors: [`Internal server error: ${error.name}: ${error.message}`] }, 500);
  });

  function trigger(
    jobId: string,
    status: string,
    o: { directory: string | undefined; stop: boolean; drain?: boolean },
  ): { "request-id": string } {
    if (isEnded(status)) throw new RestError(409, `Job ${jobId} is ${status}`);
    const triggerId = newTriggerId(backend.leaderEpoch?.() ?? 0);
    const done = backend.savepoint({
      jobId,
      directory: o.directory,
      stop: o.stop,
      drain: o.drain ?? false,
      triggerId,
    });
    return { "request-id": triggers.start(jobId, done, triggerId) };
  }
  return app;
}

/**
 * Why savepoint operation `id` of job `jobId` is unknown: an id issued by an
 * earlier leader (its epoch below `currentEpoch`) is named as such, since
 * operations in progress live in a leader's memory only.
 */
export function unknownTrigger(jobId: string, id: string, currentEpoch: number): string {
  const epoch = triggerEpoch(id);
  if (epoch === undefined || epoch >= currentEpoch) {
    return `Savepoint operation ${id} of job ${jobId} not found`;
  }
  return `Savepoint operation ${id} of job ${jobId} was triggered under a previous leading ` +
    `coordinator (leader epoch ${epoch}; epoch ${currentEpoch} leads now), which kept its ` +
    `progress in memory only: it did not complete, or it completed without being recorded ` +
    `(a completed one is recorded in the job store and answered here). Trigger a new savepoint`;
}

/** Whether `path` is one of the dashboard's static files (served without a token). */
function isDashboardPath(path: string): boolean {
  return path === "/" || path.startsWith("/ui/");
}

/**
 * A dashboard file's response: `304` without a body when `ifNoneMatch`
 * names its ETag, else `200` with it; `no-cache` makes the browser
 * revalidate each time (the files change when the dashboard is rebuilt).
 */
function dashboardResponse(asset: DashboardAsset, ifNoneMatch: string | undefined): Response {
  const headers = {
    "Content-Type": asset.contentType,
    "Cache-Control": "no-cache",
    "ETag": asset.etag,
    "X-Content-Type-Options": "nosniff",
  };
  if (ifNoneMatchHits(ifNoneMatch, asset.etag)) return new Response(null, { status: 304, headers });
  // An explicit length, so HEAD (answered by Hono from GET without the body)
  // tells the file's size instead of 0.
  const length = String(asset.body.byteLength);
  return new Response(asset.body.slice(), { headers: { ...headers, "Content-Length": length } });
}

function checkpointIdOf(c: Context): number {
  const raw = c.req.param("checkpointid")!;
  const id = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(id)) {
    throw new RestError(
      400,
      `path parameter 'checkpointid' must be a non-negative integer: current value is '${raw}'`,
    );
  }
  return id;
}

/** The request's JSON object body (`{}` when empty); 400 for anything else or an unknown field. */
async function jsonBody(c: Context, fields: readonly string[]): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new RestError(400, `request body is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RestError(400, `request body must be a JSON object: current value is ${text}`);
  }
  const unknown = Object.keys(body).filter((k) => !fields.includes(k));
  if (unknown.length > 0) {
    throw new RestError(
      400,
      `request body has unknown field(s) ${unknown.map((k) => `'${k}'`).join(", ")}; ` +
        `known: ${fields.join(", ")}`,
    );
  }
  return body as Record<string, unknown>;
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") {
    throw new RestError(
      400,
      `field '${field}' must be a string: current value is ${JSON.stringify(v)}`,
    );
  }
  return v;
}

function checkFormat(format: unknown): void {
  if (format === undefined || format === "CANONICAL") return;
  throw new RestError(
    400,
    `field 'formatType' must be CANONICAL (Weir's only savepoint format): current value is ` +
      JSON.stringify(format),
  );
}

/** The REST API served on a TCP port (see the module docs). */
export class RestServer {
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  private constructor(server: Deno.HttpServer<Deno.NetAddr>) {
    this.#server = server;
  }

  /**
   * Binds the port and serves the REST API.
   * @throws {RangeError} when `port` is not an integer in 0..65535, or the token is empty.
   * @throws {Deno.errors.AddrInUse} when the port is taken.
   */
  static start(options: RestServerOptions): RestServer {
    const { port } = options;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new RangeError(
        `the REST port must be an integer from 0 to 65535: current value is ${port}`,
      );
    }
    const app = createRestApp(options);
    const server = Deno.serve(
      { hostname: options.hostname ?? "0.0.0.0", port, onListen() {} },
      app.fetch,
    );
    return new RestServer(server);
  }

  /** The bound port (the one picked, when started with port 0). */
  get port(): number {
    return this.#server.addr.port;
  }

  /** Stops serving; resolves once open connections closed. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }
}
