/**
 * The `jetstream` table connector: a table over a JetStream stream of JSON
 * messages, read by {@linkcode JetStreamSource} (replayable,
 * read-committed) and written by {@linkcode JetStreamSink} (exactly-once
 * through its transactions). It plays the part of Flink's `kafka`
 * connector, with Flink's option names where they carry over.
 *
 * ```sql
 * CREATE TABLE clicks (`user` VARCHAR, url VARCHAR, ts TIMESTAMP(3))
 *   WITH ('connector' = 'jetstream', 'servers' = 'nats://127.0.0.1:4222',
 *         'stream' = 'clicks', 'subject' = 'clicks.>', 'format' = 'json');
 * ```
 *
 * ## Options
 *
 * | option | role | meaning |
 * |---|---|---|
 * | `servers` | both | NATS URL(s), comma-separated; default `WEIR_NATS_URL` of the process that builds the job |
 * | `stream` | both | the stream (required) |
 * | `subject` | both | source: a filter subject (wildcards allowed; one split per subject); sink: the subject every row is published on (required) |
 * | `format` | both | `json` (required; the only format): one JSON object per record, a property per column (`connectors/_table/json_row.ts`) |
 * | `scan.startup.mode` | source | `earliest-offset` (default), `latest-offset`, `timestamp`, `specific-offset` |
 * | `scan.startup.timestamp-millis` | source | with `timestamp`: the first record's stream time, epoch ms |
 * | `scan.startup.specific-offset` | source | with `specific-offset`: the first stream sequence |
 * | `scan.bounded.mode` | source | `unbounded` (default) or `latest-offset`: stop at the stream's last sequence at the job's first start |
 * | `scan.isolation-level` | source | `read_committed` (default) or `read_uncommitted` (Kafka's `isolation.level`) |
 * | `sink.delivery-guarantee` | sink | `exactly-once` (default, transactions), `at-least-once` or `none` |
 * | `sink.transactional-id-prefix` | sink | Kafka's transactional id prefix (default `<stream>.<sink uid>`) |
 * | `transaction.bucket` | both | the KV bucket of transaction state (default `weir-txn`) |
 *
 * The record timestamp is the message's stream time; a `WATERMARK` on a
 * column of the table sets event time from that column instead (the
 * planner does it).
 *
 * ## Guarantees
 *
 * The source is replayable (stream sequences are checkpointed) and reads
 * only committed transactions. The sink is **append-only**: a query that
 * produces updates is refused at planning, naming the operator that
 * produces them. (JetStream has no keyed compaction a reader could treat as
 * an upsert table, so there is no upsert mode; write a changelog into a
 * database sink instead.) With `exactly-once` and checkpointing, each
 * checkpoint's rows become visible to read-committed readers at once when
 * it completes.
 *
 * A PRIMARY KEY is refused, as Flink's `kafka` connector refuses it.
 *
 * A message that is not a JSON object fitting the columns fails the job
 * once (no restart), naming the stream and sequence
 * (`JetStreamDeserializationError`).
 *
 * @module
 */

