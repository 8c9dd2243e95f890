/**
 * The `weir resume` command line a client prints when its job ended without
 * finishing (failed, cancelled, interrupted with Ctrl-C), so the user can
 * copy it: Flink's client prints the job id; Weir prints the whole command
 * that restores the job's latest retained checkpoint.
 *
 * Pure text: no I/O. Arguments are quoted for a POSIX shell where needed;
 * secrets (NATS password, token) are never printed, only a placeholder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resumeCommand } from "./resume_command.ts";
 *
 * assert.equal(
 *   resumeCommand({ jobId: "count-1a2b3c4d", nats: { servers: "nats://h:4222" } }),
 *   "weir resume count-1a2b3c4d --nats nats://h:4222",
 * );
 * assert.equal(
 *   resumeCommand({
 *     jobId: "count-1a2b3c4d",
 *     module: "jobs/count.ts",
 *     args: ["--input", "my file.csv"],
 *     defaultParallelism: 2,
 *   }),
 *   "weir resume count-1a2b3c4d jobs/count.ts -p 2 -- --input 'my file.csv'",
 * );
 * ```
 *
 * @module
 */

import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnectionOptions } from "../actor/nats_connect.ts";

/** What {@linkcode resumeCommand} needs to know. */
export interface ResumeCommandFacts {
  /** The ended job's id. */
  readonly jobId: string;
  /**
   * The job module (a path or URL). Absent in cluster mode: the coordinator
   * keeps the job's module URL and arguments, and `weir resume` reads them.
   */
  readonly module?: string | undefined;
  /** The job module's own arguments (put after `--`); only with `module`. */
  readonly args?: readonly string[] | undefined;
  /** The default parallelism the run had from `weir run -p N`, if any. */
  readonly defaultParallelism?: number | undefined;
  /** The NATS connection of a cluster job; absent in local mode. */
  readonly nats?: NatsConnectionOptions | undefined;
}

/** Words a POSIX shell reads as themselves, unquoted. */
const PLAIN = /^[A-Za-z0-9_\-.,/:=@%+]+$/;

/** `word` quoted for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  if (PLAIN.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * A job module's URL as the user would type it: a `file:` URL as a path
 * relative to `cwd` when it is below it, else absolute; other URLs as they are.
 */
export function displayModule(moduleUrl: string, cwd: string): string {
  if (!moduleUrl.startsWith("file:")) return moduleUrl;
  const path = fileURLToPath(moduleUrl);
  const rel = relative(cwd, path);
  return rel !== "" && !rel.startsWith("..") && !rel.startsWith("/") ? rel : path;
}

/** The NATS flags of `nats`, secrets replaced by placeholders. */
export function natsFlags(nats: NatsConnectionOptions): string[] {
  const out = ["--nats", nats.servers];
  if (nats.user !== undefined) out.push("--nats-user", nats.user);
  if (nats.password !== undefined) out.push("--nats-password", "<password>");
  if (nats.token !== undefined) out.push("--nats-token", "<token>");
  if (nats.tls?.caFile !== undefined) out.push("--nats-tls-ca", nats.tls.caFile);
  if (nats.tls?.certFile !== undefined) out.push("--nats-tls-cert", nats.tls.certFile);
  if (nats.tls?.keyFile !== undefined) out.push("--nats-tls-key", nats.tls.keyFile);
  return out;
}

/**
 * The `weir resume` command that restores job `jobId`'s latest retained
 * checkpoint: `weir resume <jobId> [module] [-p N] [NATS flags] [-- args]`.
 */
export function resumeCommand(facts: ResumeCommandFacts): string {
  const words = ["weir", "resume", facts.jobId];
  if (facts.module !== undefined) words.push(facts.module);
  if (facts.defaultParallelism !== undefined) words.push("-p", String(facts.defaultParallelism));
  if (facts.nats !== undefined) words.push(...natsFlags(facts.nats));
  const args = facts.module !== undefined ? facts.args ?? [] : [];
  const line = words.map((w) => w.startsWith("<") ? w : shellQuote(w)).join(" ");
  return args.length === 0 ? line : `${line} -- ${args.map(shellQuote).join(" ")}`;
}
