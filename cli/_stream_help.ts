/**
 * The help texts of `weir stream`: each subcommand's usage and description,
 * and the whole command's help that `weir stream --help` (and, as `weir`
 * answers `--help` for a command, `weir stream <subcommand> --help`) prints.
 *
 * @module
 */

import { EXIT_CODES_HELP, NATS_HELP } from "./_args.ts";

/** The usage line(s) of each subcommand, by name. */
export const USAGES: Readonly<Record<string, string>> = {
  add: `usage: weir stream add NAME --subjects a.b,c.> [--retention limits|workqueue|interest]
                       [--storage file|memory] [--max-age DURATION] [--max-bytes N]
                       [--max-msgs N] [--replicas N] [--discard old|new] --nats URL`,
  ls: `usage: weir stream ls [--json] --nats URL`,
  info: `usage: weir stream info NAME [--json] --nats URL`,
  rm: `usage: weir stream rm NAME --force --nats URL`,
  publish: `usage: weir stream publish SUBJECT [DATA | --file F | --json-lines F] [--count N]
                           [--header K:V]... --nats URL`,
  load: `usage: weir stream load FILE --subject S [--format jsonl|msgpack] [--header K:V]...
                        --nats URL`,
  read: `usage: weir stream read NAME [--committed] [--from SEQ] [--subject F] [--txn-bucket B]
                        [--follow] --nats URL`,
};

/** What each subcommand does, after its usage in its `--help`. */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  add: `Creates JetStream stream NAME storing the given subjects (comma-separated,
wildcards * and > allowed). Defaults are the server's: --retention limits,
--storage file, no --max-age, --max-bytes or --max-msgs limit, --replicas 1,
--discard old. DURATION needs a unit: 90s, 15m, 12h, 7d (the ms package's
grammar). N of --max-bytes is bytes, or a size such as 512mb or 1gb (powers of
1024). If NAME exists with the same configuration, it says so and succeeds; with
another, it fails listing the differences and changes nothing.

Size a stream a Weir job reads or writes so its limits never remove records
before the job (or a read-committed reader) has them.`,
  ls: `Lists the streams: name, subjects, messages, bytes, first and last sequence.
With --json, prints the server's stream info objects (JetStream API
StreamInfo: config, state, created) as one JSON array.`,
  info: `Describes stream NAME: subjects, retention, storage, replicas, discard, limits,
messages, bytes, first and last sequence (with their times), consumers. With
--json, prints the server's stream info object (JetStream API StreamInfo).`,
  rm: `Deletes stream NAME with every message in it. Jobs reading it then fail
without restarts, and the deletion cannot be undone, so it needs --force:
without, it describes the stream and deletes nothing (exit code 2).`,
  publish: `Publishes to SUBJECT (no wildcards; a stream must store it) and waits for the
JetStream acknowledgement of every message:
  DATA             the argument's UTF-8 bytes, as given ('' for an empty payload)
  --file F         the file's bytes, as one message
  --json-lines F   each line of F as one message (as 'weir stream load F')
--count N publishes the payload N times (default 1). --header K:V adds a header
(repeat it for more). Prints the messages stored and the last sequence.
A JetStream source reads a payload with its deserializer (default: JSON of
UTF-8), so publish JSON to a job with the default, e.g. '{"id":1}'.`,
  load: `Publishes each line of the JSON-lines FILE as one message to subject S, in
order, with up to 1000 acknowledgements in flight. Every line is checked first
(UTF-8, one JSON value, at most the server's max_payload): a bad line fails the
load naming FILE:LINE and nothing is published. Blank lines are skipped (and
counted). Prints the messages stored, the stream and the last sequence.

--format jsonl (default): the payload is the line's bytes as given, which
  JetStreamSource's default deserializer (JSON of UTF-8) and 'weir stream read'
  decode into the line's value.
--format msgpack: the payload is the value as plain MessagePack (msgpackr's
  pack); give the source deserializer: (data) => unpack(data) (npm:msgpackr).
Messages stored before a failed publish stay; loading again appends again.`,
  read: `Prints stream NAME's records as JSON lines {"seq":…,"subject":…,"value":…}
(the value parsed as JSON, else a string; records of a Weir-Batch record batch
one by one, with "index"), up to the stream's last sequence at start, or on
with --follow. --committed reads read-committed (only committed transactions
of a JetStreamSink; default: every record). --from SEQ starts at a sequence,
--subject F reads only subject F, --txn-bucket B is the transaction state
bucket (default weir-txn). The same as 'weir read --stream NAME'.`,
};

/** The synopsis of every subcommand, as `weir stream` lists them. */
const SYNOPSIS =
  `  add NAME --subjects a.b,c.>     create a stream [--retention R] [--storage S] [--max-age D]
                                  [--max-bytes N] [--max-msgs N] [--replicas N] [--discard P]
  ls [--json]                     list the streams
  info NAME [--json]              describe a stream: configuration, messages, sequences
  rm NAME --force                 delete a stream and its messages
  publish SUBJECT [DATA]          publish DATA (or --file F, --json-lines F) [--count N]
                                  [--header K:V]
  load FILE --subject S           publish each line of a JSON-lines file [--format jsonl|msgpack]
  read NAME                       print the records as JSON lines [--committed] [--from SEQ]
                                  [--subject F] [--txn-bucket B] [--follow]`;

/**
 * The complete `--help` of one subcommand.
 * @param subcommand `add`, `ls`, `info`, `rm`, `publish`, `load` or `read`.
 * @returns its usage, description, NATS options and exit codes, or
 *   `undefined` for another name.
 */
export function streamSubcommandHelp(subcommand: string): string | undefined {
  if (!Object.hasOwn(USAGES, subcommand)) return undefined;
  return `${USAGES[subcommand]}\n\n${
    DESCRIPTIONS[subcommand]
  }\n\n${NATS_HELP}\n\n${EXIT_CODES_HELP}`;
}

/**
 * The help of `weir stream`: the synopsis, then every subcommand's usage
 * and description (`weir stream <subcommand> --help` prints this too, as
 * `weir` answers `--help` for a command before it runs).
 */
export const STREAM_HELP: string =
  `usage: weir stream <subcommand> [NAME|SUBJECT|FILE] [options] --nats URL

Creates, lists, describes, deletes, fills and reads JetStream streams, with
Deno and a NATS server alone (no nats CLI needed).

subcommands:
${SYNOPSIS}

${Object.keys(USAGES).map((sub) => `${USAGES[sub]}\n\n${DESCRIPTIONS[sub]}`).join("\n\n")}

${NATS_HELP}

${EXIT_CODES_HELP} 'stream rm' without --force exits with 2
and deletes nothing.`;
