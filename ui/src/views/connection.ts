/// <reference lib="dom" />
/**
 * What the whole page knows about its connection to the REST API, shared
 * with every poll through a Preact context: whether polling is paused (the
 * token prompt is open) and since when the API stopped answering after it
 * had answered (a local job's `--ui` server ends with the job). Polls pause
 * or back off ({@linkcode UNREACHABLE_POLL_MS}), error banners leave "no
 * answer" to the app's one banner, and job status badges say "last known".
 *
 * @module
 */

import { createContext } from "../deps.ts";

/** Polling interval (ms) while the API is unreachable: one try every 5 s instead of every second. */
export const UNREACHABLE_POLL_MS = 5000;

/** The page's connection state. */
export interface Connection {
  /** True while the token prompt is open: no poll sends a request. */
  readonly paused: boolean;
  /** Epoch ms of the first unanswered poll after the API had answered; undefined while it answers. */
  readonly unreachableSince: number | undefined;
}

/** The connection state the app provides; by default polling runs and the API answers. */
export const ConnectionContext = createContext<Connection>({
  paused: false,
  unreachableSince: undefined,
});
