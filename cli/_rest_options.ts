/**
 * The coordinator's REST API options (`--rest-port N`, `--rest-token T`)
 * and the endpoint they configure (`runtime/cluster/rest/`), for
 * `weir coordinator` (`servers.ts`).
 *
 * @module
 */

import type { ParseArgsOptionsConfig } from "node:util";
import type { RestBackend } from "../runtime/cluster/rest/job_facts.ts";
import {
  checkRestPort,
  DEFAULT_REST_PORT,
  LeaderRestEndpoint,
} from "../runtime/cluster/rest/leader_rest_endpoint.ts";
import { UsageError } from "./_args.ts";

/** The REST flags, as `parseArgs` options. */
export const REST_OPTIONS = {
  "rest-port": { type: "string" },
  "rest-token": { type: "string" },
} as const satisfies ParseArgsOptionsConfig;

/** The REST flags' paragraph of `weir coordinator --help`. */
export const REST_HELP =
  `REST API (Flink's routes; runtime/cluster/rest/openapi.yaml), served by the
leading coordinator only: --rest-port N (default ${DEFAULT_REST_PORT}; 0 picks a free
port, which is printed; a taken default port only turns the API off, with a
warning) and --rest-token T (every API request then needs 'Authorization:
Bearer T'). GET /metrics gives Prometheus metrics with Flink's names. The same
port serves the web dashboard (Flink's web UI) at http://<host>:N/; its page
needs no token and asks for it.`;

/**
 * Builds the REST endpoint from the parsed flags. An explicit `--rest-port`
 * must be free now.
 * @param leader the leading coordinator, `undefined` while not ready.
 * @throws {UsageError} for a port that is not an integer from 0 to 65535, or an empty token.
 * @throws {Error} when an explicit port cannot be bound.
 */
export function restEndpoint(
  values: { readonly "rest-port"?: string | undefined; readonly "rest-token"?: string | undefined },
  leader: () => RestBackend | undefined,
): LeaderRestEndpoint {
  const raw = values["rest-port"];
  const port = raw === undefined ? undefined : Number(raw);
  if (port !== undefined && (!/^[0-9]+$/.test(raw!) || port > 65535)) {
    throw new UsageError(
      `--rest-port must be an integer from 0 to 65535, got ${JSON.stringify(raw)}`,
    );
  }
  const token = values["rest-token"];
  if (token === "") throw new UsageError("--rest-token must not be empty");
  if (port !== undefined) checkRestPort(port);
  return new LeaderRestEndpoint({
    port,
    token,
    backend: leader,
    onListen: (bound) => console.error(`weir coordinator: REST API on port ${bound}`),
  });
}
