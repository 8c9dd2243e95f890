/**
 * `weir stream`: creates, lists, describes, deletes, fills and reads
 * JetStream streams, so everything Weir's docs ask of a stream can be done
 * with Deno and a NATS server alone (there is no `nats` CLI on many
 * machines). It uses the JetStream manager API of the NATS client Weir runs
 * on (`@nats-io/jetstream`).
 *
 *     weir stream add NAME --subjects a.b,c.> [--retention limits|workqueue|interest]
 *                     [--storage file|memory] [--max-age DURATION] [--max-bytes N]
 *                     [--max-msgs N] [--replicas N] [--discard old|new]
 *     weir stream ls [--json]
 *     weir stream info NAME [--json]
 *     weir stream rm NAME --force
 *     weir stream publish SUBJECT [DATA | --file F | --json-lines F] [--count N] [--header K:V]...
 *     weir stream load FILE --subject S [--format jsonl|msgpack] [--header K:V]...
 *     weir stream read NAME [--committed] [--from SEQ] [--subject F] [--txn-bucket B] [--follow]
 *
 * Each takes the NATS options of every `weir` command (`--nats URL` or
 * `WEIR_NATS_URL`, and the `--nats-*` flags; see `cli.ts`).
 *
 * ## Decisions
 *
 * - `add` of a stream that exists with the same configuration (on every
 *   field `add` sets) succeeds and says so, so a script can run it again;
 *   with another configuration it fails and lists the differences (it never
 *   changes an existing stream).
 * - `rm` deletes a stream and every message in it, and any job reading it
 *   then fails for good. The `nats` CLI asks before it does; `weir` asks for
 *   `--force` instead: without it, `rm` describes what would go and exits
 *   with 2, deleting nothing.
 * - `publish` and `load` wait for a JetStream acknowledgement of every
 *   message (see `_stream_publish.ts` for the window and the format).
 * - `read` is the reader of `connectors/jetstream/reader.ts` (also `weir
 *   read --stream NAME`): JSON lines `{"seq":…,"subject":…,"value":…}`.
 *
 * Exit codes (set by `cli.ts`): 0 success; 1 failure, one `error: …`
 * line on stderr naming what and where (an unknown stream, a bad line of a
 * file, a refused publish); 2 bad usage (a `UsageError`: an unknown
 * subcommand or option, a bad value, `rm` without `--force`).
 *
 * @example
 * ```ts ignore
 * import { runStreamCommand } from "./stream.ts";
 *
 * const lines: string[] = [];
 * await runStreamCommand(["ls", "--nats", "nats://127.0.0.1:4222"], {
 *   out: (line) => lines.push(line),
 *   err: (line) => console.error(line),
 * });
 * ```
 *
 * @module
 */

import {
  type Command,
  NATS_OPTIONS,
  parseCommandArgs,
  positiveInt,
  requireNats,
  UsageError,
} from "./_args.ts";
import { jetstreamApi, type NatsConnection } from "../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { runReadCommand } from "../connectors/jetstream/reader.ts";
import { READ_OPTIONS, readOptionsOf } from "./read.ts";
import { isStreamNotFound } from "../connectors/jetstream/stream_not_found.ts";
import {
  checkStreamName,
  configDifferences,
  formatBytes,
  formatStreamInfo,
  formatStreamList,
  streamConfigFromFlags,
} from "./_stream_config.ts";
import { STREAM_HELP, streamSubcommandHelp } from "./_stream_help.ts";
import {
  checkPublishSubject,
  LOAD_FORMATS,
  type LoadFormat,
  loadJsonLines,
  parseHeaderFlags,
  publishMessages,
} from "./_stream_publish.ts";

/** Where a subcommand writes: stdout and stderr lines, without line endings. */
export interface CommandOutput {
  /** Writes one line of results (stdout). */
  readonly out: (line: string) => void;
  /** Writes one line of notes (stderr). */
  readonly err: (line: string) => void;
}

