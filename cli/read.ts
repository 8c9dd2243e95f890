/**
 * `weir read`: prints a JetStream stream's records as JSON lines, optionally
 * read-committed (see `connectors/jetstream/reader.ts`).
 *
 * @module
 */

import { runReadCommand } from "../connectors/jetstream/reader.ts";
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
    const { values, positionals } = parseCommandArgs("read", args, {
      ...NATS_OPTIONS,
      stream: { type: "string" },
      from: { type: "string" },
      subject: { type: "string" },
      "txn-bucket": { type: "string" },
      committed: { type: "boolean" },
      follow: { type: "boolean" },
    });
    atMostPositionals("read", positionals, 0, "no positional arguments");
    const nats = requireNats("read", args);
    if (values.stream === undefined) throw new UsageError("weir read needs --stream S");
    await runReadCommand({
      nats,
      stream: values.stream,
      committed: values.committed ?? false,
      follow: values.follow ?? false,
      ...(values.from === undefined ? {} : { from: positiveInt(values.from, "--from") }),
      ...(values.subject === undefined ? {} : { filterSubject: values.subject }),
      ...(values["txn-bucket"] === undefined ? {} : { txnBucket: values["txn-bucket"] }),
    }, (line) => console.log(line));
    return 0;
  },
};