import type { NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import { WatermarkStrategy } from "../../runtime/time/watermark.ts";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import {
  checkTableOptions,
  choiceOption,
  integerOption,
  stringOption,
} from "../../runtime/table/connector_options.ts";
import type { Row } from "../../runtime/table/row.ts";
import type { ConnectorTable, TableConnector } from "../../runtime/table/table_connectors.ts";
import { jsonRow, rowJson } from "../_table/json_row.ts";
import { refusePrimaryKey } from "../_table/upsert_sink.ts";
import { JetStreamSink } from "./sink.ts";
import { JetStreamSource, type StartPosition } from "./source.ts";
import type { DeliveryGuarantee } from "../../runtime/api/sink_v2.ts";

const OPTIONS = [
  "servers",
  "stream",
  "subject",
  "format",
  "scan.startup.mode",
  "scan.startup.timestamp-millis",
  "scan.startup.specific-offset",
  "scan.bounded.mode",
  "scan.isolation-level",
  "sink.delivery-guarantee",
  "sink.transactional-id-prefix",
  "transaction.bucket",
];

function connection(table: ConnectorTable): NatsConnectionOptions {
  const servers = table.options.servers ?? Deno.env.get("WEIR_NATS_URL");
  if (servers === undefined || servers.trim() === "") {
    throw new PlanningError(
      `table ${table.name} needs option 'servers' (a NATS URL), or WEIR_NATS_URL set`,
    );
  }
  return { servers, name: `weir-table-${table.name}` };
}

/**
 * Where a `jetstream` table's source starts (its `scan.startup.*` options).
 * @throws {PlanningError} for a bad mode or a missing or bad companion option.
 */
export function startPosition(table: ConnectorTable): StartPosition {
  const mode = choiceOption(
    table,
    "scan.startup.mode",
    ["earliest-offset", "latest-offset", "timestamp", "specific-offset"],
    "earliest-offset",
  );
  const companion = (key: string, wanted: string) => {
    if (table.options[key] !== undefined && mode !== wanted) {
      throw new PlanningError(
        `option '${key}' of table ${table.name} needs 'scan.startup.mode' = '${wanted}': current mode is '${mode}'`,
      );
    }
  };
  companion("scan.startup.timestamp-millis", "timestamp");
  companion("scan.startup.specific-offset", "specific-offset");
  switch (mode) {
    case "earliest-offset":
      return "earliest";
    case "latest-offset":
      return "latest";
    case "timestamp":
      return { time: integerOption(table, "scan.startup.timestamp-millis", { min: 0 }) };
    case "specific-offset":
      return { sequence: integerOption(table, "scan.startup.specific-offset", { min: 1 }) };
  }
}

function source(table: ConnectorTable): JetStreamSource<Row> {
  const columns = table.columns;
  const decoder = new TextDecoder();
  const subject = table.options.subject;
  const bucket = table.options["transaction.bucket"];
  try {
    return new JetStreamSource<Row>({
      connection: connection(table),
      stream: stringOption(table, "stream"),
      ...(subject === undefined ? {} : { filterSubject: subject }),
      startPosition: startPosition(table),
      bounded:
        choiceOption(table, "scan.bounded.mode", ["unbounded", "latest-offset"], "unbounded") ===
          "latest-offset",
      isolation: choiceOption(
          table,
          "scan.isolation-level",
          ["read_committed", "read_uncommitted"],
          "read_committed",
        ) === "read_committed"
        ? "read_committed"
        : "read_uncommitted",
      deserializer: (data) => jsonRow(decoder.decode(data), columns),
      ...(bucket === undefined ? {} : { txnBucket: bucket }),
    });
  } catch (error) {
    if (error instanceof PlanningError) throw error;
    throw new PlanningError(`table ${table.name}: ${(error as Error).message}`, { cause: error });
  }
}

function sink(table: ConnectorTable): JetStreamSink<Row> {
  const columns = table.columns;
  const encoder = new TextEncoder();
  const prefix = table.options["sink.transactional-id-prefix"];
  const bucket = table.options["transaction.bucket"];
  const subject = stringOption(table, "subject");
  if (/[*>]/.test(subject)) {
    throw new PlanningError(
      `table ${table.name} is written on subject '${subject}': a sink's subject cannot hold wildcards`,
    );
  }
  try {
    return new JetStreamSink<Row>({
      connection: connection(table),
      stream: stringOption(table, "stream"),
      subject,
      serializer: (row) => encoder.encode(rowJson(row, columns)),
      deliveryGuarantee: choiceOption<DeliveryGuarantee>(
        table,
        "sink.delivery-guarantee",
        ["exactly-once", "at-least-once", "none"],
        "exactly-once",
      ),
      ...(prefix === undefined ? {} : { transactionalIdPrefix: prefix }),
      ...(bucket === undefined ? {} : { txnBucket: bucket }),
    });
  } catch (error) {
    if (error instanceof PlanningError) throw error;
    throw new PlanningError(`table ${table.name}: ${(error as Error).message}`, { cause: error });
  }
}

/** The `jetstream` table connector (see the module docs). */
export const jetstreamTableConnector: TableConnector = {
  identifier: "jetstream",
  validate(table) {
    checkTableOptions(table, OPTIONS);
    refusePrimaryKey(table);
    choiceOption(table, "format", ["json"]);
    connection(table);
    source(table);
    choiceOption(
      table,
      "sink.delivery-guarantee",
      ["exactly-once", "at-least-once", "none"],
      "exactly-once",
    );
  },
  source: (table, env) =>
    env.fromSource(
      source(table),
      WatermarkStrategy.noWatermarks<Row>(),
      `jetstream: ${table.name}`,
    ),
  sink: (table) => ({ sink: sink(table), accepts: "append" }),
};