/** The console as a {@linkcode CommandOutput}. */
const CONSOLE: CommandOutput = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/** What a subcommand gets. */
interface Invocation {
  /** The arguments after the subcommand's name. */
  readonly args: string[];
  /** Where to write. */
  readonly output: CommandOutput;
}

/** The one positional a subcommand takes, e.g. `NAME`. */
function onePositional(positionals: readonly string[], subcommand: string, what: string): string {
  if (positionals.length === 0) throw new UsageError(`weir stream ${subcommand} needs ${what}`);
  if (positionals.length > 1) {
    throw new UsageError(
      `weir stream ${subcommand} takes only ${what}; unexpected: ${
        JSON.stringify(positionals.slice(1))
      }`,
    );
  }
  return positionals[0]!;
}

/** Runs `body` on a fresh connection, closed afterwards. */
async function withNats<T>(
  nats: NatsConnectionOptions,
  body: (nc: NatsConnection) => Promise<T>,
): Promise<T> {
  const nc = await connectNats({ ...nats, name: "weir-stream" });
  try {
    return await body(nc);
  } finally {
    await nc.close();
  }
}

/** Stream `name`'s info, or an error naming it when it does not exist. */
async function streamInfo(
  jsm: jetstreamApi.JetStreamManager,
  name: string,
): Promise<jetstreamApi.StreamInfo> {
  try {
    return await jsm.streams.info(name);
  } catch (error) {
    if (isStreamNotFound(error)) {
      throw new Error(`stream ${name} not found ('weir stream ls' lists the streams)`, {
        cause: error,
      });
    }
    throw error;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const HEADER_OPTION = { header: { type: "string", multiple: true } } as const;

const SUBCOMMANDS: Readonly<Record<string, (inv: Invocation) => Promise<number>>> = {
  add: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream add", args, {
      ...NATS_OPTIONS,
      subjects: { type: "string" },
      retention: { type: "string" },
      storage: { type: "string" },
      "max-age": { type: "string" },
      "max-bytes": { type: "string" },
      "max-msgs": { type: "string" },
      replicas: { type: "string" },
      discard: { type: "string" },
    });
    const name = onePositional(positionals, "add", "a stream NAME");
    const config = streamConfigFromFlags(name, values);
    return await withNats(requireNats("stream add", args), async (nc) => {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      let existing: jetstreamApi.StreamInfo | undefined;
      try {
        existing = await jsm.streams.info(name);
      } catch (error) {
        if (!isStreamNotFound(error)) throw error;
      }
      if (existing !== undefined) {
        const differences = configDifferences(config, existing.config);
        if (differences.length > 0) {
          throw new Error(
            `stream ${name} exists with another configuration (nothing was changed): ${
              differences.join("; ")
            }`,
          );
        }
        output.out(
          `stream ${name} exists with this configuration (${existing.state.messages} messages)`,
        );
        return 0;
      }
      try {
        await jsm.streams.add({ ...config, subjects: [...config.subjects] });
      } catch (error) {
        throw new Error(
          `Cannot create stream ${name} (subjects ${config.subjects.join(",")}): ${
            errorText(error)
          }`,
          { cause: error },
        );
      }
      output.out(`created stream ${name} (subjects ${config.subjects.join(",")})`);
      return 0;
    });
  },

  ls: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream ls", args, {
      ...NATS_OPTIONS,
      json: { type: "boolean" },
    });
    if (positionals.length > 0) {
      throw new UsageError(
        `weir stream ls takes no arguments; unexpected: ${JSON.stringify(positionals)}`,
      );
    }
    return await withNats(requireNats("stream ls", args), async (nc) => {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      const infos: jetstreamApi.StreamInfo[] = [];
      for await (const info of jsm.streams.list()) infos.push(info);
      if (values.json) output.out(JSON.stringify(infos));
      else for (const line of formatStreamList(infos)) output.out(line);
      return 0;
    });
  },

  info: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream info", args, {
      ...NATS_OPTIONS,
      json: { type: "boolean" },
    });
    const name = checkStreamName(onePositional(positionals, "info", "a stream NAME"));
    return await withNats(requireNats("stream info", args), async (nc) => {
      const info = await streamInfo(await jetstreamApi.jetstreamManager(nc), name);
      if (values.json) output.out(JSON.stringify(info));
      else for (const line of formatStreamInfo(info)) output.out(line);
      return 0;
    });
  },

  rm: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream rm", args, {
      ...NATS_OPTIONS,
      force: { type: "boolean" },
    });
    const name = checkStreamName(onePositional(positionals, "rm", "a stream NAME"));
    return await withNats(requireNats("stream rm", args), async (nc) => {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      const info = await streamInfo(jsm, name);
      const what = `stream ${name} (subjects ${
        (info.config.subjects ?? []).join(",")
      }, ${info.state.messages} messages, ${formatBytes(info.state.bytes)})`;
      if (!values.force) {
        throw new UsageError(
          `weir stream rm deletes ${what} for good, and jobs reading it fail; ` +
            `nothing was deleted: run it again with --force to delete it`,
        );
      }
      try {
        await jsm.streams.delete(name);
      } catch (error) {
        if (isStreamNotFound(error)) {
          throw new Error(`stream ${name} not found (deleted meanwhile?)`, { cause: error });
        }
        throw error;
      }
      output.out(`deleted ${what}`);
      return 0;
    });
  },

  publish: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream publish", args, {
      ...NATS_OPTIONS,
      ...HEADER_OPTION,
      file: { type: "string" },
      "json-lines": { type: "string" },
      count: { type: "string" },
    });
    if (positionals.length === 0) throw new UsageError("weir stream publish needs a SUBJECT");
    if (positionals.length > 2) {
      throw new UsageError(
        `weir stream publish takes SUBJECT and at most one DATA (quote DATA that has spaces); unexpected: ${
          JSON.stringify(positionals.slice(2))
        }`,
      );
    }
    const subject = checkPublishSubject(positionals[0]!);
    const data = positionals[1];
    const file = values.file;
    const jsonLines = values["json-lines"];
    const sources = [data, file, jsonLines].filter((s) => s !== undefined).length;
    if (sources !== 1) {
      throw new UsageError(
        sources === 0
          ? "weir stream publish needs the payload: DATA, --file F or --json-lines F ('' publishes an empty payload)"
          : "weir stream publish takes one of DATA, --file F and --json-lines F",
      );
    }
    const headers = parseHeaderFlags(values.header ?? []);
    if (jsonLines !== undefined) {
      if (values.count !== undefined) {
        throw new UsageError("--count does not go with --json-lines (each line is one message)");
      }
      return await load(args, output, { path: jsonLines, subject, format: "jsonl", headers });
    }
    const count = positiveInt(values.count, "--count", 1);
    const nats = requireNats("stream publish", args);
    let payload: Uint8Array;
    if (file !== undefined) {
      try {
        payload = await Deno.readFile(file);
      } catch (error) {
        throw new Error(
          `Cannot read --file ${file}: ${
            error instanceof Deno.errors.NotFound ? "no such file" : errorText(error)
          }`,
          { cause: error },
        );
      }
    } else {
      payload = new TextEncoder().encode(data);
    }
    return await withNats(nats, async (nc) => {
      const totals = await publishMessages(nc, { subject, data: payload, count, headers });
      output.out(
        `published ${totals.count} message${totals.count === 1 ? "" : "s"} to ${subject} ` +
          `(stream ${totals.stream}), last sequence ${totals.lastSequence}`,
      );
      return 0;
    });
  },

  load: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream load", args, {
      ...NATS_OPTIONS,
      ...HEADER_OPTION,
      subject: { type: "string" },
      format: { type: "string" },
    });
    const path = onePositional(positionals, "load", "a FILE");
    if (values.subject === undefined) {
      throw new UsageError("weir stream load needs --subject S: the subject to publish to");
    }
    const subject = checkPublishSubject(values.subject);
    const format = values.format ?? "jsonl";
    if (!(LOAD_FORMATS as readonly string[]).includes(format)) {
      throw new UsageError(
        `--format must be one of ${LOAD_FORMATS.join(", ")}: current value is ${
          JSON.stringify(format)
        }`,
      );
    }
    const headers = parseHeaderFlags(values.header ?? []);
    return await load(args, output, {
      path,
      subject,
      format: format as LoadFormat,
      headers,
    });
  },

  read: async ({ args, output }) => {
    const { values, positionals } = parseCommandArgs("stream read", args, READ_OPTIONS);
    if (values.stream !== undefined && positionals.length > 0) {
      throw new UsageError("weir stream read takes the stream as NAME or --stream, not both");
    }
    const name = checkStreamName(
      values.stream ?? onePositional(positionals, "read", "a stream NAME"),
    );
    const nats = requireNats("stream read", args);
    const read = runReadCommand(readOptionsOf(nats, name, values), (line) => output.out(line));
    try {
      await read;
    } catch (error) {
      if (isStreamNotFound(error)) {
        throw new Error(`stream ${name} not found ('weir stream ls' lists the streams)`, {
          cause: error,
        });
      }
      throw error;
    }
    return 0;
  },
};

