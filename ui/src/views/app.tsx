/// <reference lib="dom" />
/** @jsx h */
/**
 * The dashboard's shell: the header (Weir and its version, the cluster's
 * workers and slots), the navigation, the token prompt on a 401 and the
 * page of the current hash route. Polls `/overview` every second.
 *
 * While the token prompt is open no poll sends a request. When the API
 * stops answering after it had answered (a local job's `--ui` server ends
 * with the job), the page keeps what it last knew, marks job states as last
 * known, shows one banner saying since when, and polls every 5 s
 * ({@linkcode UNREACHABLE_POLL_MS}) until the API answers again.
 *
 * @module
 */

import { h, useEffect, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { onAuthorized, onUnauthorized, request, storedToken, storeToken } from "../api.ts";
import { ApiError } from "../model/api_error.ts";
import { formatTime } from "../model/format.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type { ClusterOverview } from "../model/api_types.ts";
import { ErrorBanner } from "./common.tsx";
import { type Connection, ConnectionContext, UNREACHABLE_POLL_MS } from "./connection.ts";
import { POLL_MS, usePoll, useRoute } from "./hooks.ts";
import { JobPage } from "./job_page.tsx";
import { OverviewPage } from "./overview.tsx";
import { TokenPrompt } from "./token_prompt.tsx";

/** The whole dashboard. */
export function App(): VNode {
  const route = useRoute();
  const [needToken, setNeedToken] = useState(false);
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedToken(true)), []);
  useEffect(() => onAuthorized(() => setNeedToken(false)), []);
  const [lostAt, setLostAt] = useState<number | undefined>(undefined);
  const overview = usePoll(
    needToken ? null : `overview:${generation}`,
    () => request<ClusterOverview>("/overview", { expect: SHAPES.overview }),
    lostAt === undefined ? POLL_MS : UNREACHABLE_POLL_MS,
  );
  const o = overview.data;
  // Unreachable: no answer at all (status 0) after the API had answered.
  const unreachable = o !== undefined && overview.error instanceof ApiError &&
    overview.error.status === 0;
  useEffect(() => {
    if (unreachable && lostAt === undefined) setLostAt(overview.at);
    if (!unreachable && lostAt !== undefined) setLostAt(undefined);
  }, [unreachable, lostAt, overview.at]);
  const connection: Connection = { paused: needToken, unreachableSince: lostAt };
  return (
    <ConnectionContext.Provider value={connection}>
      <div class="app" key={generation}>
        <header class="top">
          <a href="#/" class="brand">
            <span class="brand-mark">≋</span> Weir
            <span class="version">{versionText(o?.["flink-version"])}</span>
          </a>
          <nav class="top-nav">
            <a href="#/" class={route.page === "overview" ? "active" : ""}>Overview</a>
          </nav>
          <div class="top-facts">
            {o !== undefined && (
              <span>
                {o.taskmanagers} worker{o.taskmanagers === 1 ? "" : "s"} · {o["slots-available"]} /
                {" "}
                {o["slots-total"]} slots free · {o["jobs-running"]} running
              </span>
            )}
            <span
              class={`live-dot${overview.error === undefined && o !== undefined ? " live" : ""}`}
              title="live updates every second"
            />
          </div>
        </header>
        <main class="main">
          {lostAt !== undefined && (
            <div class="banner banner-stale" role="status" data-testid="unreachable-banner">
              The coordinator stopped answering at {formatTime(lostAt)}{" "}
              (a local job's dashboard ends with the job). Showing the last known state; trying
              again every {UNREACHABLE_POLL_MS / 1000} s.
            </div>
          )}
          {route.page !== "job" && lostAt === undefined && <ErrorBanner error={overview.error} />}
          {route.page === "overview" && <OverviewPage overview={o} />}
          {route.page === "job" && <JobPage jobId={route.jobId} tab={route.tab} />}
          {route.page === "not-found" && (
            <div class="page">
              <div class="banner banner-error">
                No page at {route.hash}. <a href="#/">Back to the overview</a>
              </div>
            </div>
          )}
        </main>
        {needToken && (
          <TokenPrompt
            hadToken={storedToken() !== undefined}
            onSubmit={(token) => {
              storeToken(token);
              setNeedToken(false);
              setGeneration(generation + 1);
            }}
          />
        )}
      </div>
    </ConnectionContext.Provider>
  );
}

/** The version the header shows: `0.1.0` as `v0.1.0`, a named one (`weir-0.1.0`) as it is. */
function versionText(version: string | undefined): string {
  if (version === undefined || version === "") return "";
  return /^\d/.test(version) ? `v${version}` : version;
}
