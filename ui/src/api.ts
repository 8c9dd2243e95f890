/// <reference lib="dom" />
/**
 * The dashboard's REST client: `GET`/`POST`/`PATCH` against the REST API
 * the page was served with (relative URLs, so a dashboard behind a path
 * prefix works), with the bearer token kept in `sessionStorage` when the
 * coordinator runs with `--rest-token`. A 401 answer tells the listeners
 * (the app shows its token prompt) and throws an {@linkcode ApiError}.
 *
 * Every request is tagged with the token it carried: a 401 tells the
 * listeners only when it answers a request sent with the token in use when
 * the answer arrives, so a late 401 to a request sent before the right token
 * was entered does not re-open the prompt; a success sent with the token in
 * use tells the {@linkcode onAuthorized} listeners (the prompt closes).
 *
 * @module
 */

import { ApiError, errorMessage } from "./model/api_error.ts";
import { type AnswerShape, shapeMismatch } from "./model/answer_shape.ts";

const TOKEN_KEY = "weir.restToken";

let unauthorizedListeners: (() => void)[] = [];
let authorizedListeners: (() => void)[] = [];

/** The token entered in this page, also when sessionStorage refuses to keep it. */
let memoryToken: string | undefined;

/** The token kept for this browser tab, if any. */
export function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Keeps `token` for this browser tab (sessionStorage); "" forgets it. */
export function storeToken(token: string): void {
  try {
    if (token === "") sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // storage refused (private mode): the token lives until the page reloads.
  }
  memoryToken = token === "" ? undefined : token;
}

/** Calls `listener` on every 401 answer; returns the function that unsubscribes it. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.push(listener);
  return () => {
    unauthorizedListeners = unauthorizedListeners.filter((l) => l !== listener);
  };
}

/**
 * Calls `listener` on every successful answer to a request sent with the
 * token in use (or none when none is in use); returns the function that
 * unsubscribes it.
 */
export function onAuthorized(listener: () => void): () => void {
  authorizedListeners.push(listener);
  return () => {
    authorizedListeners = authorizedListeners.filter((l) => l !== listener);
  };
}

/** The token requests carry now: the one entered in this page, else the tab's stored one. */
function tokenInUse(): string | undefined {
  return memoryToken ?? storedToken();
}

/**
 * Sends a request to the REST route `path` (e.g. `/jobs/overview`) and
 * parses its JSON answer, checking it has the fields `init.expect` names.
 * @throws {ApiError} on a non-2xx answer (message from `{"errors": [...]}`), no answer
 * (status 0), or an answer that is not JSON or lacks an expected field.
 */
export async function request<T>(
  path: string,
  init: {
    readonly method?: "GET" | "POST" | "PATCH";
    readonly body?: unknown;
    readonly expect?: AnswerShape;
  } = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const token = tokenInUse();
  if (token !== undefined) headers.Authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(init.body);
  }
  let res: Response;
  try {
    res = await fetch(path.replace(/^\//, ""), {
      method: init.method ?? "GET",
      headers,
      ...(body === undefined ? {} : { body }),
      cache: "no-store",
    });
  } catch (e) {
    throw new ApiError(0, path, e instanceof Error ? e.message : String(e));
  }
  const text = await res.text();
  // Only an answer to the token in use says anything about it.
  const current = token === tokenInUse();
  if (!res.ok) {
    if (res.status === 401 && current) { for (const l of unauthorizedListeners) l(); }
    throw new ApiError(res.status, path, errorMessage(res.status, text));
  }
  if (current) { for (const l of authorizedListeners) l(); }
  let answer: unknown = {};
  if (text !== "") {
    try {
      answer = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, path, `the answer is not JSON: ${text.slice(0, 120)}`);
    }
  }
  const mismatch = init.expect === undefined ? undefined : shapeMismatch(answer, init.expect);
  if (mismatch !== undefined) {
    throw new ApiError(res.status, path, `unexpected answer: ${mismatch}`);
  }
  return answer as T;
}