/** `load` (and `publish --json-lines`): checks, publishes, prints the totals. */
async function load(
  args: string[],
  output: CommandOutput,
  options: {
    readonly path: string;
    readonly subject: string;
    readonly format: LoadFormat;
    readonly headers: [string, string][];
  },
): Promise<number> {
  const nats = requireNats("stream load", args);
  return await withNats(nats, async (nc) => {
    const totals = await loadJsonLines(nc, options);
    if (totals.blankLines > 0) {
      output.err(`weir stream load: skipped ${totals.blankLines} blank lines of ${options.path}`);
    }
    output.out(
      `loaded ${totals.count} message${totals.count === 1 ? "" : "s"} (${options.format}) ` +
        `from ${options.path} to ${options.subject} (stream ${totals.stream}), ` +
        `last sequence ${totals.lastSequence}`,
    );
    return 0;
  });
}

/**
 * Runs `weir stream <subcommand> ...`.
 * @param args the arguments after `stream`.
 * @param output where to write (default the console).
 * @returns the exit code: 0 on success.
 * @throws {UsageError} for bad usage (exit code 2): an unknown subcommand or
 *   option, a missing or bad argument, `rm` without `--force`.
 * @throws {Error} for a failure (exit code 1), naming what and where: an
 *   unknown stream, a file or line that cannot be loaded, a publish the
 *   server refused, NATS out of reach.
 */
export async function runStreamCommand(
  args: string[],
  output: CommandOutput = CONSOLE,
): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === undefined) throw new UsageError("weir stream needs a subcommand");
  if (subcommand === "--help" || subcommand === "-h") {
    output.out(STREAM_HELP);
    return 0;
  }
  const run = Object.hasOwn(SUBCOMMANDS, subcommand) ? SUBCOMMANDS[subcommand] : undefined;
  if (run === undefined) {
    throw new UsageError(
      `unknown stream subcommand ${JSON.stringify(subcommand)}; the subcommands are: ${
        Object.keys(SUBCOMMANDS).join(", ")
      }`,
    );
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    output.out(streamSubcommandHelp(subcommand)!);
    return 0;
  }
  return await run({ args: rest, output });
}

// The type of the command's row, which this module's API refers to, and the help texts.
export type { Command } from "./_args.ts";
export { STREAM_HELP, streamSubcommandHelp } from "./_stream_help.ts";

/** `weir stream`: the row of `cli.ts`'s dispatch table. */
export const streamCommand: Command = {
  summary: "stream        add | ls | info | rm | publish | load | read JetStream streams\n" +
    "                (see weir stream --help)",
  help: STREAM_HELP,
  run: (args) => runStreamCommand(args),
};
