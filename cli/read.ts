/**
 * `weir read`: prints a JetStream stream's records as JSON lines, optionally
 * read-committed (see `connectors/jetstream/reader.ts`).
 *
 * @module
 */

import { type ReadCommandOptions, runReadCommand } from "../connectors/jetstream/reader.ts";
import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import type { ParseArgsOptionsConfig } from "node:util";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  NATS_HELP,
  NATS_OPTIONS,
  parseCommandArgs,
  positiveInt,
  requireNats,
  UsageError,
} from "./_args.ts";

/** The flags of `weir read` and `weir stream read`, as `parseArgs` options. */
export const READ_OPTIONS = {
  ...NATS_OPTIONS,
  stream: { type: "string" },
  from: { type: "string" },
  subject: { type: "string" },
  "txn-bucket": { type: "string" },
  committed: { type: "boolean" },
  follow: { type: "boolean" },
} as const satisfies ParseArgsOptionsConfig;

/** The parsed {@linkcode READ_OPTIONS} that choose what is read. */
export interface ReadFlags {
  /** `--from SEQ`: the first stream sequence. */
  readonly from?: string | undefined;
  /** `--subject F`: a subject filter. */
  readonly subject?: string | undefined;
  /** `--txn-bucket B`: the transactions' KV bucket. */
  readonly "txn-bucket"?: string | undefined;
  /** `--committed`: read committed only. */
  readonly committed?: boolean | undefined;
  /** `--follow`: go on reading new records. */
  readonly follow?: boolean | undefined;
}

/**
 * The reader options of `weir read` and `weir stream read`: stream
 * `stream` over `nats`, as `flags` say.
 * @throws {UsageError} when `--from` is not a positive integer.
 */
export function readOptionsOf(
  nats: NatsConnectionOptions,
  stream: string,
  flags: ReadFlags,
): ReadCommandOptions {
  return {
    nats,
    stream,
    committed: flags.committed ?? false,
    follow: flags.follow ?? false,
    ...(flags.from === undefined ? {} : { from: positiveInt(flags.from, "--from") }),
    ...(flags.subject === undefined ? {} : { filterSubject: flags.subject }),
    ...(flags["txn-bucket"] === undefined ? {} : { txnBucket: flags["txn-bucket"] }),
  };
}

/** `weir read`: a stream's records as JSON lines on stdout. */
export const readCommand: Command = {
  summary:
    `read          print a stream's records as JSON lines --stream S [--committed] [--from SEQ]
                [--subject F] [--txn-bucket B] [--follow]`,
  help: `usage: weir read --nats URL --stream S [--committed] [--from SEQ] [--subject F]
                 [--txn-bucket B] [--follow]

Prints stream S's records as JSON lines ({"seq","index","subject","value"}),
up to the stream's last message at start. --committed reads only what
transactional sinks committed (their transactions are in KV bucket B, default
the sinks' default bucket); --from starts at stream sequence SEQ; --subject
keeps messages of subject filter F; --follow goes on reading new records.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("read", args, READ_OPTIONS);
    atMostPositionals("read", positionals, 0, "no positional arguments");
    const nats = requireNats("read", args);
    if (values.stream === undefined) throw new UsageError("weir read needs --stream S");
    await runReadCommand(readOptionsOf(nats, values.stream, values), (line) => console.log(line));
    return 0;
  },
};
