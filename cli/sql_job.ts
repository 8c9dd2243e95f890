/**
 * A SQL script as a job module, for `weir sql` on a cluster: the client
 * starts `deno run -A cli/sql_job.ts --script <base64url> [-p N] --nats URL`,
 * and each worker's slot thread imports this same module with the same
 * arguments, re-plans the same script and so rebuilds the same JobGraph
 * (planning is deterministic: the same text, the same connectors, the same
 * uids), as every Weir job module does (DESIGN §4, code distribution).
 *
 * The script holds the statements that set the job up (`CREATE TABLE`,
 * `CREATE VIEW`, `SET`, rows of `values` tables) and exactly **one** job
 * statement (`INSERT INTO`, or a `SELECT` whose changes go back to the
 * client on `--result-subject`, see `_sql_remote_result.ts`), since a slot thread rebuilds
 * the graph of the first `execute()` it meets; `weir sql` cuts a longer
 * script into one such job per job statement. The script travels in the
 * arguments, as UTF-8 in base64url, so a worker on another host needs no
 * copy of the user's file.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { StreamExecutionEnvironment, StreamTableEnvironment } from "../mod.ts";
import { TABLE_CONNECTOR_FACTORIES } from "../connectors/table.ts";
import { natsOptionsFromArgs } from "../runtime/actor/nats_connect.ts";
import { natsResultSink } from "./_sql_remote_result.ts";

/** A script as the `--script` argument: its UTF-8 bytes in base64url, without padding. */
export function encodeScript(script: string): string {
  const bytes = new TextEncoder().encode(script);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * The script of a `--script` argument.
 * @throws {TypeError} when the argument is not base64url of UTF-8 text.
 */
export function decodeScript(encoded: string): string {
  if (!/^[A-Za-z0-9_-]*$/.test(encoded)) {
    throw new TypeError(
      `--script must be base64url (A-Z, a-z, 0-9, '-', '_'): current value starts ${
        JSON.stringify(encoded.slice(0, 20))
      }`,
    );
  }
  const binary = atob(encoded.replaceAll("-", "+").replaceAll("_", "/"));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}

/**
 * The job module's arguments for `script`.
 * @param script the setup statements and one job statement.
 * @param parallelism the jobs' default parallelism, if given.
 * @param resultSubject for a SELECT: the core NATS subject its changes are
 *   published on for the client (`_sql_remote_result.ts`).
 */
export function sqlJobArgs(
  script: string,
  parallelism?: number,
  resultSubject?: string,
): string[] {
  return [
    "--script",
    encodeScript(script),
    ...(parallelism === undefined ? [] : ["-p", String(parallelism)]),
    ...(resultSubject === undefined ? [] : ["--result-subject", resultSubject]),
  ];
}

/**
 * Runs (on the client) or rebuilds (on a slot thread) the job of a script
 * given as {@linkcode sqlJobArgs}.
 * @throws {TypeError} for missing or malformed arguments.
 * @throws {SqlParseError} and {@linkcode PlanningError} as `executeScript`.
 */
export async function runSqlJob(args: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      script: { type: "string" },
      p: { type: "string" },
      "result-subject": { type: "string" },
      nats: { type: "string" },
      "nats-user": { type: "string" },
      "nats-password": { type: "string" },
      "nats-token": { type: "string" },
      "nats-tls-ca": { type: "string" },
      "nats-tls-cert": { type: "string" },
      "nats-tls-key": { type: "string" },
    },
  });
  if (values.script === undefined) throw new TypeError("sql_job.ts needs --script <base64url>");
  const script = decodeScript(values.script);
  const parallelism = values.p === undefined ? undefined : Number(values.p);
  if (parallelism !== undefined && !(Number.isInteger(parallelism) && parallelism >= 1)) {
    throw new TypeError(`-p must be a positive integer: current value is ${values.p}`);
  }
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  if (parallelism !== undefined) env.setParallelism(parallelism);
  const tEnv = StreamTableEnvironment.create(env, { connectors: TABLE_CONNECTOR_FACTORIES });
  const subject = values["result-subject"];
  if (subject === undefined) {
    await tEnv.executeScript(script);
    return;
  }
  const connection = natsOptionsFromArgs(args, Deno.env);
  if (connection === undefined) throw new TypeError("--result-subject needs --nats URL");
  await tEnv.executeScript(script, {
    selectSink: () => natsResultSink(subject, connection),
  });
}

if (import.meta.main) await runSqlJob(Deno.args);
