/**
 * Every options object a user writes is checked at run time (`deno run` does
 * not type-check): an unknown key, or a value of the wrong kind, fails at
 * construction with a message naming the option, where it went, and the
 * known ones (`runtime/api/options_check.ts`). Nothing here connects: every
 * constructor checks its options before any I/O.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import "../runtime/cluster/default_executor.ts";
import { JetStreamSink, JetStreamSource } from "../connectors/jetstream/mod.ts";
import { FileSink, lineEncoder } from "../connectors/file/mod.ts";
import { WriteAheadSink } from "../connectors/wal/mod.ts";
import { mariaDbUpsertSink, mariaDbXaSink } from "../connectors/mariadb/mod.ts";
import { PostgresPreparedSink, PostgresUpsertSink } from "../connectors/postgres/mod.ts";
import { NatsSink, NatsSource } from "../connectors/nats/mod.ts";

const NATS = { servers: "127.0.0.1:4222" };
const MARIADB = { host: "127.0.0.1", user: "root", database: "test" };
const PG_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** Builds something from options with one extra entry added. */
interface Case {
  readonly where: string;
  /** A known option. */
  readonly known: string;
  readonly build: (extra: Record<string, unknown>) => unknown;
}

const CASES: readonly Case[] = [
  {
    where: "enableCheckpointing",
    known: "timeoutMs",
    build: (extra) =>
      StreamExecutionEnvironment.getExecutionEnvironment().enableCheckpointing(500, extra),
  },
  {
    where: "restart strategy fixed-delay",
    known: "attempts",
    build: (extra) =>
      StreamExecutionEnvironment.getExecutionEnvironment().setRestartStrategy({
        ...RestartStrategies.fixedDelay(3, 100),
        ...extra,
      }),
  },
  {
    where: "RestartStrategies.exponentialDelay",
    known: "initialBackoffMs",
    build: (extra) => RestartStrategies.exponentialDelay(extra),
  },
  {
    where: "socketTextStream",
    known: "maxRetry",
    build: (extra) =>
      StreamExecutionEnvironment.getExecutionEnvironment().socketTextStream(
        "localhost",
        7777,
        extra,
      ),
  },
  {
    where: "JetStreamSource",
    known: "bounded",
    build: (extra) => new JetStreamSource({ connection: NATS, stream: "s", ...extra }),
  },
  {
    where: "JetStreamSink",
    known: "lingerMs",
    build: (extra) =>
      new JetStreamSink({ connection: NATS, stream: "s", subject: "s.a", ...extra }),
  },
  {
    where: "FileSink",
    known: "checkIntervalMs",
    build: (extra) => new FileSink({ path: "/tmp/out", encoder: lineEncoder(), ...extra }),
  },
  {
    where: "WriteAheadSink",
    known: "maxValuesPerCommittable",
    build: (extra) =>
      new WriteAheadSink<number>({
        target: {
          atomicity: "atomic",
          open: () => Promise.reject(new Error("never opened")),
        },
        ...extra,
      }),
  },
  {
    where: "mariaDbXaSink",
    known: "batchSize",
    build: (extra) =>
      mariaDbXaSink({
        connection: MARIADB,
        sql: "INSERT INTO t (a) VALUES (?)",
        parameters: (n: number) => [n],
        ...extra,
      }),
  },
  {
    where: "mariaDbXaSink: connection",
    known: "database",
    build: (extra) =>
      mariaDbXaSink({
        connection: { ...MARIADB, ...extra },
        sql: "INSERT INTO t (a) VALUES (?)",
        parameters: (n: number) => [n],
      }),
  },
  {
    where: "mariaDbUpsertSink",
    known: "batchIntervalMs",
    build: (extra) =>
      mariaDbUpsertSink({
        connection: MARIADB,
        table: "t",
        columns: ["k", "v"],
        keyColumns: ["k"],
        values: (n: number) => [n, n],
        ...extra,
      }),
  },
  {
    where: "PostgresPreparedSink",
    known: "gidPrefix",
    build: (extra) =>
      new PostgresPreparedSink({
        url: PG_URL,
        table: "t",
        columns: ["a"],
        values: (n: number) => [n],
        gidPrefix: "weir-test",
        ...extra,
      }),
  },
  {
    where: "PostgresUpsertSink",
    known: "keyColumns",
    build: (extra) =>
      new PostgresUpsertSink({
        url: PG_URL,
        table: "t",
        columns: ["k", "v"],
        keyColumns: ["k"],
        values: (n: number) => [n, n],
        ...extra,
      }),
  },
  {
    where: "NatsSource",
    known: "queueGroup",
    build: (extra) => new NatsSource({ connection: NATS, subject: "s", ...extra }),
  },
  {
    where: "NatsSink",
    known: "flushEveryRecords",
    build: (extra) => new NatsSink({ connection: NATS, subject: "s", ...extra }),
  },
];

Deno.test("each options object refuses an unknown option, naming it, where it went, and the known ones", () => {
  for (const c of CASES) {
    c.build({}); // the base options are valid
    assert.throws(() => c.build({ intervalMs: 5 }), (e: unknown) => {
      assert.ok(e instanceof RangeError, `${c.where}: ${e}`);
      assert.ok(
        e.message.startsWith(`${c.where} options: unknown option 'intervalMs' (known: `),
        `${c.where}: ${e.message}`,
      );
      assert.match(e.message, new RegExp(`\\b${c.known}\\b`), c.where);
      return true;
    }, c.where);
  }
});

Deno.test("a boolean option given a string is refused with its current value", () => {
  assert.throws(
    () =>
      new JetStreamSource({ connection: NATS, stream: "s", bounded: "yes" as unknown as boolean }),
    {
      name: "TypeError",
      message: `JetStreamSource options: 'bounded' must be a boolean: current value is "yes"`,
    },
  );
  assert.throws(
    () =>
      StreamExecutionEnvironment.getExecutionEnvironment().enableCheckpointing(500, {
        retainOnFinish: "true" as unknown as boolean,
      }),
    {
      name: "TypeError",
      message:
        `enableCheckpointing options: 'retainOnFinish' must be a boolean: current value is "true"`,
    },
  );
  assert.throws(
    () =>
      new FileSink({
        path: "/tmp/out",
        encoder: lineEncoder(),
        checkIntervalMs: "60000" as unknown as number,
      }),
    {
      name: "TypeError",
      message: `FileSink options: 'checkIntervalMs' must be a number: current value is "60000"`,
    },
  );
});
