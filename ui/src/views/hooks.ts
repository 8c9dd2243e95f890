/// <reference lib="dom" />
/**
 * Hooks shared by the views: polling a REST route every second (the
 * dashboard's live updates, no page reload) and the current hash route.
 *
 * @module
 */

import { useContext, useEffect, useRef, useState } from "../deps.ts";
import { parseRoute, type Route } from "../model/route.ts";
import { ConnectionContext, UNREACHABLE_POLL_MS } from "./connection.ts";

/** The dashboard's polling interval (ms): Flink's web UI refreshes every few seconds; Weir's every second. */
export const POLL_MS = 1000;

/** What a poll knows: the latest answer, the latest error (cleared by a success) and when it last answered. */
export interface Polled<T> {
  /** The latest successful answer; kept while later calls fail. */
  readonly data: T | undefined;
  /** The latest call's error; undefined after a success. */
  readonly error: unknown;
  /** Epoch ms of the latest answer (success or error), 0 before the first. */
  readonly at: number;
}

/**
 * Calls `load` now and then every `intervalMs` after each call ends (calls
 * never overlap), keeping the latest answer and error. A change of `key`
 * starts over with nothing known; `key` `null` stops polling. Follows the
 * page's {@linkcode ConnectionContext}: no calls while it is paused (the
 * token prompt is open; what is known stays), and one call every
 * {@linkcode UNREACHABLE_POLL_MS} while the API is unreachable.
 */
export function usePoll<T>(
  key: string | null,
  load: () => Promise<T>,
  intervalMs: number = POLL_MS,
): Polled<T> {
  const connection = useContext(ConnectionContext);
  const paused = connection.paused;
  const every = connection.unreachableSince === undefined
    ? intervalMs
    : Math.max(intervalMs, UNREACHABLE_POLL_MS);
  const [state, setState] = useState<Polled<T>>({ data: undefined, error: undefined, at: 0 });
  const loadRef = useRef(load);
  loadRef.current = load;
  const lastKey = useRef<string | null | undefined>(undefined);
  useEffect(() => {
    const sameKey = lastKey.current === key;
    lastKey.current = key;
    if (!sameKey) setState({ data: undefined, error: undefined, at: 0 });
    if (key === null || paused) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const data = await loadRef.current();
        if (!stopped) setState({ data, error: undefined, at: Date.now() });
      } catch (error) {
        if (!stopped) setState((s) => ({ data: s.data, error, at: Date.now() }));
      }
      if (!stopped) timer = setTimeout(tick, every);
    };
    // Same key, new pace (backing off or back from it): the next call after one interval.
    if (sameKey && state.at !== 0) timer = setTimeout(tick, every);
    else tick();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [key, every, paused]);
  return state;
}

/** The route of `location.hash`, updated on `hashchange`. */
export function useRoute(): Route {
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    globalThis.addEventListener("hashchange", on);
    return () => globalThis.removeEventListener("hashchange", on);
  }, []);
  return route;
}

/** The current time (epoch ms), refreshed every `intervalMs` (for uptimes and heartbeat ages). */
export function useNow(intervalMs: number = POLL_MS): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(t);
  }, [intervalMs]);
  return now;
}
