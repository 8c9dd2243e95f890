/**
 * Test support for the dashboard's DOM tests (`app_test.ts`): a Happy DOM
 * window installed as the page's globals (`window`, `document`, ...), a
 * canvas 2D context that draws nothing (Happy DOM has none; uPlot needs
 * one), a fake REST API answering `fetch` from a route table, and waits on
 * the DOM. The views run unchanged; only the browser is simulated, so these
 * tests check the DOM contract (`data-testid`s and their attributes) and
 * the request flow, not the looks (the browser test,
 * `tests/dashboard_browser_test.ts`, runs Chromium against a real cluster).
 *
 * @module
 */

import { Window } from "npm:happy-dom@21.0.4";

/** A request the fake API received. */
export interface SeenRequest {
  /** `GET`, `POST` or `PATCH`. */
  readonly method: string;
  /** The route with its query, e.g. `/jobs/overview`. */
  readonly path: string;
  /** The `Authorization` header, if sent. */
  readonly authorization: string | null;
  /** The JSON body, if any. */
  readonly body: unknown;
}

/** An answer of the fake API: a status and a JSON body. */
export interface FakeAnswer {
  /** HTTP status. */
  readonly status: number;
  /** Sent as JSON. */
  readonly body: unknown;
}

/**
 * Answers a request (route without the leading `/`'s host part); `undefined`
 * answers 404; a promise answers when it settles (a slow request); a throw or
 * a rejection is the network failing (`fetch` rejects, as with no server).
 */
export type FakeRoutes = (request: SeenRequest) => FakeAnswer | unknown | undefined;

/** The simulated browser: the window, the requests seen and a way to close it. */
export interface FakeBrowser {
  /** The Happy DOM window, also installed as `globalThis.window`. */
  readonly window: Window;
  /** Every request the page sent, in order. */
  readonly requests: SeenRequest[];
  /** Replaces the route table. */
  setRoutes(routes: FakeRoutes): void;
  /** Restores the globals and closes the window. */
  close(): Promise<void>;
}

const GLOBALS = [
  "window",
  "document",
  "location",
  "navigator",
  "HTMLElement",
  "HTMLInputElement",
  "Element",
  "Node",
  "CustomEvent",
  "SVGElement",
  "ResizeObserver",
  "matchMedia",
  "getComputedStyle",
  "requestAnimationFrame",
  "cancelAnimationFrame",
  "devicePixelRatio",
  "fetch",
  "Path2D",
] as const;

/**
 * Installs a fake browser at `url` whose `fetch` answers from `routes`
 * (a plain value answers 200 with it as JSON; a {@linkcode FakeAnswer}
 * its status and body; `undefined` 404 `{"errors": ["Not found: <path>"]}`;
 * a promise when it settles; a throw rejects the `fetch`).
 * Call it before importing the views (uPlot reads `window` on import).
 */
export function installFakeBrowser(url: string, routes: FakeRoutes): FakeBrowser {
  const win = new Window({ url, width: 1400, height: 900 });
  const saved = new Map<string, PropertyDescriptor | undefined>();
  const g = globalThis as Record<string, unknown>;
  const w = win as unknown as Record<string, unknown>;
  const requests: SeenRequest[] = [];
  let table = routes;
  for (const name of GLOBALS) saved.set(name, Object.getOwnPropertyDescriptor(globalThis, name));
  const define = (name: string, value: unknown) =>
    Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  for (const name of GLOBALS) {
    if (name === "fetch" || name === "window" || name === "Path2D") continue;
    const v = w[name];
    define(name, typeof v === "function" && !/^[A-Z]/.test(name) ? v.bind(win) : v);
  }
  define("window", win);
  define("requestAnimationFrame", (cb: (t: number) => void) => setTimeout(() => cb(Date.now()), 0));
  define("cancelAnimationFrame", (id: number) => clearTimeout(id));
  define("devicePixelRatio", 1);
  // A 2D context that draws nothing and measures text as 6 px a character.
  const noop: unknown = new Proxy(function () {}, {
    get: (_t, p) => p === "measureText" ? (s: string) => ({ width: s.length * 6 }) : noop,
    apply: () => noop,
    set: () => true,
  });
  (w.HTMLCanvasElement as { prototype: { getContext: unknown } }).prototype.getContext = () => noop;
  // uPlot builds its paths as Path2D objects; these record nothing.
  define("Path2D", function Path2D() {
    return noop;
  });
  define("fetch", async (input: string, init: RequestInit = {}) => {
    const path = `/${String(input).replace(/^\//, "")}`;
    const headers = new Headers(init.headers);
    const request: SeenRequest = {
      method: init.method ?? "GET",
      path,
      authorization: headers.get("Authorization"),
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined,
    };
    requests.push(request);
    const answer = await table(request);
    const { status, body } = answer === undefined
      ? { status: 404, body: { errors: [`Not found: ${path}`] } }
      : isAnswer(answer)
      ? answer
      : { status: 200, body: answer };
    return new Response(JSON.stringify(body), {
      status,
      headers: { "Content-Type": "application/json" },
    });
  });
  g.__fakeBrowser = true;
  return {
    window: win,
    requests,
    setRoutes: (r) => {
      table = r;
    },
    close: async () => {
      for (const [name, d] of saved) {
        if (d === undefined) delete g[name];
        else Object.defineProperty(globalThis, name, d);
      }
      delete g.__fakeBrowser;
      await win.happyDOM.abort();
      await win.happyDOM.close();
    },
  };
}

function isAnswer(x: unknown): x is FakeAnswer {
  return typeof x === "object" && x !== null && "status" in x && "body" in x &&
    Object.keys(x).length === 2;
}

/**
 * Waits until `check` answers a truthy value (checked every 20 ms).
 * @throws {Error} after `timeoutMs` with `what` and the page's text.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false,
  timeoutMs = 5000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  const text = (globalThis as unknown as { document?: Document }).document?.body?.textContent ?? "";
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the page shows: ${text}`);
}
